"""Tests of the tiny ONNX test models: real signatures (facts/models.md) and exactly known outputs."""

from __future__ import annotations

import math

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from .onnx_models import (
    BEN2_LUMA,
    IR_VERSION,
    LAMA_FILL,
    OPSET,
    ben2_reference,
    build_ben2,
    build_da3,
    build_lama,
    build_moge2,
    build_upscaler,
    da3_reference,
    lama_reference,
    moge2_intrinsics,
    moge2_reference,
    signature,
    upscaler_reference,
)


def session(path) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    opts.log_severity_level = 3  # legacy upscaler output dims disagree with the real shapes by design
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])


def run(path, feeds: dict) -> dict:
    sess = session(path)
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, feeds), strict=True))


# ------------------------------------------------------------------------------------------ general


@pytest.mark.parametrize(
    "build,kwargs",
    [
        (build_ben2, {"size": 32}),
        (build_upscaler, {"receptive_radius": 1}),
        (build_moge2, {}),
        (build_da3, {}),
        (build_da3, {"cameras": False}),
        (build_lama, {}),
    ],
)
def test_models_use_opset_17_and_an_ir_version_ort_loads(tmp_path, build, kwargs):
    path = build(tmp_path / "sub" / "m.onnx", **kwargs)
    assert path == tmp_path / "sub" / "m.onnx" and path.is_file()
    model = onnx.load(str(path))
    assert model.ir_version == IR_VERSION <= 10
    assert [(o.domain, o.version) for o in model.opset_import] == [("", OPSET)] == [("", 17)]
    session(path)  # loads


# ------------------------------------------------------------------------------------------ BEN2


@pytest.mark.parametrize("fp16", [True, False])
def test_ben2_signature_matches_facts(tmp_path, fp16):
    path = build_ben2(tmp_path / "ben2.onnx", fp16_output=fp16)  # real default size 1024
    dtype = "float16" if fp16 else "float32"
    assert signature(path) == {
        "inputs": [("input", [1, 3, 1024, 1024], "float32")],
        "outputs": [("output", [1, 1, 1024, 1024], dtype)],
    }


def test_ben2_full_size_fp16_runs_and_returns_float16(tmp_path):
    path = build_ben2(tmp_path / "ben2.onnx")
    x = np.zeros((1, 3, 1024, 1024), np.float32)
    x[0, :, 10, 20] = 1.0
    out = run(path, {"input": x})["output"]
    assert out.dtype == np.float16 and out.shape == (1, 1, 1024, 1024)
    assert out[0, 0, 10, 20] == np.float16(sum(BEN2_LUMA))
    assert out.sum(dtype=np.float64) == pytest.approx(1.0, abs=1e-3)


@pytest.mark.parametrize("fp16", [True, False])
def test_ben2_luma_is_the_known_function(tmp_path, fp16):
    path = build_ben2(tmp_path / "ben2.onnx", size=64, fp16_output=fp16)
    rng = np.random.default_rng(0)
    x = rng.random((1, 3, 64, 64), dtype=np.float32)
    out = run(path, {"input": x})["output"]
    assert out.dtype == (np.float16 if fp16 else np.float32)
    expected = 0.299 * x[:, 0:1] + 0.587 * x[:, 1:2] + 0.114 * x[:, 2:3]
    np.testing.assert_allclose(ben2_reference(x), expected, atol=1e-6)
    np.testing.assert_allclose(out.astype(np.float32), expected, atol=1e-3 if fp16 else 1e-6)
    # pure colours give the luma weights exactly (what a host sees before min-max normalising)
    x = np.zeros((1, 3, 64, 64), np.float32)
    x[0, 0, :, :16] = 1.0
    x[0, 1, :, 16:32] = 1.0
    x[0, 2, :, 32:48] = 1.0
    out = run(path, {"input": x})["output"].astype(np.float32)[0, 0]
    expected = np.tile([0.299, 0.587, 0.114, 0.0], (64, 1))
    np.testing.assert_allclose(out[:, [0, 16, 32, 48]], expected, atol=1e-3)


def test_ben2_threshold_is_a_crisp_matte_of_the_red_channel(tmp_path):
    path = build_ben2(tmp_path / "ben2.onnx", size=64, function="threshold")
    rng = np.random.default_rng(1)
    x = rng.random((1, 3, 64, 64), dtype=np.float32)
    out = run(path, {"input": x})["output"]
    assert out.dtype == np.float16
    assert set(np.unique(out).tolist()) == {0.0, 1.0}
    np.testing.assert_array_equal(out.astype(np.float32), (x[:, :1] > 0.5).astype(np.float32))
    np.testing.assert_array_equal(ben2_reference(x, "threshold"), (x[:, :1] > 0.5).astype(np.float32))


def test_ben2_rejects_unknown_function(tmp_path):
    with pytest.raises(ValueError):
        build_ben2(tmp_path / "ben2.onnx", size=8, function="sobel")


# ------------------------------------------------------------------------------------------ upscaler


@pytest.mark.parametrize("legacy", [True, False])
def test_upscaler_signature_and_output_dim_labels(tmp_path, legacy):
    sig = signature(build_upscaler(tmp_path / "up.onnx", legacy_output_dims=legacy))
    assert sig["inputs"] == [("input", ["batch", 3, "height", "width"], "float32")]
    ((name, shape, dtype),) = sig["outputs"]
    assert (name, dtype) == ("output", "float32")
    if legacy:
        # same symbols as the input: wrong, like legacy exports
        assert shape == ["batch", 3, "height", "width"]
    else:
        assert shape[:2] == ["batch", 3] and isinstance(shape[2], str) and isinstance(shape[3], str)
        assert not {shape[2], shape[3]} & {"height", "width"}


@pytest.mark.parametrize("legacy", [True, False])
def test_upscaler_radius_0_is_exact_nearest_4x(tmp_path, legacy):
    path = build_upscaler(tmp_path / "up.onnx", legacy_output_dims=legacy)
    rng = np.random.default_rng(2)
    x = rng.random((2, 3, 5, 7), dtype=np.float32)
    out = run(path, {"input": x})["output"]
    assert out.shape == (2, 3, 20, 28) and out.dtype == np.float32
    np.testing.assert_array_equal(out, x.repeat(4, axis=2).repeat(4, axis=3))
    np.testing.assert_array_equal(out, upscaler_reference(x))
    assert out[1, 2, 7, 13] == x[1, 2, 1, 3]


def test_upscaler_other_scale(tmp_path):
    path = build_upscaler(tmp_path / "up.onnx", scale=2)
    x = np.arange(2 * 3 * 3 * 4, dtype=np.float32).reshape(2, 3, 3, 4)
    np.testing.assert_array_equal(run(path, {"input": x})["output"], x.repeat(2, axis=2).repeat(2, axis=3))


@pytest.mark.parametrize("r", [1, 2, 3])
def test_upscaler_single_pixel_spreads_exactly_r_pixels_before_upscaling(tmp_path, r):
    path = build_upscaler(tmp_path / "up.onnx", receptive_radius=r)
    x = np.zeros((1, 3, 16, 16), np.float32)
    py, px = 7, 9
    x[0, 1, py, px] = 1.0
    out = run(path, {"input": x})["output"]
    assert out.shape == (1, 3, 64, 64)
    assert not out[0, 0].any() and not out[0, 2].any()  # depthwise: channels do not mix
    k = 2 * r + 1
    expected = np.zeros((64, 64), np.float32)
    expected[4 * (py - r) : 4 * (py + r + 1), 4 * (px - r) : 4 * (px + r + 1)] = 1.0 / (k * k)
    np.testing.assert_allclose(out[0, 1], expected, rtol=1e-6, atol=0)
    rows, cols = np.nonzero(out[0, 1])
    assert (rows.min(), rows.max()) == (4 * (py - r), 4 * (py + r) + 3)
    assert (cols.min(), cols.max()) == (4 * (px - r), 4 * (px + r) + 3)


def test_upscaler_blur_uses_zero_padding_and_matches_reference(tmp_path):
    path = build_upscaler(tmp_path / "up.onnx", receptive_radius=2)
    rng = np.random.default_rng(3)
    x = rng.random((2, 3, 9, 11), dtype=np.float32)
    out = run(path, {"input": x})["output"]
    np.testing.assert_allclose(out, upscaler_reference(x, receptive_radius=2), rtol=1e-5, atol=1e-6)
    ones = np.ones((1, 3, 9, 11), np.float32)
    corner = run(path, {"input": ones})["output"][0, 0, 0, 0]
    assert corner == pytest.approx(9 / 25, rel=1e-6)  # 3x3 of the 5x5 window lies inside the image


def _tiled(path, x, tile: int, overlap: int, scale: int = 4) -> np.ndarray:
    """Crop tiles with *overlap* input pixels of context, run each, keep only each tile's core."""
    sess = session(path)
    _, _, h, w = x.shape
    out = np.zeros((x.shape[0], 3, h * scale, w * scale), np.float32)
    for y0 in range(0, h, tile):
        for x0 in range(0, w, tile):
            y1, x1 = min(y0 + tile, h), min(x0 + tile, w)
            cy0, cx0 = max(y0 - overlap, 0), max(x0 - overlap, 0)
            cy1, cx1 = min(y1 + overlap, h), min(x1 + overlap, w)
            part = sess.run(None, {"input": np.ascontiguousarray(x[:, :, cy0:cy1, cx0:cx1])})[0]
            oy, ox = (y0 - cy0) * scale, (x0 - cx0) * scale
            out[:, :, y0 * scale : y1 * scale, x0 * scale : x1 * scale] = part[
                :, :, oy : oy + (y1 - y0) * scale, ox : ox + (x1 - x0) * scale
            ]
    return out


def test_upscaler_receptive_field_makes_tiling_seams_detectable(tmp_path):
    r = 2
    path = build_upscaler(tmp_path / "up.onnx", receptive_radius=r)
    rng = np.random.default_rng(4)
    x = rng.random((1, 3, 20, 23), dtype=np.float32)
    whole = run(path, {"input": x})["output"]
    np.testing.assert_allclose(_tiled(path, x, tile=8, overlap=r), whole, rtol=1e-6, atol=1e-6)
    seams = np.abs(_tiled(path, x, tile=8, overlap=r - 1) - whole)
    assert seams.max() > 1e-3  # too little overlap shows up as seams


# ------------------------------------------------------------------------------------------ MoGe-2


def test_moge2_signature_matches_facts(tmp_path):
    sig = signature(build_moge2(tmp_path / "moge.onnx"))
    assert sig["inputs"] == [
        ("image", ["batch", 3, "height", "width"], "float32"),
        ("num_tokens", [], "int64"),
    ]
    assert [(n, len(s), d) for n, s, d in sig["outputs"]] == [
        ("points", 4, "float32"),
        ("normal", 4, "float32"),
        ("mask", 3, "float32"),
        ("metric_scale", 1, "float32"),
    ]
    shapes = {n: s for n, s, _ in sig["outputs"]}
    assert shapes["points"][3] == shapes["normal"][3] == 3
    assert all(isinstance(d, str) for d in shapes["points"][:3] + shapes["mask"] + shapes["metric_scale"])


def test_moge2_num_tokens_must_be_a_0d_scalar(tmp_path):
    path = build_moge2(tmp_path / "moge.onnx")
    image = np.zeros((1, 3, 8, 8), np.float32)
    with pytest.raises(Exception, match="(?i)rank"):
        run(path, {"image": image, "num_tokens": np.array([1200], np.int64)})


def _moge_uv(h: int, w: int) -> np.ndarray:
    """MoGe's normalized_view_plane_uv (pixel centres, half diagonal = 1), [H,W,2]."""
    a = w / h
    sx, sy = a / math.sqrt(1 + a * a), 1 / math.sqrt(1 + a * a)
    u = np.linspace(-sx * (w - 1) / w, sx * (w - 1) / w, w)
    v = np.linspace(-sy * (h - 1) / h, sy * (h - 1) / h, h)
    vv, uu = np.meshgrid(v, u, indexing="ij")
    return np.stack([uu, vv], axis=-1)


def _recover_focal_shift(points: np.ndarray, mask: np.ndarray) -> tuple[float, float]:
    """Exact solve of MoGe's ``focal * xy / (z + shift) = uv`` (linear in focal, shift once multiplied
    out: focal*x - u*shift = u*z, focal*y - v*shift = v*z) over the masked points."""
    h, w = mask.shape
    uv = _moge_uv(h, w)[mask]
    p = points.astype(np.float64)[mask]
    a = np.concatenate([np.stack([p[:, 0], -uv[:, 0]], 1), np.stack([p[:, 1], -uv[:, 1]], 1)])
    b = np.concatenate([uv[:, 0] * p[:, 2], uv[:, 1] * p[:, 2]])
    (focal, shift), *_ = np.linalg.lstsq(a, b, rcond=None)
    return float(focal), float(shift)


@pytest.mark.parametrize("b,h,w", [(1, 24, 32), (2, 30, 20), (1, 17, 17), (1, 45, 80)])
def test_moge2_outputs_are_the_documented_plane(tmp_path, b, h, w):
    path = build_moge2(tmp_path / "moge.onnx")
    rng = np.random.default_rng(5)
    image = rng.random((b, 3, h, w), dtype=np.float32)
    out = run(path, {"image": image, "num_tokens": np.array(1200, np.int64)})
    assert out["points"].shape == (b, h, w, 3) and out["normal"].shape == (b, h, w, 3)
    assert out["mask"].shape == (b, h, w) and out["metric_scale"].shape == (b,)
    assert all(v.dtype == np.float32 for v in out.values())
    ref = moge2_reference(b, h, w)
    for name in ("points", "normal", "mask", "metric_scale"):
        np.testing.assert_allclose(out[name], ref[name], rtol=2e-6, atol=2e-6, err_msg=name)
    np.testing.assert_allclose(np.linalg.norm(out["normal"], axis=-1), 1.0, atol=1e-6)
    expected_normal = np.array([0.0, -0.4, -1.0]) / math.sqrt(1.16)
    np.testing.assert_allclose(out["normal"][0, 0, 0], expected_normal, atol=1e-6)
    assert (out["mask"] == 1.0).all() and (out["metric_scale"] == np.float32(2.5)).all()
    # num_tokens (any level 0..9) never changes results
    out2 = run(path, {"image": image * 0, "num_tokens": np.array(3600, np.int64)})
    for name in out:
        np.testing.assert_array_equal(out2[name], out[name])


@pytest.mark.parametrize("h,w", [(24, 32), (40, 24), (64, 64)])
def test_moge2_host_recovers_documented_focal_shift_intrinsics_and_depth(tmp_path, h, w):
    focal, shift, plane, scale = 1.3, 0.7, (3.0, 0.5), 4.0
    path = build_moge2(tmp_path / "moge.onnx", focal=focal, shift=shift, plane=plane, metric_scale=scale, mask_border=3)
    out = run(path, {"image": np.zeros((1, 3, h, w), np.float32), "num_tokens": np.array(2000, np.int64)})
    pts, mask, ms = out["points"][0].astype(np.float64), out["mask"][0] > 0.5, float(out["metric_scale"][0])
    assert ms == scale
    # mask: zero within 3 px of the border, one inside
    assert not mask[:3].any() and not mask[-3:].any() and not mask[:, :3].any() and not mask[:, -3:].any()
    assert mask[3:-3, 3:-3].all()

    # MoGe's relation holds with zero residual at the documented values ...
    uv = _moge_uv(h, w)
    np.testing.assert_allclose(focal * pts[..., :2] / (pts[..., 2:] + shift), uv, atol=1e-5)
    # ... and a least-squares host recovers them
    f_rec, s_rec = _recover_focal_shift(pts, mask)
    assert f_rec == pytest.approx(focal, rel=1e-5) and s_rec == pytest.approx(shift, abs=1e-5)

    # intrinsics from the facts' formula re-project the metric points onto the pixel centres
    a = w / h
    k = moge2_intrinsics(f_rec, h, w)
    assert k[0, 0] == pytest.approx(focal / 2 * math.sqrt(1 + a * a) / a, rel=1e-5)
    assert k[1, 1] == pytest.approx(focal / 2 * math.sqrt(1 + a * a), rel=1e-5)
    assert (k[0, 2], k[1, 2]) == (0.5, 0.5)
    assert k[0, 0] * w == pytest.approx(k[1, 1] * h)  # square pixels
    depth = (pts[..., 2] + s_rec) * ms
    metric = np.concatenate([pts[..., :2] * ms, depth[..., None]], axis=-1)
    proj_u = k[0, 0] * metric[..., 0] / metric[..., 2] + k[0, 2]
    proj_v = k[1, 1] * metric[..., 1] / metric[..., 2] + k[1, 2]
    jj, ii = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    np.testing.assert_allclose(proj_u, (ii + 0.5) / w, atol=1e-5)
    np.testing.assert_allclose(proj_v, (jj + 0.5) / h, atol=1e-5)

    # depth is the documented plane: d0 * metric_scale / (1 - tilt * ry), i.e. metric Z = d0 + tilt * Y
    ref = moge2_reference(1, h, w, focal=focal, shift=shift, plane=plane, metric_scale=scale, mask_border=3)
    np.testing.assert_allclose(depth, ref["depth"][0], rtol=1e-5)
    np.testing.assert_allclose(metric, ref["metric_points"][0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(metric[..., 2], scale * plane[0] + plane[1] * metric[..., 1], rtol=1e-5)
    # the normal is perpendicular to the plane's in-surface directions and faces the camera
    n = out["normal"][0, 0, 0].astype(np.float64)
    d_row = metric[-1, 0] - metric[0, 0]
    d_col = metric[0, -1] - metric[0, 0]
    assert abs(n @ d_row) < 1e-4 * np.linalg.norm(d_row) and abs(n @ d_col) < 1e-4 * np.linalg.norm(d_col)
    assert n @ (-metric[h // 2, w // 2]) > 0


def test_moge2_rejects_planes_that_cross_the_camera(tmp_path):
    with pytest.raises(ValueError):
        build_moge2(tmp_path / "m.onnx", focal=1.0, plane=(2.0, 1.0))


# ------------------------------------------------------------------------------------------ DA3


def test_da3_signature_with_cameras(tmp_path):
    sig = signature(build_da3(tmp_path / "da3.onnx", size=56))
    ((name, shape, dtype),) = sig["inputs"]
    assert (name, dtype) == ("image", "float32") and shape[0] == 1 and shape[2:] == [3, 56, 56]
    views = shape[1]
    assert isinstance(views, str)
    assert sig["outputs"] == [
        ("depth", [1, views, 56, 56], "float32"),
        ("depth_conf", [1, views, 56, 56], "float32"),
        ("extrinsics", [1, views, 3, 4], "float32"),
        ("intrinsics", [1, views, 3, 3], "float32"),
    ]


@pytest.mark.parametrize("n", [1, 3])
def test_da3_cameras_outputs_are_known(tmp_path, n):
    path = build_da3(tmp_path / "da3.onnx", size=28)
    rng = np.random.default_rng(6)
    image = rng.normal(size=(1, n, 3, 28, 28)).astype(np.float32)
    out = run(path, {"image": image})
    np.testing.assert_allclose(out["depth"], 3.0 + image.mean(axis=2), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(out["depth_conf"], np.ones((1, n, 28, 28), np.float32))
    assert out["extrinsics"].shape == (1, n, 3, 4)
    for i in range(n):
        expected = np.array([[1, 0, 0, 0.1 * i], [0, 1, 0, 0], [0, 0, 1, 0]])
        np.testing.assert_allclose(out["extrinsics"][0, i], expected, atol=1e-7)
        np.testing.assert_array_equal(out["intrinsics"][0, i], [[28, 0, 14], [0, 28, 14], [0, 0, 1]])
    ref = da3_reference(image)
    for name in ref:
        np.testing.assert_allclose(out[name], ref[name], rtol=1e-6, atol=1e-6, err_msg=name)


def test_da3_depth_positive_for_imagenet_normalised_black(tmp_path):
    path = build_da3(tmp_path / "da3.onnx", size=14)
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    black = np.broadcast_to(((0 - mean) / std)[None, None, :, None, None], (1, 2, 3, 14, 14))
    depth = run(path, {"image": np.ascontiguousarray(black, dtype=np.float32)})["depth"]
    assert depth.min() > 0 and depth[0, 0, 0, 0] == pytest.approx(3.0 + ((0 - mean) / std).mean(), rel=1e-6)


@pytest.mark.parametrize("size", [56, None])
def test_da3_depth_only_export(tmp_path, size):
    path = build_da3(tmp_path / "da3.onnx", size=size, cameras=False)
    sig = signature(path)
    hw = [56, 56] if size else ["height", "width"]
    assert sig == {
        "inputs": [("image", ["batch", 3, *hw], "float32")],
        "outputs": [("depth", ["batch", 1, *hw], "float32")],
    }
    h, w = (56, 56) if size else (21, 35)
    rng = np.random.default_rng(7)
    image = rng.random((2, 3, h, w), dtype=np.float32)
    depth = run(path, {"image": image})["depth"]
    assert depth.shape == (2, 1, h, w)
    np.testing.assert_allclose(depth, 3.0 + image.mean(axis=1, keepdims=True), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(depth, da3_reference(image, cameras=False)["depth"], rtol=1e-6, atol=1e-6)


def test_da3_multiview_size_must_be_a_multiple_of_14(tmp_path):
    with pytest.raises(ValueError):
        build_da3(tmp_path / "da3.onnx", size=50)


# ------------------------------------------------------------------------------------------ LaMa

LAMA_FILL_COLUMN = np.array(LAMA_FILL, np.float32).reshape(1, 3, 1, 1)


def test_lama_signature_matches_facts(tmp_path):
    described = signature(build_lama(tmp_path / "lama.onnx"))
    assert described == {
        "inputs": [("input", [1, 4, "height", "width"], "float32")],
        "outputs": [("output", [1, 3, "height", "width"], "float32")],
    }


def test_lama_fills_the_zeroed_hole_with_its_colour_and_keeps_the_rest(tmp_path):
    rng = np.random.default_rng(3)
    rgb = rng.random((1, 3, 64, 96), dtype=np.float32)
    mask = np.zeros((1, 1, 64, 96), np.float32)
    mask[..., 10:30, 40:70] = 1.0
    feed = np.concatenate([rgb * (1 - mask), mask], axis=1)
    (output,) = run(build_lama(tmp_path / "lama.onnx"), {"input": feed}).values()
    np.testing.assert_array_equal(output, lama_reference(feed))
    np.testing.assert_array_equal(output[..., 10:30, 40:70], np.broadcast_to(LAMA_FILL_COLUMN, (1, 3, 20, 30)))
    np.testing.assert_array_equal(output[..., 30:, :], rgb[..., 30:, :])


@pytest.mark.parametrize("height,width", [(33, 64), (64, 50)])
def test_lama_runs_only_on_multiples_of_32(tmp_path, height, width):
    path = build_lama(tmp_path / "lama.onnx")
    with pytest.raises(Exception, match="multiple of block_size"):
        run(path, {"input": np.zeros((1, 4, height, width), np.float32)})


def test_moge2_step_puts_a_card_in_front_of_the_plane_on_the_same_rays(tmp_path):
    step = (0.25, 0.25, 0.75, 0.5, 0.5)
    path = build_moge2(tmp_path / "step.onnx", step=step)
    image = np.zeros((1, 3, 24, 32), np.float32)
    outputs = run(path, {"image": image, "num_tokens": np.array(1200, np.int64)})
    ref = moge2_reference(1, 24, 32, step=step)
    np.testing.assert_allclose(outputs["points"], ref["points"], rtol=1e-5, atol=1e-5)
    plane = moge2_reference(1, 24, 32)
    depth, flat = ref["depth"][0], plane["depth"][0]
    np.testing.assert_allclose(depth[6:12, 8:24], flat[6:12, 8:24] * 0.5)  # the card: half as far
    np.testing.assert_allclose(depth[12:], flat[12:])  # elsewhere the plane
