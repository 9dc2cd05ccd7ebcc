"""A depth plane in the scene: the mesh of a depth result placed at the 3D cursor, its photo material, and the
camera that sees it as the photo was taken; and the camera-space points a depth result holds."""

from __future__ import annotations

import bpy
import numpy as np
from blendjob import JobResult

from ...contract.results import ResultName
from .background_plane import tag_depth_plane
from .depth_grid import GridMesh
from .intrinsics import PixelIntrinsics, camera_fit
from .materials import photo_material
from .objects import camera_object, grid_mesh_object, placement
from .pixels import read_data_file


def land_depth_plane(
    context: bpy.types.Context,
    name: str,
    source: bpy.types.Image,
    texture: bpy.types.Image,
    grid: GridMesh,
    intrinsics: PixelIntrinsics,
    subdivisions: int,
    *,
    normal: bpy.types.Image | None = None,
    focus: float | None = None,
) -> tuple[bpy.types.Object, bpy.types.Object]:
    """A depth plane of `source` showing `texture`, and the camera that sees it as the photo, at the cursor."""
    matrix = placement(context)
    far = float((-grid.vertices[:, 2]).max())
    focus = intrinsics.reference_depth if focus is None else focus
    image_name = source.name
    camera = camera_object(context, f"{image_name} Camera", camera_fit(intrinsics), matrix, far=far, focus=focus)
    plane = grid_mesh_object(context, name, grid, matrix)
    plane.data.materials.append(photo_material(name, texture, normal=normal))
    tag_depth_plane(plane, source, subdivisions)
    return plane, camera


def read_depth(result: JobResult, name: ResultName = ResultName.DEPTH) -> tuple[np.ndarray, np.ndarray]:
    """Camera-space points (h, w, 3) and weight (h, w) = alpha × validity, top row first."""
    depth = read_data_file(result.file(name))
    return depth[..., :3], depth[..., 3]
