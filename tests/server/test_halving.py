"""Band-streamed 2× Lanczos downscale against Pillow resizing the whole image."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image as PILImage

from imageforge.server.halving import BandHalver


def pillow_half(image: np.ndarray) -> np.ndarray:
    height, width = image.shape[:2]
    planes = [
        PILImage.fromarray(image[..., c]).resize((width // 2, height // 2), PILImage.Resampling.LANCZOS)
        for c in range(image.shape[2])
    ]
    return np.stack([np.asarray(plane) for plane in planes], axis=2)


@pytest.mark.parametrize("cuts", [[], [1], [7, 8, 30], list(range(1, 40))])
def test_any_banding_equals_pillow_on_the_whole_image(cuts):
    image = np.random.default_rng(len(cuts)).random((40, 62, 3), dtype=np.float32)
    out = np.full((20, 31, 3), np.nan, dtype=np.float32)
    written = []

    def sink(top: int, rows: np.ndarray) -> None:
        written.append((top, len(rows)))
        out[top : top + len(rows)] = rows

    halver = BandHalver(40, 62, sink)
    for top, bottom in zip([0, *cuts], [*cuts, 40], strict=True):
        halver.push(top, image[top:bottom])
    assert halver.finished
    assert sum(count for _, count in written) == 20 and [top for top, _ in written] == sorted({t for t, _ in written})
    np.testing.assert_allclose(out, pillow_half(image), atol=2e-6)


def test_rows_must_arrive_in_order_and_sizes_be_even():
    halver = BandHalver(8, 8, lambda top, rows: None)
    with pytest.raises(ValueError, match="in order"):
        halver.push(2, np.zeros((2, 8, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="even"):
        BandHalver(9, 8, lambda top, rows: None)
