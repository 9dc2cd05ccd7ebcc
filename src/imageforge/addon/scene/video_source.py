"""Which video or image sequence Camera Path from Video works on, and how the job server is told about it.

In order: the operator's own path, the scene's Video path (the Tools panel's field), the Movie Clip Editor's
clip, the scene's active clip. The server takes a video file, a folder of numbered frames, or a numbered pattern
(docs/jobs.md); one frame of a sequence, which is how Blender stores an image-sequence clip, is turned into
Blender's own `####` pattern (one `#` per digit), which the server's sequence reader understands.

Frame numbers. The server numbers video frames from 1 and keeps a sequence's own numbers; either way the
first analysed frame is the first source frame. A movie clip shows its first frame at `frame_start`, shifted
back by `frame_offset`; a path with no clip starts at the scene's first frame.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import bpy

from ...contract import InputError

NUMBERED = re.compile(r"^(.*?)(\d+)(\.[A-Za-z0-9]+)$")  # the last digits before the extension
PLACEHOLDERS = ("#", "%")  # a name holding these already cannot be turned into an unambiguous pattern


@dataclass(frozen=True)
class VideoSource:
    path: Path  # the file or folder chosen, absolute
    job_input: str  # what the server reads: a video, a folder, or a numbered pattern
    label: str  # for object names and messages
    first_frame: int  # the scene frame that shows the first source frame
    clip_name: str | None = None  # the movie clip it came from


def chosen_path(context: bpy.types.Context, filepath: str = "") -> str:
    """The path typed or picked, if any (no file access: cheap enough for poll())."""
    return filepath or getattr(context.scene, "imageforge_video_path", "")


def active_clip(context: bpy.types.Context) -> bpy.types.MovieClip | None:
    return getattr(context, "edit_movieclip", None) or context.scene.active_clip


def has_video(context: bpy.types.Context, filepath: str = "") -> bool:
    return bool(chosen_path(context, filepath)) or active_clip(context) is not None


def find_video_source(context: bpy.types.Context, filepath: str = "") -> VideoSource | None:
    """The source to analyse, checked to exist; None when nothing is chosen. Raises InputError when unusable."""
    scene = context.scene
    raw = chosen_path(context, filepath)
    if raw:
        path = Path(bpy.path.abspath(raw))
        return VideoSource(path, job_input(path), _label(path), scene.frame_start)
    clip = active_clip(context)
    if clip is None:
        return None
    path = Path(bpy.path.abspath(clip.filepath, library=clip.library))
    first = clip.frame_start - clip.frame_offset
    return VideoSource(path, job_input(path, sequence=clip.source == "SEQUENCE"), clip.name, first, clip.name)


def job_input(path: Path, *, sequence: bool | None = None) -> str:
    """The server's input for a chosen path: videos and folders as they are, a sequence's frame as a pattern.

    `sequence` says whether an image file is one frame of a sequence; None decides from the file type (an image
    with a number in its name is taken as a sequence frame, since a still cannot have a camera path).
    """
    if path.is_dir():
        return str(path)
    if not path.is_file():
        raise InputError(f"The video '{path}' does not exist; choose a video, an image sequence or a frame folder.")
    is_image = path.suffix.lower() in bpy.path.extensions_image
    if sequence is False or not is_image:
        return str(path)
    if any(mark in path.name for mark in PLACEHOLDERS):
        return str(path.parent)  # the server finds the one sequence in the folder
    numbered = NUMBERED.match(path.name)
    if numbered is None:
        raise InputError(
            f"'{path.name}' is a single image; a camera path needs a video, a numbered image sequence "
            "or a folder of frames."
        )
    prefix, digits, extension = numbered.groups()
    return str(path.with_name(f"{prefix}{'#' * len(digits)}{extension}"))


def _label(path: Path) -> str:
    numbered = NUMBERED.match(path.name) if path.suffix.lower() in bpy.path.extensions_image else None
    stem = numbered.group(1).rstrip("._- ") if numbered else path.stem
    return stem or path.parent.name or "Video"
