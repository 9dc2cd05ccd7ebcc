"""`media`: what inspect-input found in a job's input, for the side that has no decoders (the CLI, Blender).

The farm commands need a clip's frames before any work is split: how many, and the number each output frame
is named by (`frame_0137.png`), so that a chunk can tell which of its frames are already made and a job
bundle can cover the range. Layout, version 1:

    {"version": 1, "kind": "video", "width": 320, "height": 180, "frame_count": 48,
     "first_number": 1, "numbers": [1, 2, …], "frame_rate": "24000/1001", "has_audio": true,
     "pixel_aspect": "1/1"}

`kind` is still, video or sequence; `numbers` the output frame number of every position (a video's frame
n is number n, from 1; a sequence keeps its files' numbers, gaps included); `frame_rate` a fraction as text,
or null for stills and sequences (a video result of a sequence is made at 24 fps); `pixel_aspect` the
source's sample aspect ratio ("1/1" when square or unknown).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from .errors import InputError
from .json_fields import JsonFields, read_json_file

MEDIA_INFO_VERSION = 1
WHAT = "The input's description"
FRAME_PREFIX = "frame_"
FRAME_DIGITS = 4  # at least; frame 12345 is frame_12345.png


def frame_file_name(number: int) -> str:
    """The name every frame job gives the frame with this source number (PNG sequences, `--into`)."""
    return f"{FRAME_PREFIX}{number:0{FRAME_DIGITS}d}.png"


@dataclass(frozen=True)
class MediaInfo:
    kind: str  # "still", "video" or "sequence"
    width: int
    height: int
    numbers: tuple[int, ...]  # output frame number of each position
    frame_rate: str | None = None  # "num/den"
    has_audio: bool = False
    pixel_aspect: str = "1/1"
    version: int = MEDIA_INFO_VERSION

    @property
    def frame_count(self) -> int:
        return len(self.numbers)

    def positions(self, first: int = 0, count: int = 0) -> range:
        """The positions `first` .. `first + count - 1` (count 0: to the end), as the frame jobs read them."""
        if first >= self.frame_count:
            raise InputError(f"The input has {self.frame_count} frame(s); the range cannot start at frame {first + 1}.")
        return range(first, self.frame_count if count == 0 else min(first + count, self.frame_count))

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "kind": self.kind,
            "width": self.width,
            "height": self.height,
            "frame_count": self.frame_count,
            "first_number": self.numbers[0] if self.numbers else None,
            "numbers": list(self.numbers),
            "frame_rate": self.frame_rate,
            "has_audio": self.has_audio,
            "pixel_aspect": self.pixel_aspect,
        }

    @classmethod
    def from_json(cls, raw: object) -> MediaInfo:
        fields = JsonFields(raw, WHAT)
        version = fields.version(MEDIA_INFO_VERSION)
        kind = fields.text("kind")
        if kind not in ("still", "video", "sequence"):
            raise fields.problem(f"kind must be still, video or sequence (found {kind!r})")
        numbers = fields.array("numbers", non_empty=True)
        if not all(isinstance(number, int) and not isinstance(number, bool) and number >= 0 for number in numbers):
            raise fields.problem("numbers must be whole numbers from 0")
        rate = fields.optional_text("frame_rate")
        for name, value in (("frame_rate", rate), ("pixel_aspect", fields.text("pixel_aspect"))):
            if value is not None and not _is_fraction(value):
                raise fields.problem(f"{name} must be a fraction such as 24000/1001 (found {value!r})")
        return cls(
            kind=kind,
            width=fields.integer("width", minimum=1),
            height=fields.integer("height", minimum=1),
            numbers=tuple(numbers),
            frame_rate=rate,
            has_audio=fields.flag("has_audio"),
            pixel_aspect=fields.text("pixel_aspect"),
            version=version,
        )

    @classmethod
    def read(cls, path: Path) -> MediaInfo:
        return cls.from_json(read_json_file(path, "the input's description"))


def _is_fraction(text: str) -> bool:
    try:
        return Fraction(text) > 0
    except (ValueError, ZeroDivisionError):
        return False


__all__ = ["FRAME_DIGITS", "FRAME_PREFIX", "MEDIA_INFO_VERSION", "MediaInfo", "frame_file_name"]
