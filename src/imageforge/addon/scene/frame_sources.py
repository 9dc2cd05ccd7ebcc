"""Which clip the frame tools (Remove Background / Upscale on every frame) work on, and which of its frames.

Sources, in the order of the editor the tool is used from: the Video Sequencer's active movie or image strip,
the Clip Editor's movie clip, the Image Editor's image whose source is MOVIE or SEQUENCE. A source says what
the server reads (a video file or a numbered pattern, scene/video_source.job_input), the 0-based positions of
the frames to process, and the scene frame that shows the first of them, so the result lands in step.

Ranges: SOURCE is every frame the strip shows (a trimmed strip's visible part) or every frame of the clip or
image; SCENE is the part of that which falls inside the scene's frame range. A movie's frames are assumed to
play one per scene frame (the sequencer's speed effects and frame-rate changes are not followed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import bpy

from ...contract import InputError
from . import sequencer
from .video_source import NUMBERED, job_input

NO_FRAMES = (
    "No clip: make a movie or image strip active in the Video Sequencer, open a movie clip in the Clip Editor, "
    "or show a movie or image sequence in the Image Editor"
)


class SourceKind(StrEnum):
    STRIP = "strip"
    CLIP = "clip"
    IMAGE = "image"


class FrameRange(StrEnum):
    SOURCE = "SOURCE"
    SCENE = "SCENE"


@dataclass(frozen=True)
class FrameSource:
    kind: SourceKind
    name: str  # the strip's, clip's or image's name
    job_input: str  # what the server reads
    path: Path  # the file (a sequence's first file) the source reads
    first_frame: int  # 0-based position in the source of the first frame to process
    frame_count: int
    scene_start: int  # the scene frame that shows frame `first_frame`
    channel: int = 0  # strips only
    movie: bool = False  # a video file (may carry audio), not an image sequence


def frame_source_datablock(context: bpy.types.Context) -> tuple[SourceKind, Any] | None:
    """(kind, datablock or strip) the editor in `context` offers; cheap enough for poll()."""
    space: Any = getattr(context, "space_data", None)
    space_type = getattr(space, "type", None)
    if space_type == "CLIP_EDITOR":
        return (SourceKind.CLIP, space.clip) if space.clip is not None else None
    if space_type == "IMAGE_EDITOR":
        image = space.image
        ok = image is not None and image.source in {"MOVIE", "SEQUENCE"}
        return (SourceKind.IMAGE, image) if ok else None
    strip = sequencer.active_strip(context.scene)
    if strip is not None and strip.type in {"MOVIE", "IMAGE"}:
        return SourceKind.STRIP, strip
    return None


def find_frame_source(context: bpy.types.Context, frame_range: FrameRange = FrameRange.SOURCE) -> FrameSource:
    found = frame_source_datablock(context)
    if found is None:
        raise InputError(f"{NO_FRAMES}.")
    kind, item = found
    scene = context.scene
    if kind is SourceKind.STRIP:
        source = strip_source(item)
    elif kind is SourceKind.CLIP:
        source = clip_source(item)
    else:
        source = image_source(item, context.space_data.image_user)
    return limited(source, scene) if frame_range is FrameRange.SCENE else source


def strip_source(strip: bpy.types.Strip) -> FrameSource:
    if strip.type == "MOVIE":
        path = _existing(bpy.path.abspath(strip.filepath), strip.name)
        first, movie, job = 0, True, str(path)
    else:
        path = _existing(bpy.path.abspath(strip.directory) + strip.elements[0].filename, strip.name)
        first, movie, job = sequence_position(path), False, job_input(path, sequence=True)
    start, end = sequencer.span(strip)
    visible = start - sequencer.content_start(strip)  # frames trimmed off the start
    return FrameSource(
        SourceKind.STRIP, strip.name, job, path, first + visible, end - start, start, strip.channel, movie,
    )  # fmt: skip


def clip_source(clip: bpy.types.MovieClip) -> FrameSource:
    path = _existing(bpy.path.abspath(clip.filepath, library=clip.library), clip.name)
    sequence = clip.source == "SEQUENCE"
    first = sequence_position(path) if sequence else 0
    return FrameSource(
        SourceKind.CLIP, clip.name, job_input(path, sequence=sequence), path, first, clip.frame_duration,
        round(clip.frame_start - clip.frame_offset), movie=not sequence,
    )  # fmt: skip


def image_source(image: bpy.types.Image, user: bpy.types.ImageUser) -> FrameSource:
    path = _existing(bpy.path.abspath(image.filepath, library=image.library), image.name)
    sequence = image.source == "SEQUENCE"
    first = sequence_position(path) if sequence else 0
    return FrameSource(
        SourceKind.IMAGE, image.name, job_input(path, sequence=sequence), path, first, image.frame_duration,
        user.frame_start - user.frame_offset, movie=not sequence,
    )  # fmt: skip


def limited(source: FrameSource, scene: bpy.types.Scene) -> FrameSource:
    """The part of `source` shown inside the scene's frame range."""
    start = max(source.scene_start, scene.frame_start)
    end = min(source.scene_start + source.frame_count, scene.frame_end + 1)
    if end <= start:
        raise InputError(f"'{source.name}' shows no frame inside the scene's frame range; choose the clip's frames.")
    skipped = start - source.scene_start
    return FrameSource(
        source.kind, source.name, source.job_input, source.path, source.first_frame + skipped, end - start,
        start, source.channel, source.movie,
    )  # fmt: skip


def sequence_position(path: Path) -> int:
    """The 0-based position of frame file `path` among its sequence's files, as the server orders them."""
    numbered = NUMBERED.match(path.name)
    if numbered is None:
        return 0
    prefix, _digits, extension = numbered.groups()
    pattern = re.compile(rf"^{re.escape(prefix)}(\d+){re.escape(extension)}$", re.IGNORECASE)
    numbers = sorted(int(match.group(1)) for entry in path.parent.iterdir() if (match := pattern.match(entry.name)))
    return numbers.index(int(numbered.group(2)))


def _existing(raw: str, name: str) -> Path:
    path = Path(raw)
    if not path.is_file():
        raise InputError(f"The file of '{name}' is missing ({path}); relink it and run the tool again.")
    return path
