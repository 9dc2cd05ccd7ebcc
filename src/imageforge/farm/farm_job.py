"""What a farm submission of a frame job is, whichever farm runs it (OpenJD/Deadline, Flamenco).

The job's own parameters are fixed when the submission is written (they are `key=value` words of every
command); the paths are the submission's own parameters, so a farm can map them per operating system; the frame
numbers are the ones the output frames are named by (`frame_0137.png`), a video's from 1.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..contract.errors import InputError

MAX_CHUNK = 10_000
COMMAND = "imageforge"


@dataclass(frozen=True)
class FarmJob:
    job: str  # a frame job id, e.g. upscale-image
    settings: dict[str, Any]  # its parameters but `input` and the range (fixed in every command)
    input: str  # the source: a video, a frame folder or a pattern
    frames_folder: str  # the shared folder the chunks write into (`--into`)
    output_folder: str  # where the assembled video goes
    first: int  # first frame number
    last: int  # last frame number
    chunk_size: int
    video: bool  # the deliverable is a video (sequence_output=video), else the checked frames folder
    name: str = ""  # the farm's name for the job

    def __post_init__(self) -> None:
        if not 1 <= self.chunk_size <= MAX_CHUNK:
            raise InputError(f"The chunk size must be 1 to {MAX_CHUNK} frames (found {self.chunk_size}).")
        if self.last < self.first:
            raise InputError(f"The frames {self.first}-{self.last} are no range; the last comes before the first.")

    @property
    def frame_range(self) -> str:
        return f"{self.first}-{self.last}"

    @property
    def title(self) -> str:
        return self.name or f"ImageForge {self.job}"

    def setting_words(self) -> list[str]:
        """The job's settings as `key=value` words (values as JSON, as `imageforge run` reads them)."""
        return [f"{key}={_word(value)}" for key, value in self.settings.items()]

    def chunks(self) -> int:
        return -(-(self.last - self.first + 1) // self.chunk_size)


def _word(value: Any) -> str:
    return value if isinstance(value, str) and not _parses_as_json(value) else json.dumps(value)


def _parses_as_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


__all__ = ["COMMAND", "MAX_CHUNK", "FarmJob"]
