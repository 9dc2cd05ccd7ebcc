"""Run a per-frame function over a video or frame sequence and write the results as the job asked.

Frames stream one at a time (decode → model → encode), so memory does not grow with the clip's length.
Each frame reports "Frame i/n" and checks cancellation; the last frame is told so that the model's
arena is shrunk only then. Results are a video (the source's codec family, frame rate, timestamps and
audio; see media/video_plan.py) or a numbered PNG sequence (always lossless, always keeps alpha). A
video family that cannot store transparency gets the result over black, and the job says so.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from ...contract.jobs import SequenceOutput
from ..media import Frame, MediaSource, PngSequenceWriter, VideoWriter, plan_video_output
from .image_job import JobProgress

Report = Callable[[float, str], None]  # (fraction of this frame done, detail such as "tile 3/12")
ProcessFrame = Callable[[Frame, bool, Report], np.ndarray]  # (frame, is last, report) → [0, 1] pixels
DEFAULT_FRAME_RATE = Fraction(24)


def stream_frames(
    context: Any,
    progress: JobProgress,
    source: MediaSource,
    *,
    result: str,
    sequence_output: SequenceOutput,
    size: tuple[int, int],
    alpha: bool,
    bits: int,
    process: ProcessFrame,
) -> dict[str, str]:
    """Process every frame of `source`; returns {result: file name in the job folder}.

    `size` is the (width, height) of the frames `process` returns; `alpha` says whether they carry
    meaningful transparency; `bits` is the PNG depth for sequence output.
    """
    directory = Path(context.directory)
    total = max(source.frame_count, 1)

    def frames(write: Callable[[Frame, np.ndarray], None]) -> None:
        for frame in source.frames():
            index = min(frame.index, total - 1)

            def report(done: float, detail: str, index: int = index) -> None:
                suffix = f" · {detail}" if detail else ""
                progress.running((index + done) / total, f"Frame {index + 1}/{total}{suffix}")

            report(0.0, "")
            write(frame, process(frame, frame.index >= total - 1, report))

    if sequence_output is SequenceOutput.PNG_SEQUENCE:
        with PngSequenceWriter(directory / result, bits=bits) as writer:
            frames(lambda frame, pixels: writer.write(frame.number, pixels))
            progress.writing()
        return {result: writer.first_file.relative_to(directory).as_posix()}

    plan = plan_video_output(source.video, size=size, alpha=alpha, frame_rate=source.frame_rate or DEFAULT_FRAME_RATE)
    if alpha and not plan.keeps_alpha:
        message = (
            f"{plan.encoder} video cannot store transparency, so the result is over black; "
            "choose PNG sequence output to keep it."
        )
        context.log(message, level="WARNING")
        context.progress(0.1, message)
    path = directory / f"{result}{plan.suffix}"
    audio = source.path if source.has_audio else None
    with VideoWriter(path, plan, audio_from=audio) as writer:
        frames(lambda frame, pixels: writer.write(pixels, frame.pts))
        progress.writing()
    context.log(f"Wrote {writer.frames_written} frames with {plan.encoder} ({plan.pix_fmt}) to {path.name}")
    return {result: path.name}
