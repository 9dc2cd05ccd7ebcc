"""MoGe-2 post-processing recovers the kit plane's known focal, shift, intrinsics and metric depth."""

from __future__ import annotations

import numpy as np
import pytest

from imageforge.contract import InputError
from imageforge.server.geometry.moge import geometry_from_moge, num_tokens, recover_focal_shift
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
    np.testing.assert_allclose(frame.normal[0, 0], (0, 0, -1))


def test_few_valid_pixels_still_work_and_none_is_a_clear_error():
    ref = moge2_reference(1, 64, 64)
    few = np.zeros((64, 64), bool)
    few[30:35, 30:35] = True  # 25 pixels, between the subsample's grid lines or not
    assert recover_focal_shift(ref["points"][0], few)[0] == pytest.approx(1.2, rel=1e-6)
    with pytest.raises(InputError, match="almost no usable depth"):
        geometry_from_moge(ref["points"][0], ref["normal"][0], np.zeros((64, 64)), 2.5)


def test_token_budget_per_level():
    assert [num_tokens(level) for level in (0, 9, -3, 42)] == [1200, 3600, 1200, 3600]
    assert num_tokens(4) == 2266
