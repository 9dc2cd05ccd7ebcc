"""generate-depth-plane-geometry on the kit MoGe-2 model (a tilted plane of known focal, shift and scale).

Files are read back with the libraries Blender's side would use: OpenEXR for the depth, json, Pillow for the
normal map. In process the job runs through the server's real handler; one test runs the real server.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import OpenEXR
import pytest
from PIL import Image as PILImage

from imageforge.client.job_runner import run_job
from imageforge.contract import JobId
from imageforge.contract.depth_metadata import DepthMetadata
from imageforge.contract.results import ResultName
from imageforge.server.job_steps import geometry_outputs
from tests.kit.onnx_models import build_moge2, moge2_reference

from .geometry_kit import (  # noqa: F401  (fixtures)
    RecordingContext,
    catalog_entry,
    jobs_fixture,
    model_path,
    real_server_fixture,
    use_catalog_fixture,
    write_rgba,
)

KNOWN = {"focal": 1.1, "shift": 0.8, "plane": (3.0, 0.45), "metric_scale": 1.7, "mask_border": 2}
JOB = JobId.GENERATE_DEPTH_PLANE_GEOMETRY
TRANSPARENT_COLUMNS = 16  # of the 64 × 48 source


@pytest.fixture
def moge_catalog(use_catalog, storage_root: Path):
    use_catalog([catalog_entry("KIT_MOGE2", "geometry", "moge2")])
    build_moge2(model_path(storage_root, "KIT_MOGE2"), **KNOWN)


@pytest.fixture
def photo(tmp_path: Path) -> Path:
    """64 × 48 RGBA: random colour, the left quarter fully transparent."""
    pixels = np.random.default_rng(1).random((48, 64, 4), dtype=np.float32)
    pixels[..., 3] = 1.0
    pixels[:, :TRANSPARENT_COLUMNS, 3] = 0.0
    return write_rgba(tmp_path / "photo.png", pixels)


def read_exr(path: Path) -> tuple[dict[str, np.ndarray], dict]:
    exr = OpenEXR.File(str(path), separate_channels=True)
    channels = {name: channel for name, channel in exr.channels().items()}
    assert {name: str(channel.type()) for name, channel in channels.items()} == {
        name: "PixelType.FLOAT" for name in "RGBA"
    }
    return {name: channel.pixels for name, channel in channels.items()}, exr.header()


def encoded(normal: np.ndarray) -> np.ndarray:
    return np.floor((np.asarray(normal) + 1) / 2 * 255 + 0.5)


@pytest.mark.parametrize("max_input_size", [2048, 32])
def test_writes_metric_points_metadata_and_normals_of_the_known_plane(jobs, moge_catalog, photo, max_input_size):
    outcome = jobs.run(JOB, {"input": str(photo), "max_input_size": max_input_size, "device": "cpu"})
    assert outcome.state == "succeeded", outcome.error
    assert outcome.result == {
        "depth": "depth.exr",
        "depth_metadata": "depth_metadata.json",
        "normal": "normal.png",
        "provenance": "provenance.json",
    }
    width, height = (64, 48) if max_input_size == 2048 else (32, 24)
    ref = moge2_reference(1, height, width, **KNOWN)

    channels, header = read_exr(outcome.file(ResultName.DEPTH))
    assert header["compression"] == OpenEXR.ZIP_COMPRESSION
    assert channels["R"].shape == (height, width)
    valid = ref["mask"][0] > 0.5
    points = np.stack([channels[name] for name in "RGB"], axis=-1)
    np.testing.assert_allclose(points[valid], ref["metric_points"][0][valid], rtol=1e-4, atol=1e-5)
    alpha = channels["A"]
    assert (alpha[~valid] == 0).all()
    clear = TRANSPARENT_COLUMNS * width // 64
    np.testing.assert_allclose(alpha[:, : clear - 3], 0.0, atol=1e-6)  # transparent: alpha × validity = 0
    opaque = valid.copy()
    opaque[:, : clear + 4] = False
    np.testing.assert_allclose(alpha[opaque], 1.0, atol=1e-5)

    written = json.loads(outcome.file(ResultName.DEPTH_METADATA).read_text())
    assert set(written) == {"version", "image_size", "analysed_size", "fx", "fy", "cx", "cy", "reference_depth"}
    metadata = DepthMetadata.from_json(written)
    assert metadata.version == 1
    assert metadata.image_size == (64, 48) and metadata.analysed_size == (width, height)
    assert metadata.fx == pytest.approx(ref["intrinsics"][0, 0] * 64, rel=1e-4)
    assert metadata.fy == pytest.approx(ref["intrinsics"][1, 1] * 48, rel=1e-4)
    assert metadata.fx == pytest.approx(metadata.fy, rel=1e-4)
    assert (metadata.cx, metadata.cy) == pytest.approx((32.0, 24.0))
    kept = valid & (alpha > 0.5)
    assert metadata.reference_depth == pytest.approx(float(np.median(ref["depth"][0][kept])), rel=1e-4)

    normal = np.asarray(PILImage.open(outcome.file(ResultName.NORMAL)))
    assert normal.shape == (48, 64, 3) and normal.dtype == np.uint8
    tilt = KNOWN["plane"][1]
    expected = encoded(np.array([0.0, tilt, -1.0]) / math.sqrt(1 + tilt * tilt))  # OpenCV axes, facing the camera
    border = 2 * 64 // width + 1  # the masked border, in source pixels, plus one for the bilinear edge
    np.testing.assert_array_equal(normal[border:-border, TRANSPARENT_COLUMNS + 1 : -border], np.broadcast_to(
        expected, normal[border:-border, TRANSPARENT_COLUMNS + 1 : -border].shape))  # fmt: skip
    np.testing.assert_array_equal(normal[:, :TRANSPARENT_COLUMNS], np.broadcast_to((128, 128, 255), (48, 16, 3)))
    np.testing.assert_array_equal(normal[0], np.broadcast_to((128, 128, 255), (64, 3)))
    assert "Running Kit Moge2" in outcome.messages and "Writing normal map" in outcome.messages


@pytest.mark.parametrize("stage", ["Writing result", "Writing depth", "Writing depth metadata", "Writing normal map"])
def test_cancelling_at_any_stage_leaves_no_output(jobs, moge_catalog, photo, stage):
    outcome = jobs.run(JOB, {"input": str(photo), "device": "cpu"}, cancel_when=lambda message: message == stage)
    assert outcome.state == "cancelled"
    assert outcome.outputs() == set()
    assert json.loads((outcome.directory / "job-state.json").read_text())["state"] == "cancelled"


def test_a_failing_writer_leaves_no_output(jobs, moge_catalog, photo, monkeypatch):
    """The depth and its metadata are written before the normal map fails: the handler removes them."""

    def broken_png(path, **_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(geometry_outputs, "write_png_bands", broken_png)
    outcome = jobs.run(JOB, {"input": str(photo), "device": "cpu"})
    assert outcome.state == "failed"
    assert "Writing normal map" in outcome.messages  # after "Writing depth" and "Writing depth metadata"
    assert outcome.outputs() == set()
    assert json.loads((outcome.directory / "job-state.json").read_text())["state"] == "failed"


def test_input_problems_fail_before_any_model_is_needed(jobs, tmp_path):
    video = tmp_path / "clip.mp4"
    video.write_bytes(b"\x00" * 64)
    missing = jobs.run(JOB, {"input": str(tmp_path / "nope.png")})
    assert missing.state == "failed" and missing.error.startswith("Cannot find")
    assert jobs.server.resources["models"].snapshot()["loaded"] == []


TOO_SMALL = "depth, normals and the camera need at least 2×2"


@pytest.mark.parametrize(
    ("job", "size", "parameters", "message"),
    [
        (JOB, (1, 1), {}, "The image is 1×1 pixels; " + TOO_SMALL + " pixels, so use a larger image."),
        (JOB, (40, 1), {}, "The image is 40×1 pixels; " + TOO_SMALL + " pixels, so use a larger image."),
        (JOB, (64, 48), {"max_input_size": 1}, "Maximum AI Input Size 1 reduces this 64×48 image to 1×1 pixels; "
                                               + TOO_SMALL + ", so raise it."),
        (JobId.GENERATE_CUTOUT_ARTIFACTS, (1, 1), {"refine": False, "generate_depth": True, "fill_behind": False},
         "The image is 1×1 pixels; " + TOO_SMALL + " pixels, so use a larger image."),
    ],
)  # fmt: skip
def test_a_still_too_small_for_a_camera_is_refused_before_any_model(jobs, moge_catalog, tmp_path, job, size,
                                                                    parameters, message):  # fmt: skip
    """Before, the model ran and the camera solve failed after it ("no consistent camera" with a mask that covers
    the pixel, "no usable depth" with the kit's masked border); the rule (contract/sizes.py) is the one the add-on
    applies before sending."""
    still = write_rgba(tmp_path / "tiny.png", np.full((size[1], size[0], 3), 0.5, dtype=np.float32))
    outcome = jobs.run(job, {"input": str(still), "device": "cpu", **parameters})
    assert (outcome.state, outcome.error) == ("failed", message)
    assert jobs.server.resources["models"].snapshot()["loaded"] == []
    assert json.loads((outcome.directory / "job-state.json").read_text())["failure"] == "input"


def test_the_smallest_still_gets_the_true_camera(jobs, use_catalog, storage_root, tmp_path):
    """2 × 2 is enough for the camera the known plane was rendered with (the official solver agrees: 1 × 1 is the
    only size it cannot solve, openspec/0006)."""
    use_catalog([catalog_entry("KIT_MOGE2", "geometry", "moge2")])
    build_moge2(model_path(storage_root, "KIT_MOGE2"), **{**KNOWN, "mask_border": 0})
    still = write_rgba(tmp_path / "tiny.png", np.random.default_rng(2).random((2, 2, 3), dtype=np.float32))
    outcome = jobs.run(JOB, {"input": str(still), "device": "cpu"})
    assert outcome.state == "succeeded", outcome.error
    metadata = DepthMetadata.from_json(json.loads(outcome.file(ResultName.DEPTH_METADATA).read_text()))
    reference = moge2_reference(1, 2, 2, **{**KNOWN, "mask_border": 0})
    assert metadata.fx == pytest.approx(reference["intrinsics"][0, 0] * 2, rel=1e-4)


@pytest.mark.slow
def test_the_real_server_downloads_the_model_and_writes_the_depth_plane(real_server, photo, tmp_path):
    model = build_moge2(tmp_path / "kit-moge2.onnx", **KNOWN).read_bytes()
    runtime = real_server([(catalog_entry("KIT_MOGE2", "geometry", "moge2"), model)])
    result = run_job(runtime, JOB.value, {"input": str(photo), "device": "cpu", "resolution_level": 0})
    metadata = DepthMetadata.read(result.file(ResultName.DEPTH_METADATA))
    ref = moge2_reference(1, 48, 64, **KNOWN)
    assert metadata.fx == pytest.approx(ref["intrinsics"][0, 0] * 64, rel=1e-4)
    channels, _ = read_exr(result.file(ResultName.DEPTH))
    valid = ref["mask"][0] > 0.5
    np.testing.assert_allclose(channels["B"][valid], ref["depth"][0][valid], rtol=1e-4)
    assert PILImage.open(result.file(ResultName.NORMAL)).size == (64, 48)
