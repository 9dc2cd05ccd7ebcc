"""The long-edge rule the server applies and the add-on's labels show."""

import pytest

from imageforge.contract.sizes import fit_long_edge_size, geometry_size_problem
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


def test_the_smallest_still_for_depth_is_two_by_two_pixels_as_analysed():
    assert geometry_size_problem((2, 2), 2048) is None
    assert geometry_size_problem((2, 2), 2) is None
    assert geometry_size_problem((1, 2), 2048).startswith("The image is 1×2 pixels;")
    assert geometry_size_problem((3000, 2), 1024) == (
        "Maximum AI Input Size 1024 reduces this 3000×2 image to 1024×1 pixels; depth, normals and the camera need "
        "at least 2×2, so raise it."
    )
