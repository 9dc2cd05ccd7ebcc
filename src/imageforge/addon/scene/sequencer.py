"""The Video Sequencer, the one place where its API's differences between Blender versions are handled.

- Blender 4.4 renamed `sequences`/`sequences_all` to `strips`/`strips_all`; 5.0 removed the old names. Every
  supported release (4.5 and later) has `strips`, which ImageForge modules reach through `top_strips`.
- `StripsTopLevel.new_image/new_movie/new_sound(name, filepath, channel, frame_start)` are the same in 4.5
  and 5.x; an image strip gains its further frames through `strip.elements.append(filename)`.
- A strip's timing: 4.5 names it `frame_final_start/_end/_duration` (the visible frames), `frame_start` (where
  its first source frame would show) and `frame_offset_start/_end` (trimmed frames); 5.2 renamed these to
  `left_handle`, `right_handle`, `duration`, `content_start`, `left_handle_offset/right_handle_offset` and
  deprecates the old names (removed in 6.0). `span`, `set_span`, `content_start`, `set_content_start` and
  `trim` read and write whichever the running Blender has.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import bpy

MAX_CHANNEL = 128  # Blender's sequencer has channels 1..128


def top_strips(editor: bpy.types.SequenceEditor) -> Any:
    """The editor's top-level strips collection (the one with `new_image`, `new_movie`, ...)."""
    return editor.strips


def active_strip(scene: bpy.types.Scene) -> bpy.types.Strip | None:
    editor = scene.sequence_editor
    return editor.active_strip if editor is not None else None


def selected_strips(scene: bpy.types.Scene) -> list[bpy.types.Strip]:
    editor = scene.sequence_editor
    return [strip for strip in top_strips(editor) if strip.select] if editor is not None else []


_NEW_TIMING = "left_handle"  # present from Blender 5.2


def span(strip: bpy.types.Strip) -> tuple[int, int]:
    """The scene frames [start, end) the strip shows."""
    if hasattr(strip, _NEW_TIMING):
        return strip.left_handle, strip.right_handle
    return strip.frame_final_start, strip.frame_final_end


def set_span(strip: bpy.types.Strip, start: int, end: int) -> None:
    """Move the strip's handles so that it shows scene frames [start, end)."""
    if hasattr(strip, _NEW_TIMING):
        strip.left_handle, strip.right_handle = start, end
    else:
        strip.frame_final_start, strip.frame_final_end = start, end


def content_start(strip: bpy.types.Strip) -> int:
    """The scene frame where the strip's first source frame is (or would be, when trimmed off) shown."""
    return round(strip.content_start if hasattr(strip, _NEW_TIMING) else strip.frame_start)


def set_content_start(strip: bpy.types.Strip, frame: int) -> None:
    if hasattr(strip, _NEW_TIMING):
        strip.content_start = frame
    else:
        strip.frame_start = frame


def trim(strip: bpy.types.Strip, start: int, end: int) -> None:
    """Hide `start` source frames at the strip's start and `end` at its end."""
    if hasattr(strip, _NEW_TIMING):
        strip.left_handle_offset, strip.right_handle_offset = start, end
    else:
        strip.frame_offset_start, strip.frame_offset_end = start, end


def free_channel_above(editor: bpy.types.SequenceEditor, channel: int, start: int, end: int) -> int:
    """The first channel above `channel` with no strip overlapping frames [start, end)."""
    for candidate in range(channel + 1, MAX_CHANNEL + 1):
        if not any(
            strip.channel == candidate and span(strip)[0] < end and span(strip)[1] > start
            for strip in top_strips(editor)
        ):
            return candidate
    raise OSError("Every sequencer channel above the strip is taken; free one and run the tool again.")


def add_image_strip(
    editor: bpy.types.SequenceEditor, name: str, files: Sequence[Path], channel: int, frame_start: int
) -> bpy.types.Strip:
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


def add_sound_strip(
    editor: bpy.types.SequenceEditor, name: str, path: Path, channel: int, frame_start: int
) -> bpy.types.Strip | None:
    """A sound strip of `path`'s audio, or None when the file has none."""
    if not has_audio(path):
        return None
    return top_strips(editor).new_sound(name, str(path), channel, frame_start)


def copy_transform(source: bpy.types.Strip, target: bpy.types.Strip, *, scale: float = 1.0) -> None:
    """Place `target` where `source` shows; `scale` divides the size (an upscaled result has more pixels)."""
    for name in ("offset_x", "offset_y", "rotation", "origin"):
        if hasattr(source.transform, name):
            setattr(target.transform, name, getattr(source.transform, name))
    target.transform.scale_x = source.transform.scale_x / scale
    target.transform.scale_y = source.transform.scale_y / scale
