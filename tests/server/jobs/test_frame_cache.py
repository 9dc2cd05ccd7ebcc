"""Resume: a cancelled video or sequence job re-run with the same input and settings reuses its finished frames
(jobs/frame_cache.py). The kit models count their runs in the job log ("Model ran n time(s)")."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import av
import numpy as np
import pytest
from blendjob.server import JobCancelled
from PIL import Image as PILImage

from imageforge.contract import InputError
from imageforge.contract.results import ResultName
from imageforge.server.job_steps import frame_cache
from imageforge.server.job_steps.frame_cache import CACHE_FOLDER, MAX_AGE_DAYS, FrameCache, FrameKey, prune
from imageforge.server.job_steps.frame_loop import format_duration

from .conftest import read_video, write_video

PROBE_RUNS = {"remove-background": 0, "upscale-image": 1}  # the kit upscaler declares no scale: one probe a job


def frames_run(context, job: str = "upscale-image") -> int:
    """Frames the model ran on, from the job log's "Model ran n time(s)" (one run per frame, one tile)."""
    return int(re.search(r"Model ran (\d+) time\(s\)", context.log_text).group(1)) - PROBE_RUNS[job]


def shot(folder: Path, count: int = 5) -> Path:
    folder.mkdir()
    for number in range(1, count + 1):
        pixels = np.zeros((32, 48, 3), dtype=np.uint8)
        pixels[:, : 8 * number] = 220  # a moving edge: every frame differs
        pixels[..., 2] = 30 * number
        PILImage.fromarray(pixels).save(folder / f"shot_{number:04d}.png")
    return folder


def cancel_at(frame: str):
    return lambda message: message.startswith(f"Frame {frame} ")


def cached_frames(storage_root: Path) -> int:
    """Frames in the one cache there is; they are numbered from the first frame without gaps."""
    (cache,) = caches(storage_root)
    names = sorted(path.name for path in cache.iterdir())
    assert names == [f"{index:06d}.npz" for index in range(len(names))]
    return len(names)


def caches(storage_root: Path) -> list[Path]:
    root = storage_root / CACHE_FOLDER
    return sorted(root.iterdir()) if root.is_dir() else []


@pytest.mark.parametrize(
    ("job", "parameters", "result"),
    [
        ("remove-background", {"sequence_output": "png_sequence"}, "foreground"),
        ("upscale-image", {"sequence_output": "png_sequence", "scale": 2}, "upscale"),
    ],
)
def test_a_cancelled_job_rerun_reuses_its_finished_frames(run_job, storage_root, tmp_path, job, parameters, result):
    source = shot(tmp_path / "shot")
    request = {"input": str(source), **parameters}
    fresh, fresh_context = run_job(job, request)  # the reference: every frame computed
    assert frames_run(fresh_context, job) == 5
    assert caches(storage_root) == []  # a finished job leaves no cache behind

    with pytest.raises(JobCancelled):
        run_job(job, request, cancel_when=cancel_at("3/5"))  # stops during or right after frame 3
    finished = cached_frames(storage_root)
    assert finished in (2, 3)

    resumed, context = run_job(job, request)
    assert frames_run(context, job) == 5 - finished  # only the frames the cancelled run did not finish
    assert f"Reused {finished} frame(s)" in context.log_text
    for number in range(1, 6):
        name = f"frame_{number:04d}.png"
        expected = np.asarray(PILImage.open(fresh[result].with_name(name)))
        np.testing.assert_array_equal(np.asarray(PILImage.open(resumed[result].with_name(name))), expected)
    assert caches(storage_root) == []


def test_other_settings_a_changed_input_or_model_start_over(run_job, storage_root: Path, tmp_path: Path):
    source = write_video(tmp_path / "clip.mp4", [np.full((16, 16, 3), v, dtype=np.uint8) for v in (20, 90, 160, 230)])
    request = {"input": str(source), "scale": 2}
    with pytest.raises(JobCancelled):
        run_job("upscale-image", request, cancel_when=cancel_at("3/4"))
    finished = cached_frames(storage_root)
    with pytest.raises(JobCancelled):  # another scale: its own cache, the first one is kept
        run_job("upscale-image", {**request, "scale": 4}, cancel_when=cancel_at("2/4"))
    assert len(caches(storage_root)) == 2

    # Device and output container do not change pixels: the scale-2 cache is reused.
    _, context = run_job("upscale-image", {**request, "device": "cpu", "sequence_output": "png_sequence"})
    assert frames_run(context) == 4 - finished

    with pytest.raises(JobCancelled):
        run_job("upscale-image", request, cancel_when=cancel_at("3/4"))
    stamp = source.stat().st_mtime_ns + 5_000_000_000
    os.utime(source, ns=(stamp, stamp))  # the artist re-exported the clip
    _, context = run_job("upscale-image", request)
    assert frames_run(context) == 4

    model = storage_root / "models" / "kit_upscale" / "model.onnx"
    with pytest.raises(JobCancelled):
        run_job("upscale-image", request, cancel_when=cancel_at("3/4"))
    os.utime(model, ns=(stamp, stamp))  # a model without a declared hash is known by its size and time
    _, context = run_job("upscale-image", request)
    assert frames_run(context) == 4


def raw_video(path: Path, values: tuple[int, ...]) -> Path:
    """Flat 16×16 frames, uncompressed: every such clip of as many frames has the same byte size."""
    return write_video(path, [np.full((16, 16, 3), value, dtype=np.uint8) for value in values], raw=True)


def replace_keeping_size_and_times(clip: Path, values: tuple[int, ...]) -> None:
    """Another clip of the same byte size in the same place, its access and modification times set back."""
    before = clip.stat()
    raw_video(clip.with_name("other.mov"), values).replace(clip)
    os.utime(clip, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = clip.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


FIRST, SECOND = (20, 90, 160, 230), (230, 160, 90, 20)
UPSCALED = {"scale": 2, "sequence_output": "png_sequence"}


def sequence_pixels(result: dict) -> list[np.ndarray]:
    folder = result[ResultName.UPSCALE].parent
    return [np.asarray(PILImage.open(path)) for path in sorted(folder.iterdir())]


def test_a_clip_replaced_by_one_of_the_same_size_and_mtime_is_a_cache_miss(run_job, storage_root: Path, tmp_path):
    expected, _ = run_job("upscale-image", {"input": str(raw_video(tmp_path / "fresh.mov", SECOND)), **UPSCALED})
    clip = raw_video(tmp_path / "clip.mov", FIRST)
    request = {"input": str(clip), **UPSCALED}
    with pytest.raises(JobCancelled):
        run_job("upscale-image", request, cancel_when=cancel_at("3/4"))
    assert cached_frames(storage_root) >= 2
    replace_keeping_size_and_times(clip, SECOND)

    result, context = run_job("upscale-image", request)
    assert frames_run(context) == 4
    assert "Reused" not in context.log_text
    for got, want in zip(sequence_pixels(result), sequence_pixels(expected), strict=True):
        np.testing.assert_array_equal(got, want)


def test_cached_frames_of_another_picture_are_never_reused_even_when_the_file_looks_the_same(
    run_job, storage_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Where the file's identity survives a rewrite in place (Windows keeps the creation time `st_ctime` reports
    and the file id), only the decoded pixels can tell: the first frame whose picture differs discards the cache."""
    monkeypatch.setattr(frame_cache, "input_fingerprint", lambda source: ["the same file, as far as stat can tell"])
    expected, _ = run_job("upscale-image", {"input": str(raw_video(tmp_path / "fresh.mov", SECOND)), **UPSCALED})
    assert caches(storage_root) == []
    clip = raw_video(tmp_path / "clip.mov", FIRST)
    request = {"input": str(clip), **UPSCALED}
    with pytest.raises(JobCancelled):
        run_job("upscale-image", request, cancel_when=cancel_at("3/4"))
    finished = cached_frames(storage_root)
    replace_keeping_size_and_times(clip, SECOND)

    result, context = run_job("upscale-image", request)
    assert frames_run(context) == 4
    assert f"cached {finished} frame(s) of it; they were discarded and computed again" in context.log_text
    assert "Reused" not in context.log_text
    for got, want in zip(sequence_pixels(result), sequence_pixels(expected), strict=True):
        np.testing.assert_array_equal(got, want)

    with pytest.raises(JobCancelled):  # the same picture again: its frames are reused
        run_job("upscale-image", request, cancel_when=cancel_at("3/4"))
    finished = cached_frames(storage_root)
    _, context = run_job("upscale-image", request)
    assert frames_run(context) == 4 - finished
    assert f"Reused {finished} frame(s)" in context.log_text


def test_a_frame_is_reused_only_for_the_picture_it_was_computed_from(tmp_path: Path):
    cache = FrameCache(tmp_path / "cache")
    result = np.random.default_rng(0).random((4, 4, 3), dtype=np.float32)
    cache.put(FrameKey(0, b"a" * 32), result)
    cache.put(FrameKey(1, b"b" * 32), result)
    np.testing.assert_allclose(cache.get(FrameKey(0, b"a" * 32)), result, atol=1 / 65535)
    assert cache.get(FrameKey(1, b"c" * 32)) is None
    assert not cache.directory.exists()  # every frame of the changed input went, not only this one
    assert cache.stale_frames == 2
    assert cache.get(FrameKey(0, b"a" * 32)) is None


def test_a_damaged_cached_frame_is_computed_again(run_job, storage_root: Path, tmp_path: Path):
    request = {"input": str(shot(tmp_path / "shot", 3)), "sequence_output": "png_sequence"}
    with pytest.raises(JobCancelled):
        run_job("remove-background", request, cancel_when=cancel_at("3/3"))
    finished = cached_frames(storage_root)
    (cache,) = caches(storage_root)
    (cache / "000001.npz").write_bytes(b"not a frame")
    _, context = run_job("remove-background", request)
    assert frames_run(context, "remove-background") == 3 - finished + 1  # the damaged frame 2 is computed again


def test_caches_unused_for_a_week_are_pruned(tmp_path: Path):
    root = tmp_path / CACHE_FOLDER
    old, recent = root / "old", root / "recent"
    for folder in (old, recent):
        folder.mkdir(parents=True)
        (folder / "000000.npz").write_bytes(b"x")
    week_ago = time.time() - (MAX_AGE_DAYS + 1) * 86400
    os.utime(old, (week_ago, week_ago))
    assert prune(root) == [old]
    assert sorted(path.name for path in root.iterdir()) == ["recent"]


def test_remaining_time_reads_like_a_status_bar():
    assert [format_duration(s) for s in (0, 45.4, 130, 3900)] == ["0 s", "45 s", "2 m 10 s", "1 h 05 m"]


def test_a_frame_range_runs_only_those_frames_and_keeps_their_numbers(run_job, tmp_path: Path):
    request = {"input": str(shot(tmp_path / "shot")), "sequence_output": "png_sequence"}
    result, context = run_job("remove-background", {**request, "first_frame": 1, "frame_count": 2})
    folder = result[ResultName.FOREGROUND].parent
    assert sorted(path.name for path in folder.iterdir()) == ["frame_0002.png", "frame_0003.png"]
    assert frames_run(context, "remove-background") == 2
    assert [m.split(" · ")[0] for m in context.messages if m.startswith("Frame")][:1] == ["Frame 1/2"]
    with pytest.raises(InputError, match="has 5 frame\\(s\\); the range cannot start at frame 6"):
        run_job("remove-background", {**request, "first_frame": 5})


def test_a_video_range_starts_at_time_zero(run_job, tmp_path: Path):
    values = (20, 90, 160, 230)
    source = write_video(tmp_path / "clip.mp4", [np.full((16, 16, 3), v, dtype=np.uint8) for v in values])
    whole, _ = run_job("upscale-image", {"input": str(source), "scale": 2})
    result, _ = run_job("upscale-image", {"input": str(source), "scale": 2, "first_frame": 2})
    written = read_video(result[ResultName.UPSCALE])
    assert len(written) == 2
    expected = [float(frame.mean()) for frame in read_video(whole[ResultName.UPSCALE])[2:]]
    assert [float(frame.mean()) for frame in written] == pytest.approx(expected, abs=2)
    with av.open(str(result[ResultName.UPSCALE])) as container:
        assert next(container.decode(video=0)).pts == 0


@pytest.mark.parametrize("bits", [8, 16])
def test_a_reused_frame_has_exactly_the_codes_of_a_fresh_one(tmp_path: Path, bits: int):
    """Frames are kept at the result's own depth, so a resumed run writes the very codes a fresh one does."""
    from imageforge.server.media import to_integers

    cache = FrameCache(tmp_path / "cache")
    result = np.random.default_rng(bits).random((9, 11, 4), dtype=np.float32)
    cache.put(FrameKey(0, b"a" * 32), result, bits=bits)
    reused = cache.get(FrameKey(0, b"a" * 32))
    assert reused is not None and reused.dtype == np.float32
    np.testing.assert_array_equal(to_integers(reused, bits), to_integers(result, bits))
    with np.load(tmp_path / "cache" / "000000.npz") as stored:
        assert stored["pixels"].dtype == (np.uint8 if bits == 8 else np.uint16)
