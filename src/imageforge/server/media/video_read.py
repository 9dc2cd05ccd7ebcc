"""Probe and stream video files with PyAV, one decoded frame at a time (memory stays bounded by one frame
plus the decoder's own reference frames, whatever the clip length).

Colour: frames are converted to RGB with the matrix and range the stream is tagged with (FFmpeg's
swscale), 8-bit sources to 8-bit RGB, deeper sources (10-bit ProRes/HEVC) to 16-bit RGB so no precision is
dropped. VP8/VP9 alpha (WebM `alpha_mode=1`) is only decoded by libvpx, so those streams use it.
Rotation metadata (phone clips) is not applied: Blender's movie clips show the stored orientation too.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from itertools import chain
from pathlib import Path

import av
import numpy as np
from av.rational import AVRational

from ...contract.errors import InputError
from .formats import check_dimensions, corrupt
from .image import Image, SampleKind, from_integers
from .video_seek import SeekPlan, plan_seek, read_timeline

_LIBVPX_DECODERS = {"vp8": "libvpx", "vp9": "libvpx-vp9"}


@dataclass(frozen=True)
class VideoInfo:
    """What the writer needs to produce the same kind of video, and what progress needs ("frame i/n")."""

    path: Path
    codec: str  # FFmpeg decoder name of the source, e.g. "h264", "prores", "vp9"
    pix_fmt: str
    width: int
    height: int
    frame_rate: Fraction
    time_base: Fraction
    frame_count: int
    duration: float | None  # seconds
    has_alpha: bool
    sample_kind: SampleKind
    audio_streams: int
    colorspace: int = 0
    color_range: int = 0
    color_primaries: int = 0
    color_trc: int = 0
    pixel_aspect: Fraction = Fraction(1)  # the sample aspect ratio (1 when square or not stored)

    @property
    def has_audio(self) -> bool:
        return self.audio_streams > 0


def exact(value: AVRational | Fraction | int) -> Fraction:
    """PyAV's rational (its rates and time bases in PyAV 19; not a Fraction) as a Fraction."""
    return Fraction(value.numerator, value.denominator)


def probe_video(path: Path) -> VideoInfo:
    """Read a video's stream parameters and exact frame count; errors are one sentence naming the file."""
    try:
        with av.open(str(path)) as container:
            if not container.streams.video and container.streams.audio:
                raise InputError(f"'{path.name}' has no video track; choose a video with picture, not audio only.")
            if not container.streams.video:
                raise _no_frames(path)
            stream = container.streams.video[0]
            context = stream.codec_context
            check_dimensions(path, context.width, context.height)
            pix_fmt = context.pix_fmt or "yuv420p"
            video_format = av.VideoFormat(pix_fmt)
            alpha = len(video_format.components) in (2, 4) or stream.metadata.get("alpha_mode") == "1"
            deep = max(component.bits for component in video_format.components) > 8
            rate = stream.average_rate or stream.guessed_rate or stream.base_rate or Fraction(24)
            time_base = stream.time_base
            if time_base is None:  # PyAV's answer for a zero denominator: the stream's timestamps mean nothing
                raise corrupt(path, "not a readable video")
            duration = (
                float(stream.duration * time_base)
                if stream.duration
                else (container.duration / 1_000_000 if container.duration else None)
            )
            frames = stream.frames or _count_packets(container, stream)
            info = VideoInfo(
                path=path,
                codec=context.name,
                pix_fmt=pix_fmt,
                width=context.width,
                height=context.height,
                frame_rate=exact(rate),
                time_base=exact(time_base),
                frame_count=frames,
                duration=duration,
                has_alpha=alpha,
                sample_kind=SampleKind.UINT16 if deep else SampleKind.UINT8,
                audio_streams=len(container.streams.audio),
                colorspace=int(context.colorspace or 0),
                color_range=int(context.color_range or 0),
                color_primaries=int(context.color_primaries or 0),
                color_trc=int(context.color_trc or 0),
                pixel_aspect=exact(stream.sample_aspect_ratio or context.sample_aspect_ratio or 1),
            )
    except av.EOFError as error:  # the file ends before the first frame
        raise _no_frames(path) from error
    except av.FFmpegError as error:
        if isinstance(error, PermissionError):
            raise
        raise corrupt(path, "not a readable video") from error
    if info.frame_count == 0:
        raise _no_frames(path)
    return info


def _no_frames(path: Path) -> InputError:
    return InputError(f"'{path.name}' contains no video frames; re-export the video.")


def _count_packets(container: av.container.InputContainer, stream: av.video.stream.VideoStream) -> int:
    """Matroska/WebM do not store a frame count: count the stream's packets (demux only, no decoding)."""
    return sum(1 for packet in container.demux(stream) if packet.size)


def iter_video_frames(
    info: VideoInfo, *, start: int = 0, note: Note | None = None
) -> Iterator[tuple[int, int | None, Image]]:
    """Yield (index, pts in info.time_base, Image) per frame in presentation order, one at a time, from frame
    `start`: index and pts are exactly those of a decode from the first frame. A later start seeks to a
    keyframe before it when that is proven exact (media/video_seek.py) and decodes from the first frame
    otherwise; `note` is told which, in one sentence."""
    target = ("rgba" if info.has_alpha else "rgb24") if info.sample_kind is SampleKind.UINT8 else None
    if target is None:
        target = "rgba64le" if info.has_alpha else "rgb48le"
    for index, frame in _numbered(info, start, note):
        values = frame.to_ndarray(format=target, src_color_range=frame.color_range or None)
        yield index, frame.pts, Image(from_integers(np.asarray(values)), info.sample_kind)


def iter_video_timestamps(
    info: VideoInfo, *, start: int = 0, note: Note | None = None
) -> Iterator[tuple[int, int | None]]:
    """Yield (index, pts) per frame as iter_video_frames does, decoding without converting any pixels
    (assemble-frames times a result exactly as a single run does, from frames made elsewhere)."""
    for index, frame in _numbered(info, start, note):
        yield index, frame.pts


Note = Callable[[str], None]
SEEK_VARIABLE = "IMAGEFORGE_VIDEO_SEEK"


def seeking_allowed() -> bool:
    """`IMAGEFORGE_VIDEO_SEEK=0` decodes every range from the first frame (benchmarks side by side; a way back)."""
    return os.environ.get(SEEK_VARIABLE, "1") != "0"


class _NotExact(Exception):
    """A seek the decoder did not confirm; raised before any frame was handed out."""


def _numbered(info: VideoInfo, start: int, note: Note | None) -> Iterator[tuple[int, av.VideoFrame]]:
    """(index, frame) from frame `start` on: by a proven seek, else by decoding from the first frame."""
    tell = note or (lambda message: None)
    if start > 0 and not seeking_allowed():
        tell(
            f"Decoding '{info.path.name}' from its first frame to reach frame {start + 1}: "
            f"seeking is off ({SEEK_VARIABLE}=0)."
        )
    elif start > 0:
        try:
            plan = plan_seek(read_timeline(info.path, info.codec, info.frame_count, through=start), start)
        except av.FFmpegError as error:
            raise corrupt(info.path, "its video packets cannot be read") from error
        if isinstance(plan, SeekPlan):
            try:
                yield from _seeked(info, plan, start, tell)
                return
            except _NotExact as refusal:
                tell(f"Decoding '{info.path.name}' from its first frame to reach frame {start + 1}: {refusal}.")
        elif plan is not None:
            tell(f"Decoding '{info.path.name}' from its first frame to reach frame {start + 1}: no exact seek, {plan}.")
    index = 0
    try:
        with av.open(str(info.path)) as container:
            stream = container.streams.video[0]
            stream.thread_type = "AUTO"
            for frame in _decoded(container.demux(stream), stream, info):
                if index >= start:
                    yield index, frame
                index += 1
    except av.FFmpegError as error:
        raise corrupt(info.path, f"frame {index + 1} cannot be decoded") from error


def _seeked(info: VideoInfo, plan: SeekPlan, start: int, tell: Note) -> Iterator[tuple[int, av.VideoFrame]]:
    """Seek to the plan's keyframe and decode forward; every frame before `start` and `start` itself must be
    what the plan predicts (else _NotExact, before anything is yielded). Later frames are numbered by their
    count from the keyframe, as a decode from the start numbers them."""
    index = -1
    try:
        with av.open(str(info.path)) as container:
            stream = container.streams.video[0]
            stream.thread_type = "AUTO"
            container.seek(plan.pts, stream=stream, backward=True, any_frame=False)
            packets = container.demux(stream)
            first = next((packet for packet in packets if packet.size), None)
            if first is None or first.pts not in plan.landings:
                raise _NotExact("the seek did not land on a keyframe the file's packets prove")
            index = landed = plan.landings[first.pts]
            # Frame threading drops the key flag of intra-only codecs (ProRes), whose every frame stands alone.
            standalone = stream.codec_context.codec.intra_only
            warned = False
            for frame in _decoded(chain((first,), packets), stream, info):
                known = index < len(plan.shown)  # the timeline was read to a little past `start`
                expected = plan.shown[index] if known else None
                confirmed = frame.pts == expected and (index != landed or standalone or frame.key_frame)
                if index <= start and not confirmed:
                    raise _NotExact(
                        f"after the seek the decoder gave timestamp {frame.pts} where the file's packets say {expected}"
                    )
                if index == start:
                    tell(
                        f"Seeked '{info.path.name}' to the keyframe at frame {landed + 1}: "
                        f"{start - landed} frame(s) decoded before frame {start + 1}."
                    )
                if index >= start:
                    if known and not confirmed and not warned:
                        warned = True
                        tell(
                            f"From frame {index + 1} on, '{info.path.name}' decodes to other timestamps than its "
                            "packets carry; frames are numbered in the order they decode, as from the start."
                        )
                    yield index, frame
                index += 1
    except av.FFmpegError as error:
        if index < start:
            raise _NotExact(f"the decoder failed after the seek ({error})") from error
        raise corrupt(info.path, f"frame {index + 1} cannot be decoded") from error


def _decoded(
    packets: Iterable[av.Packet[av.VideoStream]], stream: av.VideoStream, info: VideoInfo
) -> Iterator[av.VideoFrame]:
    decoder_name = _LIBVPX_DECODERS.get(info.codec) if info.has_alpha else None
    if decoder_name is None:
        for packet in packets:
            yield from stream.decode(packet)
        return
    decoder = av.CodecContext.create(decoder_name, "r")
    if not isinstance(decoder, av.VideoCodecContext):  # _LIBVPX_DECODERS names video decoders only
        raise TypeError(f"{decoder_name} is not a video decoder")
    decoder.width, decoder.height = info.width, info.height
    for packet in packets:
        for frame in decoder.decode(packet):
            if frame.pts is None:
                frame.pts = packet.pts
            yield frame
