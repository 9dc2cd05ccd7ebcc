"""`open_input`: the one entry point from a job's `input` parameter to something that yields frames.

It decides what the path is (still, video, or frame sequence), checks it from headers alone (exists, is a
regular readable file, supported, not empty, not a decompression bomb, not animated) and returns a
MediaSource that decodes lazily: `read_still()` for still-only jobs, `frames()` for everything else, one
frame at a time. Every problem is an InputError (or ResourceExhaustedError for too-large images) of one
sentence naming the file. Files are only ever opened read-only.
"""

from __future__ import annotations

import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from pathlib import Path

from ...contract.errors import InputError
from ...contract.media_info import MediaInfo
from .formats import STILL_EXTENSIONS, VIDEO_EXTENSIONS, empty, unsupported
from .image import Image, SampleKind
from .sequences import FrameSequence, find_in_folder, find_pattern, is_pattern
from .stills import StillInfo, probe_still, read_still
from .video_read import Note, VideoInfo, iter_video_frames, iter_video_timestamps, probe_video

_STILL_ONLY = "this tool needs a single still image"


class MediaKind(StrEnum):
    STILL = "still"
    VIDEO = "video"
    SEQUENCE = "sequence"


@dataclass(frozen=True)
class Frame:
    """One decoded frame of a source."""

    index: int  # 0-based position: progress is f"frame {index + 1}/{source.frame_count}"
    number: int  # frame number for output names: the sequence's own number, else index + 1
    pts: int | None  # video timestamp in the source stream's time base (pass it to VideoWriter.write)
    image: Image


@dataclass(frozen=True)
class FrameSlot:
    """Where a frame sits, without its pixels: what a result writer needs of a frame made elsewhere."""

    index: int
    number: int
    pts: int | None


@dataclass(frozen=True)
class MediaSource:
    """A validated input. Headers only have been read; pixels are decoded on demand."""

    path: Path
    kind: MediaKind
    format: str  # "PNG", "OpenEXR", "h264", ... (for the job log)
    width: int
    height: int
    frame_count: int
    sample_kind: SampleKind
    has_alpha: bool
    still: StillInfo | None = None
    video: VideoInfo | None = None
    sequence: FrameSequence | None = None

    @property
    def frame_rate(self) -> Fraction | None:
        return self.video.frame_rate if self.video else None

    @property
    def duration(self) -> float | None:
        return self.video.duration if self.video else None

    @property
    def summary(self) -> str:
        """One line for job logs: kind, format, size and frame count."""
        return f"{self.kind.value} {self.format} {self.width}×{self.height}, {self.frame_count} frame(s)"

    @property
    def has_audio(self) -> bool:
        return bool(self.video and self.video.has_audio)

    def read_still(self) -> Image:
        """Decode a still; a video or sequence here is an InputError (the job needs one image)."""
        if self.still is None:
            noun = "a video" if self.kind is MediaKind.VIDEO else "a frame sequence"
            raise InputError(f"'{self.path.name}' is {noun}; {_STILL_ONLY}.")
        with _readable(self.path):
            return read_still(self.still)

    def frame_range(self, first: int = 0, count: int = 0) -> range:
        """Positions of the frames `first` .. `first + count - 1` (count 0: to the end), checked to exist."""
        if first >= self.frame_count:
            raise InputError(
                f"'{self.path.name}' has {self.frame_count} frame(s); the range cannot start at frame {first + 1}."
            )
        return range(first, self.frame_count if count == 0 else min(first + count, self.frame_count))

    @property
    def numbers(self) -> tuple[int, ...]:
        """The output frame number of every position (a sequence's own numbers, else position + 1)."""
        if self.sequence is not None:
            return self.sequence.numbers
        return tuple(range(1, self.frame_count + 1))

    def describe(self) -> MediaInfo:
        """What inspect-input returns: kind, size, frame numbers, frame rate, audio, pixel aspect."""
        video = self.video
        return MediaInfo(
            kind=self.kind.value,
            width=self.width,
            height=self.height,
            numbers=self.numbers,
            frame_rate=str(video.frame_rate) if video is not None else None,
            has_audio=self.has_audio,
            pixel_aspect=str(video.pixel_aspect) if video is not None else "1/1",
        )

    def frame_slots(self, positions: range | None = None, *, note: Note | None = None) -> Iterator[FrameSlot]:
        """The frames' positions, numbers and timestamps as frames() gives them, without decoding pixels
        (a video is still decoded for its timestamps, from where frames() would start, but never converted to
        RGB)."""
        positions = positions or range(self.frame_count)
        if self.video is None:
            numbers = self.numbers
            for index in positions:
                yield FrameSlot(index, numbers[index], None)
            return
        with _readable(self.path):
            for index, pts in iter_video_timestamps(self.video, start=positions.start, note=note):
                if index >= positions.stop:
                    break
                if index >= positions.start:
                    yield FrameSlot(index, index + 1, pts)

    def frames(self, positions: range | None = None, *, note: Note | None = None) -> Iterator[Frame]:
        """Decode frame after frame (a still is one frame), only those at `positions` (default: all);
        holds only the current frame in memory. A video range that starts later seeks to a keyframe before it
        when that is proven to give exactly the frames of a decode from the start, and decodes from the start
        otherwise (media/video_seek.py); `note` is told which, in one sentence, for the job log."""
        positions = positions or range(self.frame_count)
        if self.still is not None:
            yield Frame(0, 1, None, self.read_still())
        elif self.video is not None:
            with _readable(self.path):
                for index, pts, image in iter_video_frames(self.video, start=positions.start, note=note):
                    if index >= positions.stop:
                        break
                    if index >= positions.start:
                        yield Frame(index, index + 1, pts, image)
        else:
            assert self.sequence is not None
            numbers, files = self.sequence.numbers, self.sequence.files
            for index in positions:
                yield Frame(index, numbers[index], None, self._sequence_frame(files[index]))

    def _sequence_frame(self, path: Path) -> Image:
        with _readable(path):
            info = probe_still(path)
            if (info.width, info.height) != (self.width, self.height):
                raise InputError(
                    f"Frame '{path.name}' is {info.width}×{info.height} but the sequence starts at "
                    f"{self.width}×{self.height}; all frames must have the same size."
                )
            return read_still(info)


def open_input(path: str, *, still_only: bool = False) -> MediaSource:
    """Resolve and validate a job's input path; `still_only` refuses videos, folders and patterns."""
    if not path:
        raise InputError("No input was given; choose an image, a video, or a folder of numbered frames.")
    location = Path(path)
    if is_pattern(path) and not location.exists():
        if still_only:
            raise InputError(f"'{location.name}' is a frame sequence pattern; {_STILL_ONLY}.")
        return _sequence_source(find_pattern(location))
    with _readable(location):
        mode = location.stat().st_mode
        if stat.S_ISDIR(mode):
            if still_only:
                raise InputError(f"'{location.name}' is a folder; {_STILL_ONLY}, so choose an image file.")
            return _sequence_source(find_in_folder(location))
        if not stat.S_ISREG(mode):
            raise InputError(f"'{location.name}' is not a regular file; choose an image or video file.")
        with open(location, "rb") as handle:  # permission problems surface here, uniformly
            if not handle.read(1):
                raise empty(location)
        suffix = location.suffix.lower()
        if suffix in VIDEO_EXTENSIONS:
            if still_only:
                raise InputError(f"'{location.name}' is a video; {_STILL_ONLY}.")
            video = probe_video(location)
            return MediaSource(
                location, MediaKind.VIDEO, video.codec, video.width, video.height, video.frame_count,
                video.sample_kind, video.has_alpha, video=video,
            )  # fmt: skip
        if suffix in STILL_EXTENSIONS:
            still = probe_still(location)
            return MediaSource(
                location, MediaKind.STILL, still.format, still.width, still.height, 1,
                still.sample_kind, still.has_alpha, still=still,
            )  # fmt: skip
        raise unsupported(location)


def _sequence_source(sequence: FrameSequence) -> MediaSource:
    first = sequence.files[0]
    with _readable(first):
        info = probe_still(first)
    return MediaSource(
        sequence.directory / sequence.pattern, MediaKind.SEQUENCE, info.format, info.width, info.height,
        len(sequence), info.sample_kind, info.has_alpha, sequence=sequence,
    )  # fmt: skip


@contextmanager
def _readable(path: Path) -> Iterator[None]:
    """Turn the operating system's refusals into one-sentence InputErrors naming the path."""
    try:
        yield
    except PermissionError as error:
        raise InputError(f"ImageForge is not allowed to read '{path}'; check the file's permissions.") from error
    except (FileNotFoundError, NotADirectoryError) as error:
        raise InputError(f"Cannot find '{path}'; check that it exists and the path is spelled correctly.") from error
    except OSError as error:
        raise InputError(f"Cannot open '{path}' ({error.strerror or error}); check the path.") from error
