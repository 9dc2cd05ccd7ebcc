"""The MoGe-2 adapter on real CPU sessions of the kit model, which renders a tilted plane of known geometry."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from imageforge.contract import InputError, ModelUnavailableError
from imageforge.contract.catalog import Family
from imageforge.server.models.moge2 import MoGe2Adapter, normals_from_points
from tests.kit.onnx_models import build_ben2, build_moge2, moge2_reference

from .conftest import kit_entry

KNOWN = {"focal": 1.1, "shift": 0.8, "plane": (3.0, 0.45), "metric_scale": 1.7}


@pytest.fixture
def rgb() -> np.ndarray:
    return np.random.default_rng(3).random((48, 64, 3), dtype=np.float32)


def moge(make_adapter, key: str = "KIT_MOGE2", **build) -> MoGe2Adapter:
    adapter = make_adapter(kit_entry(key, Family("geometry"), "moge2"), lambda path: build_moge2(path, **build))
    assert isinstance(adapter, MoGe2Adapter)
    return adapter


def test_recovers_intrinsics_metric_depth_points_and_normals(make_adapter, rgb):
    adapter = moge(make_adapter, mask_border=3, **KNOWN)
    result = adapter.analyse(rgb, max_input_size=2048, resolution_level=9)
    ref = moge2_reference(1, 48, 64, mask_border=3, **KNOWN)
    frame = result.frame
    assert result.analysed_size == frame.size == (64, 48) and result.num_tokens == 3600
    assert frame.intrinsics.fx == pytest.approx(ref["intrinsics"][0, 0], rel=1e-4)
    assert frame.intrinsics.fy == pytest.approx(ref["intrinsics"][1, 1], rel=1e-4)
    assert (frame.intrinsics.cx, frame.intrinsics.cy) == (0.5, 0.5)
    inside = ref["mask"][0] > 0.5
    assert (frame.valid == inside).all()
    np.testing.assert_allclose(frame.depth[inside], ref["depth"][0][inside], rtol=1e-4)
    np.testing.assert_allclose(frame.points[inside], ref["metric_points"][0][inside], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(frame.normal[inside], ref["normal"][0][inside], atol=1e-5)
    np.testing.assert_allclose(frame.normal[~inside], 0.0)  # masked: no direction, as the official infer
    assert result.timings["model"] > 0
    outputs = adapter.run(adapter.prepare(rgb, max_input_size=2048, resolution_level=9), last_run=True)
    assert {name: value.shape for name, value in outputs.items()} == {
        "points": (1, 48, 64, 3),
        "normal": (1, 48, 64, 3),
        "mask": (1, 48, 64),
        "metric_scale": (1,),
    }
    np.testing.assert_array_equal(adapter.frame(outputs).depth, frame.depth)
    assert adapter.runs == 2 and adapter.provider == "CPUExecutionProvider"


def test_long_edge_is_limited_and_intrinsics_stay_normalised(make_adapter, rgb):
    adapter = moge(make_adapter, **KNOWN)
    result = adapter.analyse(rgb, max_input_size=32, resolution_level=0)
    assert result.analysed_size == (32, 24) and result.frame.depth.shape == (24, 32)
    assert result.num_tokens == 1200
    ref = moge2_reference(1, 24, 32, **KNOWN)
    assert result.frame.intrinsics.fx == pytest.approx(ref["intrinsics"][0, 0], rel=1e-4)
    np.testing.assert_allclose(result.frame.depth, ref["depth"][0], rtol=1e-4)


def test_num_tokens_is_a_0d_integer_read_from_the_session(make_adapter, rgb):
    adapter = moge(make_adapter)
    feeds = adapter.feeds(rgb, resolution_level=4)
    assert (adapter.image_input, adapter.tokens_input) == ("image", "num_tokens")
    assert feeds["num_tokens"].shape == () and feeds["num_tokens"].dtype == np.int64 and feeds["num_tokens"] == 2266
    assert feeds["image"].shape == (1, 3, 48, 64) and feeds["image"].dtype == np.float32
    # The kit export, like some real ones, fails on a [1]-shaped token count: the 0-d feed is what works.
    with pytest.raises(Exception):  # noqa: B017 - ONNX Runtime's own error type
        adapter.run({**feeds, "num_tokens": np.array([2266], np.int64)}, last_run=True)


def test_only_moge_asks_coreml_for_static_shapes():
    from imageforge.server.models.da3 import DepthAnything3Adapter

    assert MoGe2Adapter.coreml_options == {"RequireStaticInputShapes": "1"}
    assert dict(DepthAnything3Adapter.coreml_options) == {}


def test_an_export_without_a_normal_head_gets_normals_from_its_points(make_adapter, rgb, tmp_path):
    def without_normal(path):
        build_moge2(tmp_path / "full.onnx", **KNOWN)
        model = onnx.load(str(tmp_path / "full.onnx"))
        kept = [output for output in model.graph.output if output.name != "normal"]
        del model.graph.output[:]
        model.graph.output.extend(kept)
        path.parent.mkdir(parents=True, exist_ok=True)
        onnx.save(model, str(path))
        return path

    adapter = make_adapter(kit_entry("MOGE_NO_NORMAL", Family("geometry"), "moge2"), without_normal)
    assert "normal" not in adapter.outputs
    result = adapter.analyse(rgb, max_input_size=2048, resolution_level=9)
    expected = moge2_reference(1, 48, 64, **KNOWN)["normal"][0]
    interior = result.frame.normal[1:-1, 1:-1]
    np.testing.assert_allclose(interior, expected[1:-1, 1:-1], atol=1e-4)


def test_normals_from_points_face_the_camera_and_skip_invalid_neighbourhoods():
    ys, xs = np.mgrid[0:8, 0:10].astype(np.float32)
    points = np.stack([xs, ys, np.full_like(xs, 5.0)], axis=-1)  # a fronto-parallel plane
    valid = np.ones((8, 10), bool)
    valid[4, 4] = False
    normal = normals_from_points(points, valid)
    np.testing.assert_allclose(normal[1, 1], (0, 0, -1), atol=1e-6)
    np.testing.assert_allclose(normal[4, 5], (0, 0, -1))  # next to the invalid pixel: the fallback
    tilted = points.copy()
    tilted[..., 2] += 0.5 * ys  # Z = 5 + 0.5·Y: the kit's plane convention, normal (0, tilt, −1) normalised
    expected = np.array([0.0, 0.5, -1.0]) / np.sqrt(1.25)
    np.testing.assert_allclose(normals_from_points(tilted, np.ones((8, 10), bool))[3, 3], expected, atol=1e-6)


def test_an_empty_mask_is_a_clear_error(make_adapter, rgb):
    adapter = moge(make_adapter, mask_border=30)  # the mask border covers the whole 64×48 image
    with pytest.raises(InputError, match="no usable depth"):
        adapter.analyse(rgb, max_input_size=2048, resolution_level=9)


def test_a_model_that_is_not_moge_is_refused(make_adapter):
    with pytest.raises(ModelUnavailableError, match="does not look like a MoGe-2 export"):
        make_adapter(kit_entry("NOT_MOGE", Family("geometry"), "moge2"), lambda path: build_ben2(path, size=32))
