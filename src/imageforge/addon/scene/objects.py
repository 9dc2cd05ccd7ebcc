"""Create the Blender objects results become: grid meshes and cameras.

Placement convention: a new camera stands at the 3D cursor looking along world +Y (upright, like a front
view), and a depth mesh gets the camera's world matrix, so the mesh's local space is the camera's.
"""

from __future__ import annotations

import math

import bpy
import numpy as np
from mathutils import Euler, Matrix, Vector

from .depth_grid import GridMesh
from .intrinsics import CameraFit

FRONT_VIEW = Euler((math.pi / 2.0, 0.0, 0.0))  # camera -Z (its view axis) onto world +Y, +Y up onto world +Z


def placement(context: bpy.types.Context) -> Matrix:
    """World matrix for new results: at the 3D cursor, facing world +Y."""
    return Matrix.Translation(Vector(context.scene.cursor.location)) @ FRONT_VIEW.to_matrix().to_4x4()


def grid_mesh_object(
    context: bpy.types.Context, name: str, grid: GridMesh, matrix: Matrix, *, smooth: bool = True
) -> bpy.types.Object:
    """A mesh object from a GridMesh (quads with a UV map), linked into the active collection."""
    obj = bpy.data.objects.new(name, grid_mesh(name, grid, smooth=smooth))
    obj.matrix_world = matrix
    context.collection.objects.link(obj)
    return obj


def grid_mesh(name: str, grid: GridMesh, *, smooth: bool = True) -> bpy.types.Mesh:
    """Mesh data from a GridMesh: quads with a UV map."""
    if len(grid.faces) == 0:
        raise ValueError("No valid pixels: nothing to build a mesh from")
    mesh = bpy.data.meshes.new(name)
    mesh.vertices.add(len(grid.vertices))
    mesh.vertices.foreach_set("co", grid.vertices.ravel())
    mesh.loops.add(grid.faces.size)
    mesh.loops.foreach_set("vertex_index", grid.faces.ravel())
    mesh.polygons.add(len(grid.faces))
    mesh.polygons.foreach_set("loop_start", np.arange(0, grid.faces.size, 4, dtype=np.int32))
    uv_layer = mesh.uv_layers.new(name="UVMap")
    uv_layer.data.foreach_set("uv", grid.uvs[grid.faces.ravel()].ravel())
    mesh.update(calc_edges=True)
    mesh.validate(clean_customdata=False)
    if smooth:
        mesh.shade_smooth()
    return mesh


def camera_object(
    context: bpy.types.Context,
    name: str,
    fit: CameraFit,
    matrix: Matrix,
    *,
    far: float,
    focus: float | None,
    collection: bpy.types.Collection | None = None,
) -> bpy.types.Object:
    """A camera reproducing `fit`, in `collection` (default: the active one); the scene's render resolution takes
    the photo's size so aspects match.

    It becomes the scene camera only when the scene has none: an existing shot is not taken over.
    """
    data = bpy.data.cameras.new(name)
    data.sensor_fit = fit.sensor_fit
    data.sensor_width = fit.sensor_width
    data.sensor_height = fit.sensor_height
    data.lens = fit.lens
    data.shift_x = fit.shift_x
    data.shift_y = fit.shift_y
    data.clip_start = 0.01
    data.clip_end = max(100.0, far * 2.0)
    if focus is not None:
        data.dof.focus_distance = focus
    obj = bpy.data.objects.new(name, data)
    obj.matrix_world = matrix
    (collection or context.collection).objects.link(obj)
    render = context.scene.render
    render.resolution_x, render.resolution_y = fit.resolution
    render.pixel_aspect_x = render.pixel_aspect_y = 1.0
    if context.scene.camera is None:
        context.scene.camera = obj
    return obj


def select_only(context: bpy.types.Context, active: bpy.types.Object, *others: bpy.types.Object) -> None:
    for obj in context.view_layer.objects:
        obj.select_set(False)
    for obj in (active, *others):
        obj.select_set(True)
    context.view_layer.objects.active = active
