"""generate-multiview-cameras on the kit Depth Anything 3 model, whose cameras are known.

Within one run the kit model puts view i at world-to-camera [I | (0.1·i, 0, 0)] with a 56 px focal in its
56 px square, and depth = 3 + the view's mean normalised colour. A window therefore restarts its path at the
origin: only a correct alignment through the shared frames turns six windows back into one straight path.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from imageforge.client.job_runner import run_job
from imageforge.contract import JobId
from imageforge.contract.cameras import MultiviewCameras
from imageforge.contract.provenance import Provenance
from imageforge.contract.results import ResultName
from imageforge.server.geometry.attention import GIB, AttentionEstimate
from imageforge.server.jobs.multiview_cameras import MIN_WINDOW, plan_windows
from imageforge.server.models.da3 import IMAGENET_MEAN, IMAGENET_STD
from tests.kit.onnx_models import build_da3

from .geometry_kit import (  # noqa: F401  (fixtures)
    catalog_entry,
    jobs_fixture,
    model_path,
    real_server_fixture,
    use_catalog_fixture,
    write_rgba,
)

JOB = JobId.GENERATE_MULTIVIEW_CAMERAS
BASELINE = 0.1


def colours(count: int) -> np.ndarray:
    return np.random.default_rng(7).random((count, 3), dtype=np.float32)


def expected_depth(colour: np.ndarray) -> float:
    return 3.0 + float(((colour - IMAGENET_MEAN) / IMAGENET_STD).mean())


@pytest.fixture(name="sequence")
def sequence_fixture(tmp_path: Path) -> tuple[Path, np.ndarray]:
    """Eight 64 × 48 frames, frame_0001.png … frame_0008.png, each one uniform colour."""
    folder = tmp_path / "frames"
    folder.mkdir()
    palette = colours(8)
    for number, colour in enumerate(palette, start=1):
        write_rgba(folder / f"frame_{number:04d}.png", np.broadcast_to(colour, (48, 64, 3)))
    quantised = np.round(palette * 255) / 255
    return folder, quantised


@pytest.fixture(name="da3_catalog")
def da3_catalog_fixture(use_catalog, storage_root: Path):
    def install(*, cameras: bool = True, size=56, export_revision: str | None = "2", **options) -> None:
        use_catalog([catalog_entry("KIT_DA3", "multiview", "da3", **options)])
        path = model_path(storage_root, "KIT_DA3")
        build_da3(path, size=size, cameras=cameras, baseline=BASELINE, export_revision=export_revision)

    return install


def straight_path(count: int) -> np.ndarray:
    path = np.tile(np.eye(3, 4), (count, 1, 1))
    path[:, 0, 3] = BASELINE * np.arange(count)
    return path


def check_depth(outcome, palette: np.ndarray, numbers: list[int]) -> None:
    with np.load(outcome.file(ResultName.DEPTH)) as archive:
        assert set(archive.files) == {"depth", "confidence", "frames"}
        depth, confidence, frames = archive["depth"], archive["confidence"], archive["frames"]
    assert depth.shape == confidence.shape == (len(numbers), 48, 64) and depth.dtype == np.float32
    assert frames.tolist() == numbers
    for index, number in enumerate(numbers):
        np.testing.assert_allclose(depth[index], expected_depth(palette[number - 1]), atol=2e-3)
    np.testing.assert_allclose(confidence, 1.0, atol=1e-5)


def test_one_run_gives_the_known_cameras_in_source_pixels(jobs, da3_catalog, sequence):
    da3_catalog()
    folder, palette = sequence
    outcome = jobs.run(JOB, {"input": str(folder), "device": "cpu"})
    assert outcome.state == "succeeded", outcome.error
    cameras = MultiviewCameras.read(outcome.file(ResultName.CAMERAS))
    assert cameras.image_size == (64, 48) and cameras.windows == ((0, 7),) and cameras.version == 1
    assert "world-to-camera" in cameras.convention and "OpenCV" in cameras.convention
    assert [frame.frame for frame in cameras.frames] == list(range(1, 9))
    np.testing.assert_allclose([frame.extrinsics for frame in cameras.frames], straight_path(8), atol=1e-6)
    for frame in cameras.frames:  # 56 px focal in the 56 px square = 64 px in the 64 × 48 frame, centred
        assert (frame.fx, frame.fy, frame.cx, frame.cy) == pytest.approx((64.0, 64.0, 32.0, 24.0))
    check_depth(outcome, palette, list(range(1, 9)))
    assert "Aligning windows" not in outcome.messages
    assert not [path for path in outcome.directory.iterdir() if path.name.startswith(".")]  # scratch removed


def test_windows_are_aligned_into_one_camera_path(jobs, da3_catalog, sequence):
    da3_catalog(attention_heads=5000)  # 4 views of 16 patches fit in 0.1 GiB, 5 do not
    folder, palette = sequence
    outcome = jobs.run(JOB, {"input": str(folder), "windowed": True, "memory_budget_gib": 0.1, "device": "cpu"})
    assert outcome.state == "succeeded", outcome.error
    cameras = MultiviewCameras.read(outcome.file(ResultName.CAMERAS))
    assert cameras.windows == ((0, 3), (1, 4), (2, 5), (3, 6), (4, 7))  # four fifths of 4 frames: 3 shared
    np.testing.assert_allclose(
        [frame.extrinsics for frame in cameras.frames], straight_path(8), atol=1e-6
    )  # float32 outputs
    check_depth(outcome, palette, list(range(1, 9)))
    assert outcome.messages.count("Aligning windows") == 4


def test_frame_step_and_max_frames_choose_the_frames(jobs, da3_catalog, sequence):
    da3_catalog()
    folder, palette = sequence
    outcome = jobs.run(JOB, {"input": str(folder), "frame_step": 3, "max_frames": 2})
    assert outcome.state == "succeeded", outcome.error
    cameras = MultiviewCameras.read(outcome.file(ResultName.CAMERAS))
    assert [frame.frame for frame in cameras.frames] == [1, 4]
    check_depth(outcome, palette, [1, 4])


def test_over_the_budget_is_refused_with_what_fits_before_reading_frames(jobs, da3_catalog, sequence):
    da3_catalog(attention_heads=5000)
    outcome = jobs.run(JOB, {"input": str(sequence[0]), "memory_budget_gib": 0.1})
    assert outcome.state == "failed"
    assert outcome.error.startswith("8 frames at 56 px need about 0.3 GiB of attention memory (budget 0.1 GiB)")
    assert outcome.error.endswith("use at most 4 frames, or turn on windowed processing.")
    assert not any(message.startswith("Reading frame") for message in outcome.messages)


def test_two_frames_through_an_ungated_export_are_refused_before_reading_frames(jobs, da3_catalog, sequence):
    """An export without the reference-view gate reorders two views where DA3 does not (issue 21)."""
    da3_catalog(export_revision=None)
    outcome = jobs.run(JOB, {"input": str(sequence[0]), "max_frames": 2})
    assert outcome.state == "failed"
    assert "reorders 2 views where Depth Anything 3 does not" in outcome.error
    assert "convert the model again" in outcome.error
    assert not any(message.startswith("Reading frame") for message in outcome.messages)
    three = jobs.run(JOB, {"input": str(sequence[0]), "max_frames": 3})  # three views: DA3 chooses too
    assert three.state == "succeeded", three.error


def test_two_frames_through_a_gated_export_give_the_known_cameras(jobs, da3_catalog, sequence):
    da3_catalog()
    outcome = jobs.run(JOB, {"input": str(sequence[0]), "max_frames": 2})
    assert outcome.state == "succeeded", outcome.error
    cameras = MultiviewCameras.read(outcome.file(ResultName.CAMERAS))
    np.testing.assert_allclose([frame.extrinsics for frame in cameras.frames], straight_path(2), atol=1e-6)


def test_a_fixed_size_export_letterboxing_frames_says_so_in_the_provenance(jobs, da3_catalog, sequence):
    da3_catalog()  # 56 × 56 canvas, 64 × 48 frames
    outcome = jobs.run(JOB, {"input": str(sequence[0])})
    assert outcome.state == "succeeded", outcome.error
    (warning,) = Provenance.read(outcome.file(ResultName.PROVENANCE)).input_warnings
    assert warning.startswith("Kit Da3 takes 56×56 pictures only, so the 64×48 frames were letterboxed (padded)")
    assert "Prepare DA3 camera model…" in warning and "'imageforge models convert DA3_SMALL'" in warning
    assert warning in (outcome.directory / "job.log").read_text()


def test_a_dynamic_export_warns_of_nothing(jobs, da3_catalog, sequence):
    da3_catalog(size=None)
    outcome = jobs.run(JOB, {"input": str(sequence[0])})
    assert outcome.state == "succeeded", outcome.error
    assert Provenance.read(outcome.file(ResultName.PROVENANCE)).input_warnings == ()


class _Planned:
    """What plan_windows reads of an adapter: its attention estimate at its size and heads."""

    size, heads = 56, 5000

    def attention(self, views: int) -> AttentionEstimate:
        return AttentionEstimate(views, self.size, self.heads)


@pytest.mark.parametrize("count", [*range(2, 40), 97, 300])
@pytest.mark.parametrize("fits", [3, 4, 5, 7, 12])
def test_every_window_is_at_least_the_safe_size_and_they_chain(count, fits):
    adapter = _Planned()
    budget = AttentionEstimate(fits, adapter.size, adapter.heads).bytes / GIB * 1.0001
    windows = plan_windows(adapter, count, budget, windowed=True)
    assert windows[0].start == 0 and windows[-1].stop == count
    if count <= fits:  # one run over every frame (two frames included: the export's gate handles them)
        assert windows == [range(count)]
    else:
        assert all(len(window) == fits >= MIN_WINDOW for window in windows)
    for earlier, later in zip(windows, windows[1:], strict=False):
        assert len(set(earlier) & set(later)) >= 2 and later.stop > earlier.stop


def test_windows_too_small_to_align_are_refused(jobs, da3_catalog, sequence):
    da3_catalog(attention_heads=100_000)
    outcome = jobs.run(JOB, {"input": str(sequence[0]), "memory_budget_gib": 0.1, "windowed": True})
    assert outcome.state == "failed" and outcome.error.startswith("Windowed processing needs 3 frames per window")


def test_a_depth_only_export_cannot_make_cameras(jobs, da3_catalog, sequence):
    da3_catalog(cameras=False)
    outcome = jobs.run(JOB, {"input": str(sequence[0])})
    assert outcome.state == "failed" and "predicts depth only" in outcome.error
    assert outcome.error.endswith("Prepare DA3 camera model… (or 'imageforge models convert DA3_SMALL') makes once.")


def test_a_still_image_is_not_a_sequence(jobs, sequence):
    outcome = jobs.run(JOB, {"input": str(sequence[0] / "frame_0001.png")})
    assert outcome.state == "failed" and "is a single image" in outcome.error


def test_cancelling_while_aligning_keeps_nothing(jobs, da3_catalog, sequence):
    da3_catalog(attention_heads=5000)
    parameters = {"input": str(sequence[0]), "windowed": True, "memory_budget_gib": 0.1}
    outcome = jobs.run(JOB, parameters, cancel_when=lambda message: message == "Aligning windows")
    assert outcome.state == "cancelled"
    assert {path.name for path in outcome.directory.iterdir()} <= {"job.log", "job-state.json"}


@pytest.mark.slow
def test_the_real_server_downloads_the_model_and_aligns_windows(real_server, sequence, tmp_path):
    model = build_da3(tmp_path / "kit-da3.onnx", size=56, baseline=BASELINE).read_bytes()
    runtime = real_server([(catalog_entry("KIT_DA3", "multiview", "da3", attention_heads=5000), model)])
    parameters = {"input": str(sequence[0]), "windowed": True, "memory_budget_gib": 0.1, "device": "cpu"}
    result = run_job(runtime, JOB.value, parameters)
    cameras = MultiviewCameras.read(result.file(ResultName.CAMERAS))
    assert len(cameras.windows) == 5
    np.testing.assert_allclose(
        [frame.extrinsics for frame in cameras.frames], straight_path(8), atol=1e-6
    )  # float32 outputs
    with np.load(result.file(ResultName.DEPTH)) as archive:
        assert archive["depth"].shape == (8, 48, 64)
