"""Every file the open .blend reads from disk: what job-folder cleanup must never delete.

Results can land as datablocks that point into `<storage>/jobs/<id>/` (an image reloaded from a job result, a
video result opened as a movie clip or a sequencer strip, a cache file). Deleting such a folder would break
the open file, so the cleanup protects every path found here.

Packed datablocks are left out: their data lives inside the .blend, the path is only a note of where it came
from. The add-on packs every image it lands, so counting those would pin every result's folder for as long as
the file is open and cleanup could never free anything. Paths are made absolute against the .blend (or the
library a datablock comes from) and resolved, as client/retention.py compares them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import bpy

# Collections of file-backed datablocks that have a `filepath` (and, where Blender can pack them, `packed_file`).
FILE_COLLECTIONS = ("images", "movieclips", "sounds", "libraries", "cache_files", "volumes", "fonts")
BUILTIN_FONT = "<builtin>"


def referenced_paths(data: bpy.types.BlendData | None = None) -> set[Path]:
    """Absolute, resolved paths of every unpacked file the open .blend references."""
    data = data or bpy.data
    found: set[Path] = set()
    for name in FILE_COLLECTIONS:
        for block in getattr(data, name, ()):
            path = _datablock_path(block)
            if path is not None:
                found.add(path)
    for scene in data.scenes:
        found.update(_strip_paths(scene))
    return found


def _datablock_path(block: bpy.types.ID) -> Path | None:
    if getattr(block, "packed_file", None) is not None:
        return None
    packed_files = getattr(block, "packed_files", None)  # images: one per tile or view
    if packed_files is not None and len(packed_files) > 0:
        return None
    raw = getattr(block, "filepath", "")
    if not raw or raw == BUILTIN_FONT:
        return None
    return _absolute(raw, getattr(block, "library", None))


def _strip_paths(scene: bpy.types.Scene) -> Iterator[Path]:
    """Image and movie strips of the sequencer (`strips_all`: 4.4 and later; 5.0 removed `sequences_all`)."""
    editor = scene.sequence_editor
    if editor is None:
        return
    library = scene.library
    for strip in editor.strips_all:
        if strip.type == "MOVIE" and strip.filepath:
            yield _absolute(strip.filepath, library)
        elif strip.type == "IMAGE" and strip.directory:
            for element in strip.elements:
                yield _absolute(str(Path(bpy.path.abspath(strip.directory, library=library)) / element.filename))


def _absolute(raw: str, library: bpy.types.Library | None = None) -> Path:
    path = Path(bpy.path.abspath(raw, library=library))
    try:
        return path.resolve()
    except OSError:
        return path.absolute()
