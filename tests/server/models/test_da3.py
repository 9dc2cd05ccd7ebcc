"""The Depth Anything 3 adapter on real CPU sessions of the kit models (depth = 3 + channel mean; known cameras)."""

from __future__ import annotations

import numpy as np
import pytest

from imageforge.contract import InputError, ModelUnavailableError
from imageforge.contract.catalog import Family
from imageforge.server.models.da3 import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    DepthAnything3Adapter,
    ViewPlacement,
    upper_bound_size,
)
from tests.kit.onnx_models import build_da3, build_moge2

from .conftest import kit_entry

COLOURS = np.array([[0.2, 0.4, 0.6], [0.9, 0.1, 0.3], [0.5, 0.5, 0.5]], np.float32)


def da3(make_adapter, key: str, **options) -> DepthAnything3Adapter:
    build = options.pop("build", {})
    adapter = make_adapter(kit_entry(key, Family("multiview"), "da3", **options), lambda path: build_da3(path, **build))
    assert isinstance(adapter, DepthAnything3Adapter)
    return adapter


def frames(width: int = 64, height: int = 48) -> list[np.ndarray]:
    return [np.broadcast_to(colour, (height, width, 3)).astype(np.float32) for colour in COLOURS]


def expected_depth(colour: np.ndarray, *, imagenet: bool = True) -> float:
    values = (colour - IMAGENET_MEAN) / IMAGENET_STD if imagenet else colour
    return 3.0 + float(values.mean())


def test_a_fixed_square_export_letterboxes_and_converts_back_to_source_pixels(make_adapter):
    adapter = da3(make_adapter, "KIT_DA3", attention_heads=8, build={"size": 56})
    assert (adapter.has_cameras, adapter.dynamic, adapter.size, adapter.heads) == (True, False, 56, 8)
    tensors, placements = zip(*(adapter.place_view(rgb) for rgb in frames()), strict=True)
    assert placements[0].box == (0, 7, 56, 42)  # 64×48 scaled by 56/64 and centred vertically
    result = adapter.infer(np.stack(tensors), last_run=True)
    assert result.depth.shape == (3, 56, 56) and adapter.runs == 1
    for index, colour in enumerate(COLOURS):
        np.testing.assert_allclose(placements[index].crop(result.depth[index]), expected_depth(colour), atol=1e-5)
        np.testing.assert_allclose(result.depth[index, :7], 3.0, atol=1e-6)  # padding is the mean colour
        back = placements[index].crop_to_source(result.depth[index])
        assert back.shape == (48, 64)
        np.testing.assert_allclose(back, expected_depth(colour), atol=1e-4)
    np.testing.assert_allclose(result.confidence, 1.0)
    np.testing.assert_allclose(result.extrinsics[:, :, 3], [[0, 0, 0], [0.1, 0, 0], [0.2, 0, 0]], atol=1e-6)
    np.testing.assert_allclose(result.extrinsics[:, :, :3], np.broadcast_to(np.eye(3), (3, 3, 3)), atol=1e-6)
    # Kit intrinsics are [[S, 0, S/2], [0, S, S/2]] in the 56 px square: 64 px focal, centred, in the frame.
    source = placements[0].intrinsics_to_source(result.intrinsics[0])
    assert source == pytest.approx({"fx": 64.0, "fy": 64.0, "cx": 32.0, "cy": 24.0})
    assert adapter.attention(4).bytes == 8 * (4 * 16) ** 2 * 4


def test_portrait_frames_are_centred_horizontally():
    placement = ViewPlacement.letterbox((48, 64), (56, 56))
    assert placement.box == (7, 0, 42, 56)
    square = placement.place(np.ones((64, 48, 3), np.float32))
    assert square[:, :7].max() == 0 and square[:, 7:49].min() == pytest.approx(1.0, abs=1e-3)
    intrinsics = placement.intrinsics_to_source(np.array([[56.0, 0, 28], [0, 56, 28], [0, 0, 1]]))
    assert intrinsics == pytest.approx({"fx": 64.0, "fy": 64.0, "cx": 24.0, "cy": 32.0})


def test_normalisation_is_a_catalog_option(make_adapter):
    adapter = da3(make_adapter, "KIT_DA3_PLAIN", normalization="none", build={"size": 56})
    tensor, placement = adapter.place_view(frames()[1])
    result = adapter.infer(tensor[None], last_run=True)
    np.testing.assert_allclose(placement.crop(result.depth[0]), expected_depth(COLOURS[1], imagenet=False), atol=1e-5)


@pytest.mark.parametrize(("size", "options", "expected_size"), [(56, {}, 56), (None, {"image_size": 28}, 28)])
def test_depth_only_exports_run_view_by_view(make_adapter, size, options, expected_size):
    adapter = da3(make_adapter, f"KIT_DA3_DEPTH_{expected_size}", build={"size": size, "cameras": False}, **options)
    assert (adapter.has_cameras, adapter.size) == (False, expected_size)
    tensors, placements = zip(*(adapter.place_view(rgb) for rgb in frames()[:2]), strict=True)
    result = adapter.infer(np.stack(tensors), last_run=True)
    assert adapter.runs == 2 and result.extrinsics is None and result.intrinsics is None
    assert result.depth.shape == (2, expected_size, expected_size)
    for index in range(2):
        np.testing.assert_allclose(
            placements[index].crop(result.depth[index]), expected_depth(COLOURS[index]), atol=1e-5
        )
    assert adapter.attention(10).views == 1  # one view per run: attention never spans views


def test_a_model_that_is_not_da3_is_refused(make_adapter):
    with pytest.raises(ModelUnavailableError, match="does not look like a Depth Anything 3 export"):
        make_adapter(kit_entry("NOT_DA3", Family("multiview"), "da3"), lambda path: build_moge2(path))


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ((1920, 1080), (504, 280)),  # 283.5 → round 284 (half to even: 283.5 → 284) → nearest multiple 280
        ((1280, 720), (504, 280)),
        ((720, 1280), (280, 504)),
        ((640, 480), (504, 378)),
        ((500, 500), (504, 504)),  # enlarged, as the official resize does
        ((4000, 100), (504, 14)),  # 12.6 → 13 → 14: never fewer than one patch
    ],
)
def test_upper_bound_size_is_the_official_rounding(source, expected):
    assert upper_bound_size(source, 504) == expected


def test_a_dynamic_export_gets_the_official_aspect_keeping_resize_without_padding(make_adapter):
    """Depth Anything 3's upper_bound_resize: longest side 504 (here 56), sides multiples of 14, no letterbox."""
    adapter = da3(make_adapter, "KIT_DA3_DYNAMIC", build={"size": None}, image_size=56)
    assert (adapter.has_cameras, adapter.dynamic, adapter.size) == (True, True, 56)
    tensors, placements = zip(*(adapter.place_view(rgb) for rgb in frames(64, 36)), strict=True)
    assert placements[0].canvas == (56, 28) and placements[0].box == (0, 0, 56, 28)  # 31.5 → 32 → 28, no padding
    assert tensors[0].shape == (3, 28, 56)
    result = adapter.infer(np.stack(tensors), last_run=True)
    assert result.depth.shape == (3, 28, 56)
    for index, colour in enumerate(COLOURS):
        np.testing.assert_allclose(result.depth[index], expected_depth(colour), atol=1e-5)  # no padding anywhere
        assert placements[index].crop_to_source(result.depth[index]).shape == (36, 64)
    # Kit intrinsics are [[W, 0, W/2], [0, W, H/2]] on the 56 × 28 canvas: per-axis scales back to 64 × 36.
    source = placements[0].intrinsics_to_source(result.intrinsics[0])
    assert source == pytest.approx({"fx": 64.0, "fy": 56 * 36 / 28, "cx": 32.0, "cy": 18.0})


def test_a_per_aspect_export_takes_its_own_aspect_officially_and_letterboxes_others(make_adapter):
    adapter = da3(make_adapter, "KIT_DA3_WIDE", build={"size": (28, 56)})
    assert (adapter.dynamic, adapter.canvas, adapter.size) == (False, (56, 28), 56)
    wide = adapter.placement((64, 36))  # official size at longest side 56 is 56 × 28: the export's own
    assert (wide.canvas, wide.box) == ((56, 28), (0, 0, 56, 28))
    other = adapter.placement((64, 48))  # official size 56 × 42 does not fit: letterboxed into 56 × 28
    assert (other.canvas, other.box) == ((56, 28), (9, 0, 37, 28))
    tensor, placement = adapter.place_view(frames(64, 48)[0])
    result = adapter.infer(np.stack([tensor] * 3), last_run=True)
    assert result.depth.shape == (3, 28, 56)
    np.testing.assert_allclose(placement.crop(result.depth[0]), expected_depth(COLOURS[0]), atol=1e-5)
    np.testing.assert_allclose(result.depth[0][:, :9], 3.0, atol=1e-6)  # padding: the mean colour


def test_an_ungated_camera_export_refuses_two_views_and_a_gated_one_runs_them(make_adapter):
    ungated = da3(make_adapter, "KIT_DA3_UNGATED", build={"size": 56, "export_revision": None})
    assert (ungated.revision, ungated.min_views) == (0, 3)
    tensors = np.stack([ungated.place_view(rgb)[0] for rgb in frames()[:2]])
    with pytest.raises(InputError, match="reorders 2 views where Depth Anything 3 does not"):
        ungated.infer(tensors, last_run=True)
    assert ungated.runs == 0
    gated = da3(make_adapter, "KIT_DA3_GATED", build={"size": 56})
    assert (gated.revision, gated.min_views) == (2, 1)
    assert gated.infer(tensors, last_run=True).extrinsics.shape == (2, 3, 4)


def test_only_a_letterbox_is_warned_of(make_adapter):
    fixed = da3(make_adapter, "KIT_DA3_FIXED", build={"size": 56})
    assert fixed.letterbox_warning((56, 56)) is None
    assert fixed.letterbox_warning((64, 48)).startswith("Kit Da3 Fixed takes 56×56 pictures only, so the 64×48")
    dynamic = da3(make_adapter, "KIT_DA3_DYNAMIC", build={"size": None})
    assert dynamic.letterbox_warning((64, 48)) is None and dynamic.letterbox_warning((1920, 1080)) is None
