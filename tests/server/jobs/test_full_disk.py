"""A disk that fills up while a job writes (a real, small tmpfs: tests/kit/small_disk.py; skipped unless root):
the job's result says which folder, what is free and how far it came; a full frame-cache disk never fails the
video job, which runs on without keeping frames."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

from imageforge.contract import ResourceExhaustedError
from imageforge.contract.errors import DiskFullError
from imageforge.contract.results import ResultName
from imageforge.server.job_steps.frame_cache import CACHE_FOLDER
from tests.kit.small_disk import small_disk


def noise(path: Path, size: int, seed: int = 0) -> Path:
    """Pixels no compressor can shrink, so every byte the result needs reaches the disk."""
    pixels = np.random.default_rng(seed).integers(0, 256, (size, size, 3), dtype=np.uint8)
    PILImage.fromarray(pixels).save(path)
    return path


def noise_sequence(folder: Path, count: int, size: int) -> Path:
    folder.mkdir()
    for number in range(1, count + 1):
        noise(folder / f"shot_{number:04d}.png", size, seed=number)
    return folder


@pytest.fixture
def full_disk_root(tmp_path: Path):
    with small_disk(tmp_path / "small disk", 1024 * 1024) as folder:
        yield folder


class TestAResultThatDoesNotFit:
    @pytest.fixture
    def storage_root(self, full_disk_root: Path) -> Path:  # the storage root itself is on the 1 MiB disk
        return full_disk_root

    def test_says_the_disk_is_full_where_and_how_far_the_job_came(self, run_job, storage_root, tmp_path):
        image = noise(tmp_path / "photo.png", 800)  # its foreground: an 800² RGBA PNG of noise, about 2 MB

        with pytest.raises(ResourceExhaustedError) as raised:
            run_job("remove-background", {"input": str(image)})

        error = raised.value
        assert isinstance(error, DiskFullError)
        folder = storage_root / "jobs" / "job-1"
        assert error.folder == folder
        assert str(error).startswith(f"The disk holding {folder} is full (")
        assert " free) while writing foreground.png: " in str(error) and " were written before it ran out" in str(error)
        assert str(error).endswith("; free some space or choose a Storage Root on a larger disk, then try again.")
        assert "Errno" not in str(error) and "unexpectedly" not in str(error)
        assert sorted(path.name for path in folder.iterdir()) == ["job-state.json", "job.log"]
        state = json.loads((folder / "job-state.json").read_text())
        assert (state["state"], state["error"]) == ("failed", str(error))


class TestADiskFullBeforeTheJobStarts:
    @pytest.fixture
    def storage_root(self, full_disk_root: Path) -> Path:
        return full_disk_root

    def test_says_the_disk_is_full_and_leaves_no_temporary(self, run_job, storage_root, tmp_path):
        # Found by the independent re-test: the state marker written first ('running') met the full disk outside
        # the handler's guard, and BlendJob reported the raw "[Errno 28] No space left on device".
        image = noise(tmp_path / "photo.png", 8)
        (storage_root / "jobs").mkdir()
        ballast = storage_root / "ballast"
        with contextlib.suppress(OSError), ballast.open("wb") as stream:
            while True:
                stream.write(b"\0" * 4096)
                stream.flush()

        with pytest.raises(ResourceExhaustedError) as raised:
            run_job("remove-background", {"input": str(image)})

        folder = storage_root / "jobs" / "job-1"
        error = raised.value
        assert isinstance(error, DiskFullError) and error.folder == folder
        assert str(error).startswith(f"The disk holding {folder} is full (0 B free) while starting Remove Background; ")
        assert "Errno" not in str(error)
        assert [path.name for path in folder.iterdir()] == []  # no empty '.job-state.json.tmp' left behind


def test_a_full_frame_cache_disk_does_not_fail_the_video_job(run_job, storage_root: Path, tmp_path: Path):
    request = {"input": str(noise_sequence(tmp_path / "shot", 4, 128)), "sequence_output": "png_sequence"}
    expected, _ = run_job("remove-background", request)  # each cached 128² RGBA 8-bit frame is about 66 kB

    with small_disk(storage_root / CACHE_FOLDER, 150 * 1024) as cache_disk:
        result, context = run_job("remove-background", request)
        assert list(cache_disk.iterdir()) == []  # the frames it had kept were deleted when the disk filled

    assert "The disk holding the frame cache (" in context.log_text
    assert "this run goes on without keeping finished frames" in context.log_text
    assert context.log_text.count("is full") == 1  # one warning, not one per frame
    for number in range(1, 5):
        name = f"frame_{number:04d}.png"
        got = np.asarray(PILImage.open(result[ResultName.FOREGROUND].with_name(name)))
        np.testing.assert_array_equal(got, np.asarray(PILImage.open(expected[ResultName.FOREGROUND].with_name(name))))
