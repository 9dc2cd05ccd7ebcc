"""debug-ben2 and debug-upscale in-process: raw outputs, the post-processed frame, and an honest summary."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image as PILImage

from imageforge.contract.results import ResultName
from tests.kit.onnx_models import BEN2_LUMA, upscaler_reference


def test_debug_ben2_keeps_raw_output_frame_and_summary(run_job, tmp_path: Path):
    pixels = np.random.default_rng(1).integers(0, 256, size=(64, 64, 3), dtype=np.uint8)
    source = tmp_path / "square.png"
    PILImage.fromarray(pixels).save(source)
    result, _ = run_job("debug-ben2", {"input": str(source)})
    assert {name: path.name for name, path in result.items()} == {
        "raw": "raw.npz",
        "summary": "summary.json",
        "provenance": "provenance.json",
    }
    raw = np.load(result[ResultName.RAW])
    assert sorted(raw.files) == ["frame", "input", "raw_output"]
    assert raw["raw_output"].dtype == np.float16 and raw["raw_output"].shape == (1, 1, 64, 64)
    luma = (pixels / 255) @ np.array(BEN2_LUMA)
    np.testing.assert_allclose(raw["raw_output"][0, 0], luma, atol=2e-3)  # normalization none: luma itself
    np.testing.assert_allclose(raw["frame"][..., 3], (luma - luma.min()) / (luma.max() - luma.min()), atol=3e-3)
    summary = json.loads(result[ResultName.SUMMARY].read_text())
    assert summary["provider"] == "CPUExecutionProvider" and summary["device"] == "cpu"
    assert summary["model"] == "KIT_BEN2" and summary["normalization"] == "none"
    assert summary["signature"]["outputs"] == [{"name": "output", "shape": [1, 1, 64, 64], "type": "tensor(float16)"}]
    stats = summary["arrays"]["raw_output"]
    assert stats["shape"] == [1, 1, 64, 64] and stats["dtype"] == "float16"
    assert abs(stats["max"] - luma.max()) < 2e-3 and stats["non_finite"] == 0
    assert {"load", "read", "preprocess", "run", "postprocess", "total"} <= set(summary["timings_s"])
    assert summary["runs"] == 1


def test_debug_upscale_keeps_the_first_tile_raw_and_the_whole_frame(run_job, tmp_path: Path):
    pixels = np.random.default_rng(3).integers(0, 256, size=(20, 24, 3), dtype=np.uint8)
    source = tmp_path / "small.png"
    PILImage.fromarray(pixels).save(source)
    result, _ = run_job("debug-upscale", {"input": str(source)})
    raw = np.load(result[ResultName.RAW])
    values = (pixels / 255).astype(np.float32)
    expected = upscaler_reference(values.transpose(2, 0, 1)[None], receptive_radius=2)
    np.testing.assert_allclose(raw["raw_output"], expected, atol=1e-5)  # one tile: the whole image
    np.testing.assert_allclose(raw["frame"], np.clip(expected[0].transpose(1, 2, 0), 0, 1), atol=1e-5)
    summary = json.loads(result[ResultName.SUMMARY].read_text())
    assert summary["provider"] == "CPUExecutionProvider" and summary["model_scale"] == 4
    assert summary["tiles"]["count"] == 1 and summary["analysed_size"] == [24, 20]
    assert summary["arrays"]["frame"]["shape"] == [80, 96, 3]


def test_debug_jobs_refuse_images_whose_full_size_arrays_would_not_fit_before_loading_a_model(run_job, tmp_path):
    import pytest

    from imageforge.contract import ResourceExhaustedError
    from imageforge.server.media.png_stream import write_png

    large = write_png(tmp_path / "large.png", np.zeros((4096, 4097), np.uint8))
    for job in ("debug-ben2", "debug-upscale", "debug-moge"):
        with pytest.raises(ResourceExhaustedError) as refused:
            run_job(job, {"input": str(large)})
        assert str(refused.value) == (
            "Debug jobs keep every intermediate array at full size, so they take images of at most 16 megapixels "
            "(4096 × 4096); 'large.png' is 4097 × 4096, so scale it down first."
        )
    square = write_png(tmp_path / "square.png", np.zeros((4096, 4096), np.uint8))
    result, context = run_job("debug-upscale", {"input": str(square), "max_input_size": 64})
    assert "Preparing model" in context.messages and result[ResultName.RAW].is_file()  # exactly the limit still runs
