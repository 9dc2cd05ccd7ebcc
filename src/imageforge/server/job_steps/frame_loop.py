"""Run a per-frame function over a video or frame sequence and write the results as the job asked.

Frames stream one at a time (decode → model → encode), so memory does not grow with the clip's length.
Each frame reports "Frame i/n · 2 m 10 s left" (the estimate from the frames the model ran on so far)
and checks cancellation; the last frame is told so that the model's arena is shrunk only then. With a
FrameCache (job_steps/frame_cache.py) every finished frame is kept, and frames an earlier, cancelled run
finished from the same decoded picture are taken from it instead of running the model again.

Results are a video (the source's codec family, frame rate, timestamps and audio; see
media/video_plan.py) or a numbered PNG sequence (always lossless, always keeps alpha), written by
job_steps/frame_output.py, which assemble-frames shares. A video family that cannot store transparency gets
the result over black, and the job says so.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import numpy as np

from ...contract.jobs import SequenceOutput
from ...contract.results import ResultName
from ..job_context import JobContext
from ..media import Frame, FrameSlot, MediaSource
from .frame_cache import FrameCache, FrameKey, frame_key
from .frame_output import FrameResultWriter
from .progress import JobProgress, Stage
from .write_behind import WriteBehind

Report = Callable[[float, str], None]  # (fraction of this frame done, detail such as "tile 3/12")
ProcessFrame = Callable[[Frame, bool, Report], np.ndarray]  # (frame, is last, report) → [0, 1] pixels


def stream_frames(
    context: JobContext,
    progress: JobProgress,
    source: MediaSource,
    *,
    result: ResultName,
    sequence_output: SequenceOutput,
    size: tuple[int, int],
    alpha: bool,
    bits: int,
    process: ProcessFrame,
    stage: Stage,
    positions: range | None = None,
    cache: FrameCache | None = None,
    on_reused: Callable[[Frame, np.ndarray], None] | None = None,
) -> dict[ResultName, str]:
    """Process every frame of `source`; returns {result: file name in the job folder}.

    `size` is the (width, height) of the frames `process` returns; `alpha` says whether they carry
    meaningful transparency; `bits` is the PNG depth for sequence output; the frames fill the job's `stage`.
    `positions` limits the frames (source.frame_range); a video result of a range that starts later than the
    first frame starts at time 0 and has no audio. `cache` (optional) keeps every processed frame and supplies
    the ones an earlier run finished; it is discarded once the result is written. `on_reused(frame, pixels)` is
    told of every frame taken from the cache (a temporal filter's state follows the frames it did not compute).
    """
    positions = positions or range(source.frame_count)
    total = max(len(positions), 1)
    timing = _FrameTiming(total)

    def frames(write: Callable[[Frame, np.ndarray], None]) -> None:
        for frame in source.frames(positions, note=context.log):
            index = min(frame.index - positions.start, total - 1)

            def report(done: float, detail: str, index: int = index) -> None:
                parts = [f"Frame {index + 1}/{total}", timing.left(index, done), detail]
                progress.within(stage, (index + done) / total, " · ".join(part for part in parts if part))

            report(0.0, "")
            key = frame_key(frame) if cache is not None else None
            cached = cache.get(key) if cache is not None and key is not None else None
            if cached is not None:
                timing.reused += 1
                if on_reused is not None:
                    on_reused(frame, cached)

                def write_reused(frame: Frame = frame, cached: np.ndarray = cached) -> None:
                    write(frame, cached)

                behind.submit(write_reused, cached)
                continue
            started = time.perf_counter()
            pixels = process(frame, index >= total - 1, report)
            timing.ran(time.perf_counter() - started)
            warnings.extend(cache_warnings)  # what the previous frame's write said, told from this thread
            cache_warnings.clear()
            for warning in warnings:
                context.log(warning, level="WARNING")
                progress.within(stage, (index + 1) / total, warning)
            warnings.clear()

            def keep_and_write(frame: Frame = frame, key: FrameKey | None = key, pixels: np.ndarray = pixels) -> None:
                if cache is not None and key is not None and (warning := cache.put(key, pixels, bits=bits)):
                    cache_warnings.append(warning)
                write(frame, pixels)

            behind.submit(keep_and_write, pixels)

    output = FrameResultWriter(
        context,
        source,
        result=result,
        sequence_output=sequence_output,
        size=size,
        alpha=alpha,
        bits=bits,
        trimmed=positions.start > 0,
    )
    warnings: list[str] = []
    cache_warnings: list[str] = []  # appended by the writer thread, read once its write is waited for
    with output:
        with WriteBehind(enabled=overlap_writes()) as behind:
            frames(lambda frame, pixels: output.write(FrameSlot(frame.index, frame.number, frame.pts), pixels))
        for warning in cache_warnings:
            context.log(warning, level="WARNING")
        progress.writing()
    _finish(context, cache, timing)
    return output.files


OVERLAP_VARIABLE = "IMAGEFORGE_FRAME_WRITE_BEHIND"


def overlap_writes() -> bool:
    """Write each frame beside the next one's model run (job_steps/write_behind.py); `0` writes in line (for
    benchmarks side by side, and as a way back)."""
    return os.environ.get(OVERLAP_VARIABLE, "1") != "0"


def _finish(context: JobContext, cache: FrameCache | None, timing: _FrameTiming) -> None:
    if cache is not None and cache.stale_frames:
        context.log(
            f"The input changed since an earlier run of this job cached {cache.stale_frames} frame(s) of it; "
            "they were discarded and computed again.",
            level="WARNING",
        )
    if timing.reused:
        context.log(f"Reused {timing.reused} frame(s) an earlier run of this job finished")
    if cache is not None:
        cache.discard()  # the result holds every frame now


class _FrameTiming:
    """Seconds per frame the model ran on, for "2 m 10 s left"; reused frames cost next to nothing."""

    def __init__(self, total: int):
        self.total = total
        self.computed = 0
        self.seconds = 0.0
        self.reused = 0

    def ran(self, seconds: float) -> None:
        self.computed += 1
        self.seconds += seconds

    def left(self, index: int, done: float) -> str:
        if not self.computed:
            return ""
        remaining = (self.total - index - done) * self.seconds / self.computed
        return f"{format_duration(remaining)} left"


def format_duration(seconds: float) -> str:
    """ "2 m 10 s", "45 s", "1 h 05 m": what a status bar has room for."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} m"
    if minutes:
        return f"{minutes} m {secs:02d} s"
    return f"{secs} s"
