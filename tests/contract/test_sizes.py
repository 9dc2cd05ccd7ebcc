"""The long-edge rule the server applies and the add-on's labels show."""

import pytest

from imageforge.contract.sizes import fit_long_edge_size
from imageforge.server.media import fit_long_edge_size as server_rule


@pytest.mark.parametrize(
    ("size", "limit", "expected"),
    [((1000, 500), 2048, (1000, 500)), ((4096, 2048), 2048, (2048, 1024)), ((3000, 1000), 1024, (1024, 341)),
     ((1, 20000), 8, (1, 8)), ((20000, 1), 8, (8, 1))],
)  # fmt: skip
def test_long_edge_is_limited_keeping_the_aspect_ratio(size, limit, expected):
    assert fit_long_edge_size(size, limit) == expected


def test_the_server_uses_the_contract_rule():
    assert server_rule is fit_long_edge_size
    with pytest.raises(ValueError):
        fit_long_edge_size((10, 10), 0)
