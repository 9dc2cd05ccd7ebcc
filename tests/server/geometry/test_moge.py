"""MoGe-2 post-processing recovers the kit plane's known focal, shift, intrinsics and metric depth."""

from __future__ import annotations

import numpy as np
import pytest

from imageforge.contract import InputError
from imageforge.server.geometry.moge import geometry_from_moge, num_tokens, recover_focal_shift, sample_indices
from tests.kit.onnx_models import moge2_reference


@pytest.mark.parametrize(("height", "width"), [(48, 64), (64, 48), (37, 101)])
def test_recovers_known_plane(height, width):
    ref = moge2_reference(1, height, width, focal=1.3, shift=0.7, plane=(3.0, 0.5), metric_scale=2.0)
    frame = geometry_from_moge(ref["points"][0], ref["normal"][0], ref["mask"][0], ref["metric_scale"][0])
    expected = ref["intrinsics"]
    assert frame.intrinsics.fx == pytest.approx(expected[0, 0], rel=1e-6)
    assert frame.intrinsics.fy == pytest.approx(expected[1, 1], rel=1e-6)
    np.testing.assert_allclose(frame.depth, ref["depth"][0], rtol=1e-5)
    np.testing.assert_allclose(frame.points, ref["metric_points"][0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(frame.normal, axis=-1), 1.0, atol=1e-6)
    assert frame.valid.all() and frame.size == (width, height)
    pixels = frame.intrinsics.in_pixels(width, height)
    assert pixels["fx"] == pytest.approx(pixels["fy"], rel=1e-6)  # square pixels
    assert frame.reference_depth() == pytest.approx(float(np.median(ref["depth"][0])), rel=1e-6)


def test_masked_border_and_noise_are_tolerated():
    ref = moge2_reference(1, 60, 80, mask_border=10)
    rng = np.random.default_rng(0)
    noisy = ref["points"][0] + rng.normal(0, 1e-4, ref["points"][0].shape)
    focal, shift = recover_focal_shift(noisy, ref["mask"][0] > 0.5)
    assert focal == pytest.approx(1.2, rel=2e-3) and shift == pytest.approx(0.5, abs=5e-3)
    frame = geometry_from_moge(ref["points"][0], ref["normal"][0], ref["mask"][0], 2.5)
    assert not frame.valid[:10].any() and frame.valid[10:50, 10:70].all()
    assert (frame.depth[~frame.valid] == 0).all()
    np.testing.assert_allclose(frame.normal[~frame.valid], 0.0)  # masked: no direction, as the official infer


def test_few_valid_pixels_still_work_and_none_is_a_clear_error():
    ref = moge2_reference(1, 64, 64)
    few = np.zeros((64, 64), bool)
    few[30:35, 30:35] = True  # 25 pixels, all on the grid of a 64 px map
    assert recover_focal_shift(ref["points"][0], few)[0] == pytest.approx(1.2, rel=1e-6)
    with pytest.raises(InputError, match="no usable depth"):
        geometry_from_moge(ref["points"][0], ref["normal"][0], np.zeros((64, 64)), 2.5)


@pytest.mark.parametrize(("height", "width"), [(100, 150), (37, 101), (720, 1280)])
def test_samples_where_the_official_nearest_resize_to_64_does(height, width):
    """Rows floor(i·H/64), columns floor(j·W/64); points off that grid must not influence the solve."""
    assert list(sample_indices(100)[:6]) == [0, 1, 3, 4, 6, 7]
    assert list(sample_indices(37)[:4]) == [0, 0, 1, 1]  # a smaller map repeats rows, as nearest upsampling does
    ref = moge2_reference(1, height, width, focal=1.3, shift=0.7, plane=(3.0, 0.5))
    points = ref["points"][0].copy()
    off_grid = np.ones((height, width), bool)
    off_grid[np.ix_(sample_indices(height), sample_indices(width))] = False
    points[off_grid, 2] += 5.0  # garbage everywhere the official pipeline does not look
    focal, shift = recover_focal_shift(points, np.ones((height, width), bool))
    assert (focal, shift) == (pytest.approx(1.3, rel=1e-7), pytest.approx(0.7, rel=1e-7))


def test_under_two_valid_samples_fall_back_to_focal_one_and_no_shift():
    """The official recover_focal_shift returns focal 1, shift 0 below two valid grid samples, not an error."""
    ref = moge2_reference(1, 100, 128)
    mask = np.zeros((100, 128), np.float32)
    mask[1:3, 1] = 1.0  # off the grid: the grid's columns are the even ones for a 128 px width
    mask[1, 2] = 1.0  # row 1, column 2: on the grid, the only valid sample
    assert recover_focal_shift(ref["points"][0], mask > 0.5) == (1.0, 0.0)
    frame = geometry_from_moge(ref["points"][0], ref["normal"][0], mask, 2.5)
    assert frame.intrinsics.fy == pytest.approx(0.5 * np.hypot(1, 128 / 100))  # focal 1 in half-diagonal units
    assert frame.valid.sum() == 3


def test_token_budget_per_level():
    assert [num_tokens(level) for level in (0, 9, -3, 42)] == [1200, 3600, 1200, 3600]
    assert num_tokens(4) == 2266
