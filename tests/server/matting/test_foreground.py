"""Foreground colour estimation on composites with a known answer, against pymatting, tiled against whole."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from imageforge.server.matting import estimate_foreground
from imageforge.server.matting.foreground import LARGE_SIZE
from tests.kit.hair_composite import fringe_error, hair_composite

REFERENCE = Path(__file__).with_name("pymatting_reference.npz")
LARGE_REFERENCE = Path(__file__).with_name("pymatting_reference_large.npz")
GREEN_WALL_GONE = (0.9, 0.9, 0.9)  # the cut-out placed on a light grey backdrop


def test_the_estimate_removes_the_old_backgrounds_fringe():
    composite = hair_composite(160, 120, seed=1)
    before = fringe_error(composite.image, composite, GREEN_WALL_GONE)
    colour = composite.image.copy()
    estimate = estimate_foreground(colour, composite.alpha)
    after = fringe_error(colour, composite, GREEN_WALL_GONE)
    assert estimate.soft_pixels == int(composite.soft.sum()) > 1000
    assert before > 0.03  # the green wall shows through every strand
    assert after < 0.2 * before
    # The estimate is the object's colour, not merely less green: close to F where the object shows at all.
    visible = composite.soft & (composite.alpha > 0.3)
    assert (
        np.abs(colour - composite.foreground)[visible].mean()
        < 0.02
        < np.abs(composite.image - composite.foreground)[visible].mean()
    )


def test_agrees_with_pymatting_inside_the_soft_band():
    """pymatting 1.1.16's estimate_foreground_ml with its defaults, recorded by bench/parity/pymatting_reference.py."""
    with np.load(REFERENCE) as reference:
        image, alpha, expected = reference["image"], reference["alpha"], reference["foreground"]
    colour = image.copy()
    estimate_foreground(colour, alpha)
    soft = (alpha > 0) & (alpha < 1)
    difference = np.abs(colour - expected)[soft]
    assert difference.mean() <= 0.01
    assert np.abs(image - expected)[soft].mean() > 0.1  # the check can fail: the raw colour is far from it


def test_agrees_with_pymatting_where_levels_are_tiled_and_swept_once():
    """1024×768, recorded by bench/parity/pymatting_reference.py: the top level goes tile by tile and the levels
    above LARGE_SIZE run one sweep, so a cut in iterations or levels that costs quality beyond the bound fails."""
    with np.load(LARGE_REFERENCE) as reference:
        size = {name: int(reference[name]) for name in ("width", "height", "strands", "seed")}
        expected = reference["foreground_soft"].astype(np.float32) / 65535
        soft_count, alpha_sum = int(reference["soft_count"]), float(reference["alpha_sum"])
    composite = hair_composite(size.pop("width"), size.pop("height"), **size)
    assert (int(composite.soft.sum()), composite.alpha.sum(dtype=np.float64)) == (soft_count, pytest.approx(alpha_sum))
    colour = composite.image.copy()
    estimate = estimate_foreground(colour, composite.alpha)
    assert estimate.tiles > 0 and max(composite.alpha.shape) > LARGE_SIZE
    difference = np.abs(colour[composite.soft] - expected)
    assert difference.mean() <= 0.01
    assert np.abs(composite.image[composite.soft] - expected).mean() > 0.05  # the raw colour is far from it


def test_only_soft_pixels_change_and_keep_full_precision():
    composite = hair_composite(96, 64, seed=2)
    colour = composite.image.copy()
    colour[composite.alpha == 1] += np.float32(1 / 65535)  # 16-bit steps in the opaque object: must survive
    kept = colour.copy()
    estimate_foreground(colour, composite.alpha)
    hard = ~composite.soft
    np.testing.assert_array_equal(colour[hard], kept[hard])
    assert not np.array_equal(colour[composite.soft], kept[composite.soft])
    assert colour.dtype == np.float32 and colour.min() >= 0.0 and colour.max() <= 1.0 + 1e-6


@pytest.mark.parametrize("tile", [48, 37])
def test_tiles_give_exactly_the_whole_level_result_in_place(tile):
    """Above WHOLE_LEVEL_PIXELS the levels go tile by tile, writing into the colour they read from; an odd tile
    edge starts tiles on odd rows and columns, where the checkerboard's first colour is the other quarter."""
    composite = hair_composite(301, 199, seed=3)
    whole = composite.image.copy()
    estimate_foreground(whole, composite.alpha)
    tiled = composite.image.copy()
    estimate = estimate_foreground(tiled, composite.alpha, whole_level_pixels=64 * 64, tile=tile)
    assert estimate.tiles > 4
    np.testing.assert_array_equal(tiled, whole)


def test_writes_into_out_and_keeps_the_alpha_channel():
    composite = hair_composite(64, 48, seed=4)
    rgba = np.concatenate([composite.image, composite.alpha[..., None]], axis=2)
    out = rgba.copy()
    estimate_foreground(rgba, composite.alpha, out=out)
    np.testing.assert_array_equal(rgba[..., :3], composite.image)  # the source is not touched
    np.testing.assert_array_equal(out[..., 3], composite.alpha)
    assert not np.array_equal(out[..., :3], composite.image)


@pytest.mark.parametrize("value", [0.0, 1.0])
def test_a_matte_without_soft_pixels_is_skipped_not_failed(value):
    colour = np.random.default_rng(5).random((20, 30, 3), dtype=np.float32)
    alpha = np.full((20, 30), value, np.float32)
    kept = colour.copy()
    estimate = estimate_foreground(colour, alpha)
    assert estimate.skipped and estimate.soft_pixels == 0
    assert "no soft pixel" in estimate.describe()
    np.testing.assert_array_equal(colour, kept)


def test_mismatched_shapes_are_refused():
    with pytest.raises(ValueError, match="does not match"):
        estimate_foreground(np.zeros((10, 10, 3), np.float32), np.zeros((10, 11), np.float32))
