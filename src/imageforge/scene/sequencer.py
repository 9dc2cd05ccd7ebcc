"""The Video Sequencer, the one place where its API's differences between Blender versions are handled.

- Blender 4.4 renamed `sequences`/`sequences_all` to `strips`/`strips_all`; 5.0 removed the old names. Every
  supported release (4.5 and later) has `strips`, which ImageForge modules reach through `top_strips`.
- `StripsTopLevel.new_image/new_movie/new_sound(name, filepath, channel, frame_start)` are the same in 4.5
  and 5.x; an image strip gains its further frames through `strip.elements.append(filename)`.
- A strip's visible frames are `frame_final_start` .. `frame_final_end - 1`; its first source frame is shown
  at `frame_start` (the trimmed part before `frame_final_start` is `frame_offset_start`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import bpy

MAX_CHANNEL = 128  # Blender's sequencer has channels 1..128


def top_strips(editor: bpy.types.SequenceEditor):
    """The editor's top-level strips collection (the one with `new_image`, `new_movie`, ...)."""
    return editor.strips


def active_strip(scene: bpy.types.Scene):
    editor = scene.sequence_editor
    return editor.active_strip if editor is not None else None


def selected_strips(scene: bpy.types.Scene) -> list:
    editor = scene.sequence_editor
    return [strip for strip in top_strips(editor) if strip.select] if editor is not None else []


def free_channel_above(editor: bpy.types.SequenceEditor, channel: int, start: int, end: int) -> int:
    """The first channel above `channel` with no strip overlapping frames [start, end)."""
    for candidate in range(channel + 1, MAX_CHANNEL + 1):
        if not any(
            strip.channel == candidate and strip.frame_final_start < end and strip.frame_final_end > start
            for strip in top_strips(editor)
        ):
            return candidate
    raise OSError("Every sequencer channel above the strip is taken; free one and run the tool again.")


def add_image_strip(editor: bpy.types.SequenceEditor, name: str, files: Sequence[Path], channel: int, frame_start: int):
    """A new image strip showing `files` (one folder) one per frame from `frame_start`."""
    strip = top_strips(editor).new_image(name, str(files[0]), channel, frame_start, fit_method="ORIGINAL")
    for path in files[1:]:
        strip.elements.append(path.name)
    return strip


def has_audio(path: Path) -> bool:
    """Whether Blender's audio library can read sound from `path` (a movie without audio cannot; `new_sound`
    would still add a one-frame silent strip)."""
    import aud

    try:
        return aud.Sound(str(path)).specs[1] > 0
    except Exception:  # aud.error, the only failure it reports, is not importable by name
        return False


def add_sound_strip(editor: bpy.types.SequenceEditor, name: str, path: Path, channel: int, frame_start: int):
    """A sound strip of `path`'s audio, or None when the file has none."""
    if not has_audio(path):
        return None
    return top_strips(editor).new_sound(name, str(path), channel, frame_start)


def copy_transform(source, target, *, scale: float = 1.0) -> None:
    """Place `target` where `source` shows; `scale` divides the size (an upscaled result has more pixels)."""
    for name in ("offset_x", "offset_y", "rotation", "origin"):
        if hasattr(source.transform, name):
            setattr(target.transform, name, getattr(source.transform, name))
    target.transform.scale_x = source.transform.scale_x / scale
    target.transform.scale_y = source.transform.scale_y / scale
