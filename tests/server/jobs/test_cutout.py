"""generate-cutout-artifacts: crops, mattes, only the models asked for, and geometry cropped with its camera."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import OpenEXR
import pytest
from PIL import Image as PILImage

from imageforge.client.job_runner import run_job
from imageforge.contract import JobId
from imageforge.contract.depth_metadata import DepthMetadata
from imageforge.contract.parameters import Selection
from imageforge.contract.results import ResultName
from imageforge.server.job_steps.hole_fill import clean_plate_weight
from imageforge.server.job_steps.selection_mask import polygon_coverage, selection_coverage
from tests.kit.onnx_models import LAMA_FILL, build_ben2, build_lama, build_moge2, moge2_reference

from .geometry_kit import (  # noqa: F401  (fixtures)
    catalog_entry,
    jobs_fixture,
    model_path,
    real_server_fixture,
    use_catalog_fixture,
    write_rgba,
)

JOB = JobId.GENERATE_CUTOUT_ARTIFACTS
KNOWN = {"focal": 1.1, "shift": 0.8, "plane": (3.0, 0.45), "metric_scale": 1.7}
BOX = [10.5, 8, 30, 20.25]  # columns 10–29 (10 half covered), rows 8–20 (20 a quarter covered)


@pytest.fixture
def photo(tmp_path: Path) -> tuple[Path, np.ndarray]:
    """64 × 48 RGBA, opaque except a half-transparent top-right corner."""
    pixels = np.random.default_rng(2).random((48, 64, 4), dtype=np.float32)
    pixels[..., 3] = 1.0
    pixels[:12, 48:, 3] = 0.5
    path = write_rgba(tmp_path / "photo.png", pixels)
    return path, np.asarray(PILImage.open(path), dtype=np.float32) / 255


@pytest.fixture
def kit_models(use_catalog, storage_root: Path) -> None:
    use_catalog(
        [
            catalog_entry("KIT_MOGE2", "geometry", "moge2"),
            catalog_entry("KIT_BEN2", "background", "ben2", normalization="none"),
            catalog_entry("KIT_LAMA", "inpaint", "lama"),
        ]
    )
    build_moge2(model_path(storage_root, "KIT_MOGE2"), **KNOWN)
    build_ben2(model_path(storage_root, "KIT_BEN2"), size=64, function="threshold")
    build_lama(model_path(storage_root, "KIT_LAMA"))


def read_png(path: Path) -> np.ndarray:
    image = PILImage.open(path)
    values = np.asarray(image)
    return values.astype(np.float64) / (65535 if values.dtype == np.uint16 or image.mode.startswith("I") else 255)


def loaded_families(jobs) -> set[str]:
    return {item["family"] for item in jobs.server.resources["models"].snapshot()["loaded"]}


def test_a_flat_cutout_needs_no_model_at_all(jobs, photo):
    path, source = photo
    # No "models" resource and no catalog: any model code would fail.
    outcome = jobs.run(JOB, {"input": str(path), "selection": {"box": BOX}}, resources={})
    assert outcome.state == "succeeded", outcome.error
    assert outcome.result == {ResultName.CUTOUT: "cutout.png", ResultName.SELECTION_ALPHA: "selection_alpha.png"}
    cutout = read_png(outcome.file(ResultName.CUTOUT))
    alpha = read_png(outcome.file(ResultName.SELECTION_ALPHA))
    assert cutout.shape == (13, 20, 4) and alpha.shape == (13, 20)
    np.testing.assert_allclose(cutout[..., :3], source[8:21, 10:30, :3], atol=1 / 255)
    assert alpha[0, 0] == pytest.approx(0.5, abs=1e-4) and alpha[-1, 1] == pytest.approx(0.25, abs=1e-4)
    np.testing.assert_allclose(alpha[:-1, 1:], 1.0)
    np.testing.assert_allclose(cutout[..., 3], alpha, atol=1 / 255)


def test_a_whole_image_cutout_keeps_the_source_alpha(jobs, photo):
    path, source = photo
    outcome = jobs.run(JOB, {"input": str(path)}, resources={})
    cutout = read_png(outcome.file(ResultName.CUTOUT))
    assert cutout.shape == (48, 64, 4)
    np.testing.assert_allclose(cutout[..., 3], source[..., 3], atol=1 / 255)
    np.testing.assert_allclose(read_png(outcome.file(ResultName.SELECTION_ALPHA)), 1.0)


def test_a_mask_selection_cuts_out_exactly_its_pixels(jobs, photo):
    from imageforge.contract.selection_geometry import MaskRuns

    path, source = photo
    inside = np.zeros((48, 64), bool)
    inside[10:20, 5:15] = True
    inside[15:30, 14:25] = True  # an L: the crop is its bounds, the matte its pixels
    runs = MaskRuns.encode(inside.astype(np.uint8).tobytes(), 64, 48)
    selection = {"mask": {"width": 64, "height": 48, "runs": list(runs.runs)}}
    outcome = jobs.run(JOB, {"input": str(path), "selection": selection}, resources={})
    assert outcome.state == "succeeded", outcome.error
    alpha = read_png(outcome.file(ResultName.SELECTION_ALPHA))
    np.testing.assert_array_equal(alpha, inside[10:30, 5:25].astype(np.float64))
    cutout = read_png(outcome.file(ResultName.CUTOUT))
    np.testing.assert_allclose(cutout[..., :3], source[10:30, 5:25, :3], atol=1 / 255)
    wrong = {"mask": {"width": 63, "height": 48, "runs": [0, 63 * 48]}}
    refused = jobs.run(JOB, {"input": str(path), "selection": wrong}, resources={})
    assert refused.state == "failed" and "is 63×48 pixels but the image is 64×48" in refused.error
    assert not refused.outputs()


def test_lasso_coverage_is_anti_aliased_and_adds_up_to_its_area():
    triangle = [(4.0, 3.0), (40.3, 10.0), (12.0, 35.7)]
    coverage = selection_coverage(Selection(lasso=tuple(triangle)), (48, 40))
    (x0, y0), (x1, y1), (x2, y2) = triangle
    area = abs((x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)) / 2
    assert coverage.sum() == pytest.approx(area, rel=0.01)
    assert ((coverage > 0) & (coverage < 1)).sum() > 40  # soft edge pixels
    assert coverage[15, 15] == 1.0 and coverage[38, 40] == 0.0
    # A box drawn as a lasso covers whole pixels exactly (sample rows never land on its edges).
    square = polygon_coverage(np.array([[2.0, 2.0], [6.0, 2.0], [6.0, 5.0], [2.0, 5.0]]), 8, 8)
    expected = np.zeros((8, 8))
    expected[2:5, 2:6] = 1
    np.testing.assert_array_equal(square, expected)


@pytest.mark.parametrize("selection", [{"box": [70, 0, 90, 10]}, {"lasso": [[-20, -5], [-2, -5], [-8, -30]]}])
def test_a_selection_outside_the_image_is_an_input_error(jobs, photo, selection):
    outcome = jobs.run(JOB, {"input": str(photo[0]), "selection": selection, "generate_depth": True})
    assert outcome.state == "failed" and "outside the image" in outcome.error
    assert jobs.server.resources["models"].snapshot()["loaded"] == []  # refused before any model


@pytest.mark.parametrize("mode", ["object", "tangent"])
def test_geometry_is_cropped_with_its_camera(jobs, kit_models, photo, mode):
    path, _ = photo
    parameters = {"input": str(path), "selection": {"box": BOX}, "generate_depth": True, "normal_mode": mode}
    outcome = jobs.run(JOB, {**parameters, "device": "cpu"})
    assert outcome.state == "succeeded", outcome.error
    assert set(outcome.result) == {"cutout", "selection_alpha", "depth", "depth_metadata", "normal", "provenance"}
    assert loaded_families(jobs) == {"geometry"}  # no refine: BEN2 never loaded
    ref = moge2_reference(1, 48, 64, **KNOWN)
    exr = OpenEXR.File(str(outcome.file(ResultName.DEPTH)), separate_channels=True)
    assert exr.header()["compression"] == OpenEXR.ZIP_COMPRESSION
    channels = {name: channel.pixels for name, channel in exr.channels().items()}
    np.testing.assert_allclose(channels["B"], ref["depth"][0][8:21, 10:30], rtol=1e-4)
    np.testing.assert_allclose(channels["R"], ref["metric_points"][0][8:21, 10:30, 0], rtol=1e-4, atol=1e-6)
    assert channels["A"][0, 0] == pytest.approx(0.5) and channels["A"][1, 1] == pytest.approx(1.0)
    metadata = DepthMetadata.read(outcome.file(ResultName.DEPTH_METADATA))
    assert metadata.image_size == (20, 13) and metadata.analysed_size == (20, 13)
    assert metadata.fx == pytest.approx(ref["intrinsics"][0, 0] * 64, rel=1e-4)
    assert (metadata.cx, metadata.cy) == pytest.approx((32.0 - 10, 24.0 - 8))
    # The crop's camera still projects its points onto its own pixels: u = fx·X/Z + cx.
    u = metadata.fx * channels["R"] / channels["B"] + metadata.cx
    np.testing.assert_allclose(u, np.broadcast_to(np.arange(20) + 0.5, (13, 20)), atol=1e-3)
    normal = np.asarray(PILImage.open(outcome.file(ResultName.NORMAL)), dtype=np.float64)
    assert normal.shape == (13, 20, 3)
    tilt = KNOWN["plane"][1]
    n = np.array([0.0, tilt, -1.0]) / math.sqrt(1 + tilt * tilt)
    if mode == "tangent":
        n = n * (1, -1, -1)  # relative to a card facing the camera: x right, y up, z out of the card
    np.testing.assert_array_equal(normal[1:-1, 1:], np.broadcast_to(np.floor((n + 1) / 2 * 255 + 0.5), (11, 19, 3)))
    np.testing.assert_array_equal(normal[-1, 0], (128, 128, 255))  # a quarter-covered pixel is masked: flat


def test_fill_behind_writes_the_clean_plate_and_the_background_depth_continued_behind(jobs, kit_models, photo):
    path, pixels = photo
    parameters = {"input": str(path), "selection": {"box": BOX}, "generate_depth": True, "fill_behind": True}
    outcome = jobs.run(JOB, {**parameters, "device": "cpu"})
    assert outcome.state == "succeeded", outcome.error
    assert {"background", "background_depth", "background_depth_metadata", "background_normal"} <= set(outcome.result)
    assert loaded_families(jobs) == {"geometry", "inpaint"}
    plate = np.asarray(PILImage.open(outcome.file(ResultName.BACKGROUND)))
    assert plate.shape == (48, 64, 4)
    source = np.round(pixels * 255).astype(np.uint8)
    weight = clean_plate_weight(selection_coverage(Selection(box=tuple(BOX)), (64, 48)))
    # The box (columns 10–29, rows 8–20) grown by 3 px is filled, the next 3 px fade out, the rest is untouched.
    assert weight[5:24, 7:33].min() == 1.0 and weight[4, 6] == 0.75 and weight[1, 3] == 0.0
    np.testing.assert_array_equal(plate[weight == 0], source[weight == 0])
    fill = np.round(np.array(LAMA_FILL) * 255)
    np.testing.assert_array_equal(plate[weight == 1][:, :3], np.broadcast_to(fill, (int((weight == 1).sum()), 3)))
    np.testing.assert_array_equal(plate[..., 3], source[..., 3])
    # The kit's geometry is one plane: the depth behind the region continues it (no dip), and every pixel of the
    # whole image is there, filled ones valid.
    ref = moge2_reference(1, 48, 64, **KNOWN)
    exr = OpenEXR.File(str(outcome.file(ResultName.BACKGROUND_DEPTH)), separate_channels=True)
    channels = {name: channel.pixels for name, channel in exr.channels().items()}
    assert channels["B"].shape == (48, 64)
    np.testing.assert_allclose(channels["B"], ref["depth"][0], rtol=2e-3)
    np.testing.assert_allclose(channels["R"], ref["metric_points"][0][..., 0], rtol=2e-3, atol=1e-3)
    metadata = DepthMetadata.read(outcome.file(ResultName.BACKGROUND_DEPTH_METADATA))
    assert metadata.image_size == (64, 48) and (metadata.cx, metadata.cy) == pytest.approx((32.0, 24.0))
    # The normals behind are those of the continued surface: the kit plane's, computed from the filled points.
    normal = np.asarray(PILImage.open(outcome.file(ResultName.BACKGROUND_NORMAL)), dtype=np.float64)
    tilt = KNOWN["plane"][1]
    n = np.array([0.0, tilt, -1.0]) / math.sqrt(1 + tilt * tilt)
    assert normal.shape == (48, 64, 3)
    assert np.abs(normal - np.floor((n + 1) / 2 * 255 + 0.5)).max() <= 1


def test_refine_runs_the_background_model_and_crops_to_the_refined_matte(jobs, kit_models, tmp_path):
    pixels = np.zeros((48, 64, 4), np.float32)
    pixels[..., :3] = 0.2
    pixels[..., 3] = 1.0
    pixels[15:31, 20:36, 0] = 1.0  # the kit BEN2 keeps pixels whose red exceeds 0.5
    path = write_rgba(tmp_path / "object.png", pixels)
    outcome = jobs.run(JOB, {"input": str(path), "selection": {"box": [12, 10, 44, 38]}, "refine": True})
    assert outcome.state == "succeeded", outcome.error
    assert loaded_families(jobs) == {"background"}  # no maps: MoGe-2 never loaded
    alpha = read_png(outcome.file(ResultName.SELECTION_ALPHA))
    height, width = alpha.shape
    assert 16 <= height <= 22 and 16 <= width <= 22  # the object, give or take the resampling's soft edge
    assert alpha.max() == pytest.approx(1.0, abs=1e-3)
    assert (alpha > 0.5).sum() == pytest.approx(16 * 16, rel=0.15)


def test_a_sliver_that_covers_no_sample_is_an_input_error(jobs, photo):
    sliver = [[0, 1.01], [60, 1.01], [60, 1.03], [0, 1.03]]  # between two sample rows of the 4 × 4 grid
    outcome = jobs.run(JOB, {"input": str(photo[0]), "selection": {"lasso": sliver}}, resources={})
    assert outcome.state == "failed" and "covers no pixel" in outcome.error
    tiny = jobs.run(JOB, {"input": str(photo[0]), "selection": {"box": [0.2, 0.2, 0.4, 0.4]}}, resources={})
    assert read_png(tiny.file(ResultName.SELECTION_ALPHA)) == pytest.approx(0.04, abs=1e-4)  # a box's exact coverage


@pytest.mark.slow
def test_the_real_server_cuts_out_with_depth(real_server, photo, tmp_path):
    model = build_moge2(tmp_path / "kit-moge2.onnx", **KNOWN).read_bytes()
    runtime = real_server([(catalog_entry("KIT_MOGE2", "geometry", "moge2"), model)])
    parameters = {"input": str(photo[0]), "selection": {"lasso": [[8, 6], [40, 6], [24, 40]]}, "generate_depth": True}
    result = run_job(runtime, JOB.value, {**parameters, "device": "cpu"})
    assert set(result.value) == {
        ResultName.CUTOUT,
        ResultName.SELECTION_ALPHA,
        ResultName.DEPTH,
        ResultName.DEPTH_METADATA,
        ResultName.PROVENANCE,
    }
    metadata = DepthMetadata.read(result.file(ResultName.DEPTH_METADATA))
    assert metadata.image_size == (32, 34) and metadata.cx == pytest.approx(32.0 - 8)
    assert PILImage.open(result.file(ResultName.CUTOUT)).size == (32, 34)
