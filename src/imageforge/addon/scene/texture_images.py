"""The image textures of the selected objects, and landing an upscaled texture packed or as a file beside it.

Every Image Texture node of every material slot of every selected object counts, each image once (several
nodes and objects often share one). Landing replaces the image in place (scene/replace.py: same datablock,
colour space and alpha mode kept). Where the result goes is the add-on's Texture Results preference:
packed into the .blend, or saved beside the original file as `<name>_<scale>x.png` (a free name: an existing
file is never overwritten) with the image pointing at that file. An image with no file of its own (packed,
generated or painted) is always packed.
"""

from __future__ import annotations

import os
import shutil
from enum import StrEnum
from pathlib import Path

import bpy

from .replace import replace_from_file


class TextureResults(StrEnum):
    PACK = "PACK"
    SAVE_BESIDE = "SAVE_BESIDE"


def selected_texture_images(context: bpy.types.Context) -> list[bpy.types.Image]:
    """Images of the selected objects' Image Texture nodes, each once, in the order found."""
    found: dict[str, bpy.types.Image] = {}
    for obj in getattr(context, "selected_objects", None) or ():
        for slot in getattr(obj, "material_slots", ()):
            tree = slot.material.node_tree if slot.material is not None else None
            for node in tree.nodes if tree is not None else ():
                if node.type == "TEX_IMAGE" and node.image is not None:
                    found.setdefault(node.image.name, node.image)
    return list(found.values())


def original_file(image: bpy.types.Image) -> Path | None:
    """The image's own file on disk, when it has one (not packed, not generated)."""
    if image.source != "FILE" or image.packed_file is not None or not image.filepath:
        return None
    path = Path(bpy.path.abspath(image.filepath, library=image.library))
    return path if path.is_file() else None


def land_texture(image: bpy.types.Image, result: Path, scale: int, mode: TextureResults) -> Path | None:
    """Replace `image` by the upscaled `result`; returns the file saved beside the original, if any."""
    original = original_file(image)
    if mode is TextureResults.PACK or original is None:
        replace_from_file(image, result)
        return None
    destination = save_beside(original, result, f"_{scale}x")
    try:
        replace_from_file(image, destination, pack=False)
        image.filepath = bpy.path.relpath(str(destination)) if image.filepath.startswith("//") else str(destination)
    except BaseException:
        destination.unlink(missing_ok=True)
        raise
    return destination


def save_beside(original: Path, result: Path, suffix: str) -> Path:
    """Copy `result` next to `original` as `<stem><suffix>.png`, or `<stem><suffix>-2.png`, ... if taken;
    created exclusively, so no existing file (and never the original) is overwritten."""
    extension = result.suffix or ".png"
    for attempt in range(1, 1000):
        name = f"{original.stem}{suffix}{'' if attempt == 1 else f'-{attempt}'}{extension}"
        destination = original.with_name(name)
        try:
            with result.open("rb") as source, destination.open("xb") as target:
                try:
                    shutil.copyfileobj(source, target)
                    target.flush()
                    os.fsync(target.fileno())
                except BaseException:
                    target.close()
                    destination.unlink(missing_ok=True)
                    raise
        except FileExistsError:
            continue
        return destination
    raise OSError(f"No free file name for the upscaled '{original.name}' in its folder.")
