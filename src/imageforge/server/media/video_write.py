"""Stream result frames into a video file, atomically, copying the source's audio untouched.

Timing: each frame is written with the source frame's own timestamp in the source stream's time base, so
frame rate, duration, variable frame rate and the offset against the audio all survive. Audio packets are
remuxed, never re-encoded (no generation loss, no drift), and interleaved with the video as it is written
so the muxer never buffers a whole clip. Colour is converted back to YUV with the source's own matrix and
range and tagged the same, mirroring video_read.
"""

from __future__ import annotations

import sys
from contextlib import ExitStack
from fractions import Fraction
from pathlib import Path
from types import TracebackType
from typing import Any

import av
import numpy as np

from ...contract import InputError
from .atomic import atomic_file
from .image import to_integers, to_rgb_or_rgba
from .video_plan import VideoPlan


class AudioCopier:
    """Remux every audio stream of `source` into `output`, up to a given time, in step with the video."""

    def __init__(self, source: Path, output: av.container.OutputContainer):
        self._input = av.open(str(source))
        try:
            streams = list(self._input.streams.audio)
            # Raises when the output container cannot hold the codec (FLAC into WebM): close the source first.
            self._targets = {stream.index: output.add_stream_from_template(stream) for stream in streams}
            self._packets = self._input.demux(*streams) if streams else iter(())
        except (ValueError, av.error.FFmpegError) as error:
            self._input.close()
            codecs = ", ".join(stream.codec_context.name for stream in streams)
            raise InputError(
                f"The audio of '{source.name}' ({codecs}) cannot be copied into a {output.format.name} file; "
                "choose the PNG sequence output or convert the video's audio first."
            ) from error
        except BaseException:
            self._input.close()
            raise
        self._output = output
        self._pending: av.Packet[Any] | None = None  # the source's audio packets

    def copy_until(self, seconds: float | None) -> None:
        """Mux audio packets that start at or before `seconds` (None: all that remain)."""
        while True:
            packet = self._pending or next(self._packets, None)
            self._pending = None
            if packet is None:
                return
            if packet.dts is None or not packet.size:
                continue  # demuxer flush packets carry no data
            if seconds is not None and packet.dts * packet.time_base > seconds:
                self._pending = packet
                return
            packet.stream = self._targets[packet.stream.index]
            self._output.mux(packet)

    def close(self) -> None:
        self._input.close()


class VideoWriter:
    """Write frames one at a time to `path` per a VideoPlan; the file appears only when complete.

    with VideoWriter(path, plan, audio_from=source_path) as writer:
        for frame in source.frames():
            writer.write(result_pixels, frame.pts)

    `write` takes [0, 1] floats (H, W) grey, (H, W, 3) RGB or (H, W, 4) straight RGBA; without alpha in
    the plan, RGBA is composited over black. An exception inside the block (or cancellation) deletes the
    partial file.
    """

    def __init__(self, path: Path, plan: VideoPlan, *, audio_from: Path | None = None):
        self.path = Path(path)
        self.plan = plan
        self.frames_written = 0
        self._audio_from = audio_from
        self._stack = ExitStack()
        self._last_pts: int | None = None

    def __enter__(self) -> VideoWriter:
        plan = self.plan
        temporary = self._stack.enter_context(atomic_file(self.path))
        try:
            self._container = av.open(str(temporary), "w", format=plan.container_format)
            self._stack.callback(self._container.close)
            stream = self._container.add_stream(plan.encoder, rate=plan.frame_rate, options=dict(plan.options))
            if not isinstance(stream, av.VideoStream):  # video_plan.py only names video encoders
                raise TypeError(f"{plan.encoder} is not a video encoder")
            stream.width, stream.height, stream.pix_fmt = plan.width, plan.height, plan.pix_fmt
            stream.time_base = plan.time_base
            context = stream.codec_context
            context.time_base = plan.time_base
            context.thread_count = 0
            if plan.bit_rate:
                context.bit_rate = plan.bit_rate
            context.colorspace, context.color_range = plan.colorspace, plan.color_range
            context.color_primaries, context.color_trc = plan.color_primaries, plan.color_trc
            if plan.pixel_aspect != 1:  # anamorphic footage stays anamorphic
                context.sample_aspect_ratio = plan.pixel_aspect
            self._stream = stream
            self._audio = AudioCopier(self._audio_from, self._container) if self._audio_from else None
            if self._audio is not None:
                self._stack.callback(self._audio.close)
        except BaseException:
            self._stack.__exit__(*sys.exc_info())
            raise
        return self

    def write(self, pixels: np.ndarray, pts: int | None = None) -> None:
        """Encode one frame; `pts` is the source frame's timestamp in plan.time_base (None: next frame)."""
        plan = self.plan
        rgba = to_rgb_or_rgba(pixels)
        if rgba.shape[:2] != (plan.height, plan.width):
            raise ValueError(f"Frame is {rgba.shape[1]}×{rgba.shape[0]}, the video is {plan.width}×{plan.height}")
        if rgba.shape[2] == 4 and not plan.keeps_alpha:
            rgba = rgba[..., :3] * rgba[..., 3:4]
        elif rgba.shape[2] == 3 and plan.keeps_alpha:
            rgba = np.concatenate([rgba, np.ones_like(rgba[..., :1])], axis=2)
        bits = 16 if plan.deep else 8
        native = {(8, 3): "rgb24", (8, 4): "rgba", (16, 3): "rgb48le", (16, 4): "rgba64le"}[(bits, rgba.shape[2])]
        frame = av.VideoFrame.from_ndarray(to_integers(rgba, bits), format=native)
        frame = frame.reformat(
            format=plan.pix_fmt,
            dst_colorspace=plan.colorspace or None,
            dst_color_range=plan.color_range or None,
        )
        frame.pts = self._next_pts(pts)
        frame.time_base = plan.time_base
        if self._audio is not None:
            self._audio.copy_until(float(frame.pts * plan.time_base))
        for packet in self._stream.encode(frame):
            self._container.mux(packet)
        self.frames_written += 1

    def _next_pts(self, pts: int | None) -> int:
        """Keep timestamps strictly increasing; a missing one continues at the plan's frame rate."""
        if pts is None:
            pts = round(Fraction(self.frames_written) / (self.plan.frame_rate * self.plan.time_base))
        if self._last_pts is not None and pts <= self._last_pts:
            pts = self._last_pts + 1
        self._last_pts = pts
        return pts

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> bool:
        if kind is None:
            try:
                if self.frames_written == 0:
                    raise ValueError(f"No frames were written to {self.path.name}")
                for packet in self._stream.encode(None):
                    self._container.mux(packet)
                if self._audio is not None:
                    self._audio.copy_until(None)
            except BaseException:
                self._stack.__exit__(*sys.exc_info())
                raise
        return bool(self._stack.__exit__(kind, error, trace))
