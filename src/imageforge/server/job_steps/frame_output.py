"""The result of a frame job, written frame by frame: a video or a numbered PNG sequence.

One writer for the frame loop (frames the model makes now) and for assemble-frames (frames chunks on a farm
made and left in a folder), so the two make the same file from the same frames: the same encoding plan
(media/video_plan.py), the same timestamps (each source frame's own, the first of the range at 0), the same
audio rule (copied when the range starts at the first frame), the same warning when the codec cannot keep
transparency.

A video is written from the frames as the PNG sequence of the same job stores them (quantised to its bit
depth first), so a clip made in chunks as PNG frames and assembled is frame for frame the video one machine
makes in one run.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from types import TracebackType

import numpy as np

from ...contract.jobs import SequenceOutput
from ...contract.results import ResultName
from ..inference import current_fraction
from ..job_context import JobContext
from ..media import (
    FrameSlot,
    MediaSource,
    PngSequenceWriter,
    VideoWriter,
    from_integers,
    plan_video_output,
    to_integers,
)

DEFAULT_FRAME_RATE = Fraction(24)


class FrameResultWriter:
    """with FrameResultWriter(context, source, result=..., ...) as output: output.write(slot, pixels)

    `size` is the (width, height) of the frames; `alpha` whether they carry meaningful transparency; `bits` the
    PNG depth of the sequence (and the precision the video is made from). `files` (after the block) is the
    job's result: {result: file name in the job folder}.
    """

    def __init__(
        self,
        context: JobContext,
        source: MediaSource,
        *,
        result: ResultName,
        sequence_output: SequenceOutput,
        size: tuple[int, int],
        alpha: bool,
        bits: int,
        trimmed: bool,
    ):
        self.context, self.source, self.result = context, source, result
        self.sequence_output, self.size, self.alpha, self.bits = sequence_output, size, alpha, bits
        self.trimmed = trimmed  # the range starts after the source's first frame
        self.directory = Path(context.directory)
        self.files: dict[ResultName, str] = {}
        self._sequence: PngSequenceWriter | None = None
        self._video: VideoWriter | None = None
        self._start_pts: int | None = None

    def __enter__(self) -> FrameResultWriter:
        if self.sequence_output is SequenceOutput.PNG_SEQUENCE:
            self._sequence = PngSequenceWriter(self.directory / self.result, bits=self.bits).__enter__()
            return self
        source, context = self.source, self.context
        plan = plan_video_output(
            source.video, size=self.size, alpha=self.alpha, frame_rate=source.frame_rate or DEFAULT_FRAME_RATE
        )
        if self.alpha and not plan.keeps_alpha:
            message = (
                f"{plan.encoder} video cannot store transparency, so the result is over black; "
                "choose PNG sequence output to keep it."
            )
            context.log(message, level="WARNING")
            context.progress(current_fraction(context), message)  # the bar stays where it is
        audio = source.path if source.has_audio and not self.trimmed else None
        if source.has_audio and self.trimmed:
            context.log("The range starts after the first frame, so the video result has no audio.", level="WARNING")
        self._video = VideoWriter(self.directory / f"{self.result}{plan.suffix}", plan, audio_from=audio).__enter__()
        return self

    def write(self, slot: FrameSlot, pixels: np.ndarray) -> None:
        """One frame ([0, 1] floats: grey, RGB or straight RGBA) at its place in the source."""
        if self._sequence is not None:
            self._sequence.write(slot.number, pixels)
            return
        assert self._video is not None
        if slot.pts is not None and self._start_pts is None:
            self._start_pts = slot.pts
        stored = from_integers(to_integers(pixels, self.bits))  # the values the PNG frame of it holds
        self._video.write(stored, None if slot.pts is None or self._start_pts is None else slot.pts - self._start_pts)

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> bool:
        if self._sequence is not None:
            handled = self._sequence.__exit__(kind, error, trace)
            if kind is None:
                self.files = {self.result: self._sequence.first_file.relative_to(self.directory).as_posix()}
            return handled
        assert self._video is not None
        handled = self._video.__exit__(kind, error, trace)
        if kind is None:
            video = self._video
            self.context.log(
                f"Wrote {video.frames_written} frames with {video.plan.encoder} ({video.plan.pix_fmt}) to "
                f"{video.path.name}"
            )
            self.files = {self.result: video.path.name}
        return handled


__all__ = ["DEFAULT_FRAME_RATE", "FrameResultWriter"]
