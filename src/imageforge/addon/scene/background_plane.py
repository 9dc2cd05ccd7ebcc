"""The background plane a cutout leaves behind: finding an image's depth planes, giving them the clean plate and
the depth continued behind the object.

Convert to Depth Plane tags its object with the source image's name and the subdivisions it was built with, so
that a later Cutout of the same image (Fill Behind) finds it even after the user renamed it. The clean plate
(and the normal map of the continued surface) replaces the photo (and its normal map) in that plane's material
only (a material ImageForge made; one shared with other objects is copied first), and the plane's mesh is
rebuilt from the filled depth; the object, its transform, modifiers and everything else the user added stay.
"""

from __future__ import annotations

import bpy

from .depth_grid import GridMesh
from .objects import grid_mesh

SOURCE_IMAGE = "imageforge_depth_plane_of"  # custom property: the image a depth plane was made from
SUBDIVISIONS = "imageforge_subdivisions"


def tag_depth_plane(obj: bpy.types.Object, image: bpy.types.Image, subdivisions: int) -> None:
    obj[SOURCE_IMAGE] = image.name
    obj[SUBDIVISIONS] = int(subdivisions)


def depth_planes_of(image: bpy.types.Image) -> list[bpy.types.Object]:
    """Mesh objects made by Convert to Depth Plane (or Parallax Shot) from `image`, in name order."""
    return sorted(
        (obj for obj in bpy.data.objects if obj.type == "MESH" and obj.get(SOURCE_IMAGE) == image.name),
        key=lambda obj: obj.name,
    )


def show_clean_plate(
    obj: bpy.types.Object, photo: bpy.types.Image, plate: bpy.types.Image, normal: bpy.types.Image | None = None
) -> int:
    """Point every image texture of `obj`'s materials that shows `photo` at `plate`, and the textures feeding a
    Normal Map node at `normal` when given; returns how many textures changed."""
    changed = 0
    for slot in obj.material_slots:
        material = slot.material
        if material is None or material.node_tree is None or not _replacements(material, photo, plate, normal):
            continue
        if material.users > 1:  # never change what other objects show
            material = material.copy()
            slot.material = material
        for node, image in _replacements(material, photo, plate, normal):
            node.image = image
            changed += 1
    return changed


def _replacements(
    material: bpy.types.Material, photo: bpy.types.Image, plate: bpy.types.Image, normal: bpy.types.Image | None
) -> list[tuple[bpy.types.Node, bpy.types.Image]]:
    """(node, new image) for each image texture to change: the photo's, and with `normal` the normal map's."""
    found = []
    for node in material.node_tree.nodes:
        if node.type != "TEX_IMAGE" or node.image is None:
            continue
        feeds_normal_map = any(link.to_node.type == "NORMAL_MAP" for output in node.outputs for link in output.links)
        if normal is not None and feeds_normal_map:
            found.append((node, normal))
        elif node.image == photo:
            found.append((node, plate))
    return found


def rebuild_mesh(obj: bpy.types.Object, grid: GridMesh) -> None:
    """Give `obj` a new mesh from `grid`, keeping its materials; the old mesh is removed when nothing else uses it."""
    old = obj.data
    mesh = grid_mesh(old.name, grid, smooth=any(polygon.use_smooth for polygon in old.polygons))
    for material in old.materials:
        mesh.materials.append(material)
    obj.data = mesh
    if old.users == 0:
        bpy.data.meshes.remove(old)
