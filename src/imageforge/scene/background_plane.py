"""The background plane a cutout leaves behind: finding an image's depth planes, giving them the clean plate and
the depth continued behind the object.

Convert to Depth Plane tags its object with the source image's name and the subdivisions it was built with, so
that a later Cutout of the same image (Fill Behind) finds it even after the user renamed it. The clean plate
replaces the photo in that plane's material only (a material ImageForge made; one shared with other objects is
copied first), and the plane's mesh is rebuilt from the filled depth; the object, its transform, modifiers
and everything else the user added stay.
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


def show_clean_plate(obj: bpy.types.Object, photo: bpy.types.Image, plate: bpy.types.Image) -> int:
    """Point every image texture of `obj`'s materials that shows `photo` at `plate`; returns how many changed."""
    changed = 0
    for slot in obj.material_slots:
        material = slot.material
        if material is None or material.node_tree is None:
            continue
        nodes = [node for node in material.node_tree.nodes if node.type == "TEX_IMAGE" and node.image == photo]
        if not nodes:
            continue
        if material.users > 1:  # never change what other objects show
            material = material.copy()
            slot.material = material
            nodes = [node for node in material.node_tree.nodes if node.type == "TEX_IMAGE" and node.image == photo]
        for node in nodes:
            node.image = plate
            changed += 1
    return changed


def rebuild_mesh(obj: bpy.types.Object, grid: GridMesh) -> None:
    """Give `obj` a new mesh from `grid`, keeping its materials; the old mesh is removed when nothing else uses it."""
    old = obj.data
    mesh = grid_mesh(old.name, grid, smooth=any(polygon.use_smooth for polygon in old.polygons))
    for material in old.materials:
        mesh.materials.append(material)
    obj.data = mesh
    if old.users == 0:
        bpy.data.meshes.remove(old)
