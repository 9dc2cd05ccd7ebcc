"""Frame sequences: a folder of numbered images, or a numbered pattern such as `frame_%04d.png` (FFmpeg,
Nuke) or `frame_####.png` (Blender's own notation, one `#` per digit).

Frames are ordered by number, not by name (`frame_10` after `frame_9`); gaps are allowed because Blender
renders with a frame step or partial re-renders leave them. Frame numbers are kept so that a PNG sequence
written back lines up with the source frames in Blender's sequence editor.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ...contract.errors import InputError
from .formats import STILL_EXTENSIONS

_PRINTF = re.compile(r"%(0?\d+)?d")
_HASHES = re.compile(r"#+")
_NUMBERED = re.compile(r"^(.*?)(\d+)(\.[A-Za-z0-9]+)$")


@dataclass(frozen=True)
class FrameSequence:
    """The files of one sequence, sorted by frame number."""

    directory: Path
    pattern: str  # Blender notation, e.g. "frame_####.png", for messages and output naming
    numbers: tuple[int, ...]
    files: tuple[Path, ...]

    def __len__(self) -> int:
        return len(self.files)


def is_pattern(path: str) -> bool:
    """True when the file name (not the folder part) holds a `%d`/`%0Nd` or `#` frame-number placeholder."""
    name = Path(path).name
    return bool(_PRINTF.search(name) or _HASHES.search(name))


def find_pattern(path: Path) -> FrameSequence:
    """The existing files that match a numbered pattern, e.g. /renders/frame_%04d.png."""
    name, directory = path.name, path.parent
    matches = list(_PRINTF.finditer(name)) + list(_HASHES.finditer(name))
    if len(matches) != 1:
        raise InputError(
            f"'{name}' must contain exactly one frame number placeholder, like frame_%04d.png or frame_####.png."
        )
    match = matches[0]
    prefix, suffix = name[: match.start()], name[match.end() :]
    padding = len(match.group(0)) if match.group(0).startswith("#") else int(match.group(1) or 1)
    if suffix.lower() not in STILL_EXTENSIONS:
        raise InputError(f"The frame pattern '{name}' must end in an image extension such as .png or .exr.")
    if not directory.is_dir():
        raise InputError(f"Cannot find the folder '{directory}' of the frame pattern '{name}'.")
    regex = re.compile(re.escape(prefix) + r"(\d+)" + re.escape(suffix))
    found: dict[int, Path] = {}
    for entry in directory.iterdir():
        hit = regex.fullmatch(entry.name)
        if hit and f"{int(hit.group(1)):0{padding}d}" == hit.group(1) and entry.is_file():
            found[int(hit.group(1))] = entry
    if not found:
        raise InputError(
            f"No frames match '{name}' in '{directory}'; check the name and the number of digits (# or %0Nd)."
        )
    return _sequence(directory, prefix + "#" * padding + suffix, found)


def find_in_folder(directory: Path) -> FrameSequence:
    """The one numbered image sequence in a folder; several sequences or none are clear errors."""
    groups: dict[tuple[str, str], dict[int, list[Path]]] = {}
    for entry in directory.iterdir():
        hit = _NUMBERED.match(entry.name)
        if entry.name.startswith(".") or not hit or hit.group(3).lower() not in STILL_EXTENSIONS:
            continue
        if entry.is_file():
            numbers = groups.setdefault((hit.group(1), hit.group(3)), {})
            numbers.setdefault(int(hit.group(2)), []).append(entry)
    if not groups:
        raise InputError(
            f"The folder '{directory.name}' contains no numbered images such as frame_0001.png; "
            "choose an image, a video, or a folder of numbered frames."
        )
    if len(groups) > 1:
        names = sorted(f"{prefix}####{suffix}" for prefix, suffix in groups)
        shown = ", ".join(names[:4]) + (", …" if len(names) > 4 else "")
        raise InputError(
            f"The folder '{directory.name}' holds several image sequences ({shown}); "
            f"choose one with a pattern such as '{directory / names[0]}'."
        )
    (prefix, suffix), numbered = next(iter(groups.items()))
    for number, paths in numbered.items():
        if len(paths) > 1:
            both = " and ".join(sorted(path.name for path in paths))
            raise InputError(f"The folder '{directory.name}' has two files for frame {number} ({both}); remove one.")
    widths = {len(paths[0].name) - len(prefix) - len(suffix) for paths in numbered.values()}
    pattern = prefix + "#" * min(widths) + suffix
    return _sequence(directory, pattern, {number: paths[0] for number, paths in numbered.items()})


def _sequence(directory: Path, pattern: str, found: dict[int, Path]) -> FrameSequence:
    numbers = tuple(sorted(found))
    return FrameSequence(directory, pattern, numbers, tuple(found[number] for number in numbers))
