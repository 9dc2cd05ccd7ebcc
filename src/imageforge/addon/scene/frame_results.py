"""Land a frame tool's PNG sequence where the artist expects it, leaving the source untouched.

- Sequencer: a new image strip on the first free channel above the source strip, from the same scene frame
  for the same number of frames, placed like the source (its transform; an upscale is scaled down to match),
  named after the source. A movie with audio also gets a sound strip of that audio, trimmed alike, on the
  next free channel, so the result plays with its sound.
- Clip Editor: a new movie clip of the sequence, same start frame, shown in every Clip Editor that showed
  the source.
- Image Editor: a new image of the sequence (source SEQUENCE), shown in every Image Editor that showed the
  source, which keeps its frame settings (the result's frames are numbered like the source's).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bpy

from ...contract import InputError, ResultError
from . import sequencer
from .frame_sources import FrameSource, SourceKind


def sequence_files(first: Path, count: int) -> list[Path]:
    """The result's frame files, in order, starting at the job's first file."""
    files = sorted(path for path in first.parent.iterdir() if path.suffix == ".png" and not path.name.startswith("."))
    files = files[files.index(first) :]
    if len(files) != count:
        raise ResultError(f"The job wrote {len(files)} frame(s) where {count} were expected; nothing was changed.")
    return files


def land_frames(scene: bpy.types.Scene, source: FrameSource, first: Path, label: str, *, scale: int = 1) -> str:
    """Put the result (first file `first`) in place; returns the name of what was added."""
    files = sequence_files(first, source.frame_count)
    name = f"{source.name} {label}"
    if source.kind is SourceKind.STRIP:
        return land_strip(scene, source, files, name, scale)
    if source.kind is SourceKind.CLIP:
        return land_clip(source, files[0], name)
    return land_image(source, files[0], name)


def land_strip(scene: bpy.types.Scene, source: FrameSource, files: list[Path], name: str, scale: int) -> str:
    editor = scene.sequence_editor
    original = _strip(editor, source.name)
    start, end = source.scene_start, source.scene_start + source.frame_count
    channel = sequencer.free_channel_above(editor, original.channel, start, end)
    strip = sequencer.add_image_strip(editor, name, files, channel, start)
    sequencer.copy_transform(original, strip, scale=scale)
    if source.movie:
        sound_channel = sequencer.free_channel_above(editor, channel, start, end)
        sound = sequencer.add_sound_strip(editor, f"{name} Audio", source.path, sound_channel, start)
        if sound is not None:  # show the same part of the audio: trim what lies before and after the range
            sequencer.set_content_start(sound, start - source.first_frame)
            sequencer.set_span(sound, start, end)
    for other in sequencer.top_strips(editor):
        other.select = other == strip
    editor.active_strip = strip
    return strip.name


def land_clip(source: FrameSource, first: Path, name: str) -> str:
    original, clip = _load_in_place_of(bpy.data.movieclips, source.name, first, name, "CLIP_EDITOR", "clip")
    clip.frame_start, clip.frame_offset = original.frame_start, original.frame_offset
    return clip.name


def land_image(source: FrameSource, first: Path, name: str) -> str:
    _original, image = _load_in_place_of(bpy.data.images, source.name, first, name, "IMAGE_EDITOR", "image")
    image.source = "SEQUENCE"
    return image.name


def _load_in_place_of(collection: Any, original_name: str, first: Path, name: str, space_type: str, shown: str) -> Any:
    """Load the result's first file into `collection` as `name`, and show it in every editor of `space_type`
    that showed the original (the editor's `shown` attribute); returns (original, loaded)."""
    original = _datablock(collection, original_name)
    loaded = collection.load(str(first))
    loaded.name = name
    for space in _spaces(space_type):
        if getattr(space, shown) == original:
            setattr(space, shown, loaded)
    return original, loaded


def _strip(editor: bpy.types.SequenceEditor, name: str) -> bpy.types.Strip:
    strip = None if editor is None else next((s for s in sequencer.top_strips(editor) if s.name == name), None)
    if strip is None:
        raise InputError(f"The strip '{name}' was removed while the job ran; nothing was changed.")
    return strip


def _datablock(collection: Any, name: str) -> Any:
    item = collection.get(name)
    if item is None:
        raise InputError(f"'{name}' was removed while the job ran; nothing was changed.")
    return item


def _spaces(space_type: str) -> Iterator[Any]:
    window_manager = bpy.context.window_manager
    for window in window_manager.windows if window_manager else ():
        for area in window.screen.areas:
            if area.type == space_type:
                yield from (space for space in area.spaces if space.type == space_type)
