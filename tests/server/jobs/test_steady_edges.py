"""Steady edges on a synthetic moving edge: the static soft edge flickers less, the moving edge does not lag."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from blendjob.server import JobCancelled
from PIL import Image as PILImage

from imageforge.contract.results import ResultName
from imageforge.server.job_steps.steady_edges import SteadyEdges
from tests.kit.moving_edge import edge_lag, flicker, moving_edge_clip


def steadied(clip) -> np.ndarray:
    steady = SteadyEdges()
    return np.stack([steady(pixels, matte) for pixels, matte in zip(clip.pixels, clip.model, strict=True)])


def test_flicker_is_reduced_where_nothing_moves_and_the_moving_edge_keeps_up():
    clip = moving_edge_clip()
    result = steadied(clip)
    assert flicker(clip.truth, clip.static) == 0.0
    before, after = flicker(clip.model, clip.static), flicker(result, clip.static)
    assert after < 0.5 * before  # measured: about a sixth (docs/benchmarks.md, bench/steady_edges.py)
    assert edge_lag(clip.truth, clip) == 0.0
    assert edge_lag(result, clip) <= clip.speed  # at most one frame's motion behind
    np.testing.assert_array_equal(result[0], clip.model[0])  # the first frame is the model's own matte


def test_a_naive_average_would_lag_which_is_what_the_guide_prevents():
    clip = moving_edge_clip()
    unguided = SteadyEdges(tolerance=1e9)  # the picture never "changes": a plain moving average
    result = np.stack([unguided(p, m) for p, m in zip(clip.pixels, clip.model, strict=True)])
    assert edge_lag(result, clip) > clip.speed  # so the lag test above can fail


def test_the_job_option_steadies_a_clip_and_resume_continues_the_smoothing(run_job, tmp_path: Path):
    folder = tmp_path / "shot"
    folder.mkdir()
    clip = moving_edge_clip(frames=6, height=16, width=96)
    for number, pixels in enumerate(clip.pixels, start=1):
        PILImage.fromarray(np.round(pixels * 255).astype(np.uint8)).save(folder / f"shot_{number:04d}.png")
    request = {"input": str(folder), "sequence_output": "png_sequence", "output_kind": "alpha"}
    plain, _ = run_job("remove-background", request)
    steady, context = run_job("remove-background", {**request, "steady_edges": True})
    assert "Steady edges" in context.log_text

    def mattes(result) -> np.ndarray:
        first = result[ResultName.ALPHA]
        return np.stack(
            [
                np.asarray(PILImage.open(first.with_name(f"frame_{n:04d}.png")), dtype=np.float32) / 65535
                for n in range(1, 7)
            ]
        )

    raw, smoothed = mattes(plain), mattes(steady)
    np.testing.assert_array_equal(smoothed[0], raw[0])
    # The kit model is deterministic, so where the picture is still the mattes agree; the filter is applied
    # frame by frame exactly as SteadyEdges does it.
    expected = SteadyEdges()
    for index in range(6):
        pixels = clip.pixels[index]
        quantised = np.round(pixels * 255) / 255
        np.testing.assert_allclose(smoothed[index], expected(quantised, raw[index]), atol=2 / 65535)
    assert re.search(r"Model ran 6 time\(s\)", context.log_text)


def test_a_resumed_steady_run_continues_the_smoothing_from_the_cached_frames(run_job, tmp_path: Path):
    folder = tmp_path / "shot"
    folder.mkdir()
    clip = moving_edge_clip(frames=6, height=16, width=96)
    for number, pixels in enumerate(clip.pixels, start=1):
        PILImage.fromarray(np.round(pixels * 255).astype(np.uint8)).save(folder / f"shot_{number:04d}.png")
    request = {"input": str(folder), "sequence_output": "png_sequence", "output_kind": "alpha", "steady_edges": True}
    fresh, _ = run_job("remove-background", request)
    with pytest.raises(JobCancelled):
        run_job("remove-background", request, cancel_when=lambda message: message.startswith("Frame 4/6"))
    resumed, context = run_job("remove-background", request)
    assert "Reused" in context.log_text
    for number in range(1, 7):
        name = f"frame_{number:04d}.png"
        expected = np.asarray(PILImage.open(fresh[ResultName.ALPHA].with_name(name)), dtype=np.float32)
        got = np.asarray(PILImage.open(resumed[ResultName.ALPHA].with_name(name)), dtype=np.float32)
        assert np.abs(got - expected).max() <= 2  # 16-bit code values: the cached state is the 16-bit result
