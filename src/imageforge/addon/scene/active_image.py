"""Which image a tool works on: the Image Editor's image, an image empty, or the active object's texture.

Also decides where the job reads it from: the file itself when it is saved and unchanged (the server then
sees the original bytes, 16-bit and float included), otherwise an export of the current pixels.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import bpy

from .pixels import export_pixels


class ImageOrigin(StrEnum):
    EDITOR = "editor"
    EMPTY = "empty"
    MATERIAL = "material"


@dataclass(frozen=True)
class ActiveImage:
    image: bpy.types.Image
    origin: ImageOrigin


def find_active_image(context: bpy.types.Context) -> ActiveImage | None:
    space = getattr(context, "space_data", None)
    if space is not None and space.type == "IMAGE_EDITOR":
        return ActiveImage(space.image, ImageOrigin.EDITOR) if space.image else None
    obj = getattr(context, "active_object", None)
    if obj is None:
        return None
    if obj.type == "EMPTY" and obj.empty_display_type == "IMAGE" and obj.data is not None:
        return ActiveImage(obj.data, ImageOrigin.EMPTY)
    material = obj.active_material
    image = material_image(material) if material is not None else None
    return ActiveImage(image, ImageOrigin.MATERIAL) if image is not None else None


def material_image(material: bpy.types.Material) -> bpy.types.Image | None:
    """The material's active image node, else the one feeding a Base Color, else its first image node."""
    tree = material.node_tree
    if tree is None:
        return None
    nodes = [node for node in tree.nodes if node.type == "TEX_IMAGE" and node.image is not None]
    active = tree.nodes.active
    if active is not None and active in nodes:
        return active.image
    for link in tree.links:
        if link.from_node in nodes and link.to_socket.name == "Base Color":
            return link.from_node.image
    return nodes[0].image if nodes else None


def image_problem(image: bpy.types.Image) -> str | None:
    """Why this image cannot be sent to a job, in one sentence; None when it can."""
    if image.type in {"RENDER_RESULT", "COMPOSITING"}:
        return "Save the render as an image first"
    if image.source in {"SEQUENCE", "MOVIE"}:
        return "This is a movie or image sequence: use the Frames panel's tools"
    if image.source == "TILED":
        return "Only single still images are supported here (UDIM tiles are not)"
    if image.size[0] == 0 or image.size[1] == 0:
        return f"Image '{image.name}' has no pixels (is its file missing?)"
    return None


def job_input_path(image: bpy.types.Image, directory: Path) -> Path:
    """A file holding exactly what the user sees, for the server to read."""
    directory.mkdir(parents=True, exist_ok=True)
    if image.packed_file is not None and not image.is_dirty:
        suffix = Path(image.filepath).suffix or ".png"
        path = directory / f"input{suffix}"
        path.write_bytes(image.packed_file.data)
        return path
    if image.source == "FILE" and not image.is_dirty and image.packed_file is None:
        source = Path(bpy.path.abspath(image.filepath, library=image.library))
        if source.is_file():
            return source
    return export_pixels(image, directory / "input")
