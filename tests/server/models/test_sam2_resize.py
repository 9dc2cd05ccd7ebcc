"""The mask upsampling of a click: `positive_mask` computes only where the mask can be true, and must agree with
the whole-image bilinear upsampling thresholded at 0 bit for bit, whatever the mask's shape and the image's size."""

from __future__ import annotations

import numpy as np
import pytest

from imageforge.server.models.sam2_resize import bilinear, positive_mask

SIZES = [(1920, 1080), (1080, 1920), (640, 400), (256, 256), (100, 37), (1, 1), (3, 700)]


def disc(centre: tuple[float, float], radius: float, side: int = 256) -> np.ndarray:
    ys, xs = np.mgrid[0:side, 0:side] + 0.5
    return (radius - np.hypot(xs - centre[0], ys - centre[1])).astype(np.float32)  # positive inside


LOGITS = {
    "random": np.random.default_rng(3).standard_normal((256, 256)).astype(np.float32),  # ragged, everywhere
    "disc": disc((90.3, 170.8), 30.0),
    "corner cell": np.where(np.arange(256)[:, None] + np.arange(256) == 0, 5.0, -5.0).astype(np.float32),
    "far corner cell": np.where((np.arange(256)[:, None] == 255) & (np.arange(256) == 255), 1.0, -1.0).astype(
        np.float32
    ),
    "thin line": np.where(np.arange(256)[None, :] == 128, 0.5, -20.0).repeat(256, axis=0).astype(np.float32),
    "nothing": -np.ones((256, 256), np.float32),
    "zeros": np.zeros((256, 256), np.float32),  # 0 is not inside
}


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("name", list(LOGITS))
def test_the_bounded_mask_is_the_whole_upsampling_thresholded(name, size):
    logits = LOGITS[name]
    expected = bilinear(logits, size) > 0.0
    got = positive_mask(logits, size)
    assert got.shape == (size[1], size[0]) and got.dtype == bool
    np.testing.assert_array_equal(got, expected)


def test_a_small_object_computes_a_small_part():
    """The disc (radius 30) spans 61 of the 256 cells each way: the rectangle computed at 1080p is 5.7 % of it."""
    from imageforge.server.models import sam2_resize

    logits = LOGITS["disc"]
    rows = sam2_resize._reached(sam2_resize._linear_taps(256, 1080), *np.nonzero((logits > 0).any(axis=1))[0][[0, -1]])
    columns = sam2_resize._reached(
        sam2_resize._linear_taps(256, 1920), *np.nonzero((logits > 0).any(axis=0))[0][[0, -1]]
    )
    assert rows is not None and columns is not None
    area = (rows.stop - rows.start) * (columns.stop - columns.start)
    assert area < 0.06 * 1920 * 1080
    assert positive_mask(logits, (1920, 1080)).sum() == (bilinear(logits, (1920, 1080)) > 0).sum() > 0
