"""debug-moge and debug-da3: raw model outputs, the post-processed frame, and a summary that says what ran."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from imageforge.client.job_runner import run_job
from imageforge.contract import JobId
from imageforge.contract.results import ResultName
from tests.kit.onnx_models import build_da3, build_moge2, moge2_reference

from .geometry_kit import (  # noqa: F401  (fixtures)
    catalog_entry,
    jobs_fixture,
    model_path,
    real_server_fixture,
    use_catalog_fixture,
    write_rgba,
)

KNOWN = {"focal": 1.1, "shift": 0.8, "plane": (3.0, 0.45), "metric_scale": 1.7, "mask_border": 2}


@pytest.fixture
def kit(use_catalog, storage_root: Path):
    def install(*, da3_cameras: bool = True, **da3_options) -> None:
        use_catalog(
            [
                catalog_entry("KIT_MOGE2", "geometry", "moge2"),
                catalog_entry("KIT_DA3", "multiview", "da3", **da3_options),
            ]
        )
        build_moge2(model_path(storage_root, "KIT_MOGE2"), **KNOWN)
        build_da3(model_path(storage_root, "KIT_DA3"), size=56, cameras=da3_cameras)

    return install


@pytest.fixture
def photo(tmp_path: Path) -> Path:
    return write_rgba(tmp_path / "photo.png", np.random.default_rng(4).random((48, 64, 3), dtype=np.float32))


@pytest.fixture
def frames(tmp_path: Path) -> Path:
    folder = tmp_path / "frames"
    folder.mkdir()
    for number in range(1, 4):
        write_rgba(folder / f"f_{number:03d}.png", np.full((48, 64, 3), number / 4, np.float32))
    return folder


def read(outcome) -> tuple[dict[str, np.ndarray], dict]:
    with np.load(outcome.file(ResultName.RAW)) as archive:
        arrays = {name: archive[name] for name in archive.files}
    return arrays, json.loads(outcome.file(ResultName.SUMMARY).read_text())


def test_debug_moge_keeps_inputs_raw_outputs_and_the_metric_frame(jobs, kit, photo):
    kit()
    outcome = jobs.run(JobId.DEBUG_MOGE, {"input": str(photo), "device": "cpu"})
    assert outcome.state == "succeeded", outcome.error
    arrays, summary = read(outcome)
    ref = moge2_reference(1, 48, 64, **KNOWN)
    assert arrays["input_image"].shape == (1, 3, 48, 64) and arrays["input_num_tokens"].shape == ()
    assert {name for name in arrays if name.startswith("raw_")} == {
        "raw_points",
        "raw_normal",
        "raw_mask",
        "raw_metric_scale",
    }
    np.testing.assert_allclose(arrays["raw_points"], ref["points"], rtol=1e-5, atol=1e-6)
    valid = ref["mask"][0] > 0.5
    np.testing.assert_array_equal(arrays["frame_valid"], valid)
    np.testing.assert_allclose(arrays["frame_depth"][valid], ref["depth"][0][valid], rtol=1e-4)
    np.testing.assert_allclose(arrays["frame_intrinsics"], ref["intrinsics"], rtol=1e-4)
    assert (summary["provider"], summary["device"], summary["requested_device"]) == (
        "CPUExecutionProvider",
        "cpu",
        "cpu",
    )
    assert summary["signature"]["inputs"] == [
        {"name": "image", "shape": ["batch", 3, "height", "width"], "type": "tensor(float)"},
        {"name": "num_tokens", "shape": [], "type": "tensor(int64)"},
    ]
    assert summary["arrays"]["raw_mask"]["shape"] == [1, 48, 64] and summary["arrays"]["raw_mask"]["max"] == 1.0
    assert summary["arrays"]["raw_metric_scale"]["min"] == pytest.approx(1.7)
    assert summary["num_tokens"] == 3600 and summary["analysed_size"] == [64, 48] and summary["normal_head"]
    assert summary["intrinsics_px"]["fx"] == pytest.approx(ref["intrinsics"][0, 0] * 64, rel=1e-4)
    assert summary["valid_fraction"] == pytest.approx(valid.mean())
    assert set(summary["timings_s"]) >= {"load", "read", "preprocess", "run", "postprocess", "total"}
    assert summary["runs"] == 1 and summary["model_seconds"] > 0


def test_debug_da3_keeps_cameras_in_source_pixels(jobs, kit, frames):
    kit()
    outcome = jobs.run(JobId.DEBUG_DA3, {"input": str(frames)})
    assert outcome.state == "succeeded", outcome.error
    arrays, summary = read(outcome)
    assert arrays["input"].shape == (3, 3, 56, 56)
    assert arrays["raw_extrinsics"].shape == (1, 3, 3, 4) and arrays["raw_depth"].shape == (1, 3, 56, 56)
    assert arrays["frame_depth"].shape == arrays["frame_confidence"].shape == (3, 48, 64)
    np.testing.assert_allclose(arrays["frame_extrinsics"][:, 0, 3], [0.0, 0.1, 0.2], atol=1e-6)
    np.testing.assert_allclose(arrays["frame_intrinsics_px"], np.tile([64.0, 64.0, 32.0, 24.0], (3, 1)), atol=1e-4)
    assert summary["views"] == 3 and summary["cameras"] is True
    assert summary["placement"] == {"canvas": [56, 56], "box": [0, 7, 56, 42]}  # fixed square: letterboxed
    assert summary["attention_bytes"] == 6 * (3 * 16) ** 2 * 4
    assert summary["arrays"]["frame_depth"]["min"] < summary["arrays"]["frame_depth"]["max"]  # three colours


def test_debug_da3_runs_a_depth_only_export_on_a_still(jobs, kit, photo):
    kit(da3_cameras=False)
    outcome = jobs.run(JobId.DEBUG_DA3, {"input": str(photo)})
    assert outcome.state == "succeeded", outcome.error
    arrays, summary = read(outcome)
    assert arrays["frame_depth"].shape == (1, 48, 64) and "frame_extrinsics" not in arrays
    assert summary["cameras"] is False and summary["views"] == 1


def test_debug_da3_refuses_more_views_than_the_default_budget_holds(jobs, kit, frames):
    kit(attention_heads=800_000)  # two views fit in 4 GiB, three do not
    outcome = jobs.run(JobId.DEBUG_DA3, {"input": str(frames)})
    assert outcome.state == "failed" and outcome.error.endswith("debug at most 2 frames at once.")


@pytest.mark.slow
def test_both_debug_jobs_on_the_real_server(real_server, photo, frames, tmp_path):
    moge = build_moge2(tmp_path / "moge.onnx", **KNOWN).read_bytes()
    da3 = build_da3(tmp_path / "da3.onnx", size=56).read_bytes()
    runtime = real_server(
        [(catalog_entry("KIT_MOGE2", "geometry", "moge2"), moge), (catalog_entry("KIT_DA3", "multiview", "da3"), da3)]
    )
    first = run_job(runtime, JobId.DEBUG_MOGE.value, {"input": str(photo), "device": "cpu"})
    summary = json.loads(first.file(ResultName.SUMMARY).read_text())
    assert summary["provider"] == "CPUExecutionProvider" and summary["model"] == "KIT_MOGE2"
    second = run_job(runtime, JobId.DEBUG_DA3.value, {"input": str(frames), "device": "cpu"})
    with np.load(second.file(ResultName.RAW)) as archive:
        assert archive["frame_depth"].shape == (3, 48, 64)
