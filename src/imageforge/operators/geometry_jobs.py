"""Convert to Depth Plane and Cutout: jobs whose results become new meshes, materials and a camera."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import bpy
import numpy as np
from blendjob import JobResult
from mathutils import Matrix, Vector

from .. import preferences
from ..contract import InputError, JobId
from ..contract.catalog import Family
from ..contract.jobs import NormalMode
from ..scene.depth_grid import (
    SUBDIVISION_MAX,
    SUBDIVISION_MIN,
    TEAR_RATIO_DEFAULT,
    TEAR_RATIO_MIN,
    GridMesh,
    depth_grid,
    flat_grid,
)
from ..scene.intrinsics import camera_fit, read_metadata
from ..scene.materials import normal_image, photo_material
from ..scene.objects import camera_object, grid_mesh_object, placement, select_only
from ..scene.pixels import read_data_file
from .base import ImageForgeJobOperator
from .image_jobs import ImageTool, parse_selection, selection_property, start_drawing

CUTOUT_SIZE = 1.0  # metres along the longer side of a flat cutout


def subdivision_property(default: int) -> Any:
    return bpy.props.IntProperty(
        name="Subdivisions",
        description="Mesh detail: 2^n faces along the image's longer side",
        default=default,
        min=SUBDIVISION_MIN,
        max=SUBDIVISION_MAX,
    )


class DepthTearing:
    """Removing the faces that would stretch across depth jumps (scene/depth_grid.py)."""

    tear: bpy.props.BoolProperty(
        name="Tear at Depth Jumps",
        description="Remove faces across depth discontinuities so foreground and background separate "
        "instead of being joined by stretched faces",
        default=True,
    )
    tear_ratio: bpy.props.FloatProperty(
        name="Tear Ratio",
        description="A face is removed when the depths at the ends of one of its edges differ by more than "
        "this ratio (1.2: the far end 20% farther than the near end)",
        default=TEAR_RATIO_DEFAULT,
        min=TEAR_RATIO_MIN,
        soft_max=3.0,
        max=100.0,
    )

    def depth_mesh(self, points: np.ndarray, weight: np.ndarray, subdivisions: int) -> GridMesh:
        return depth_grid(points, weight, subdivisions, tear_ratio=self.tear_ratio if self.tear else None)


def torn_note(grid: GridMesh) -> str:
    return f", {grid.torn} faces torn at depth jumps" if grid.torn else ""


def geometry_parameters() -> dict[str, Any]:
    prefs = preferences.get_preferences()
    return {"resolution_level": preferences.job_resolution_level(prefs)}


def read_depth(result: JobResult) -> tuple[np.ndarray, np.ndarray]:
    """Camera-space points (h, w, 3) and weight (h, w) = alpha × validity, top row first."""
    depth = read_data_file(result.file("depth"))
    return depth[..., :3], depth[..., 3]


class IMAGEFORGE_OT_depth_plane(DepthTearing, ImageTool, ImageForgeJobOperator, bpy.types.Operator):
    """Turn the active image into a mesh displaced by estimated depth, with a camera that reproduces the photo"""

    bl_idname = "imageforge.depth_plane"
    bl_label = "Convert to Depth Plane"
    job_id = JobId.GENERATE_DEPTH_PLANE_GEOMETRY

    subdivisions: subdivision_property(7)

    def prepare(self, context: bpy.types.Context) -> dict[str, Any]:
        image = self.target_image(context)
        return {
            **self.input_parameters(image),
            **geometry_parameters(),
            "model": preferences.job_model(preferences.get_preferences(), Family.GEOMETRY),
        }

    def land(self, context: bpy.types.Context, result: JobResult) -> str:
        image = self.landed_image()
        # Read and check every result before creating anything, so a bad file leaves the scene as it was.
        points, weight = read_depth(result)
        intrinsics = read_metadata(result.file("depth_metadata")).scaled(*image.size)
        grid = self.depth_mesh(points, weight, self.subdivisions)
        if len(grid.faces) == 0:
            raise InputError("The depth map has no valid pixels; try another image or a higher resolution level.")
        normal = normal_image(result.file("normal"), f"{image.name} Normal", camera_space=True)
        depths = -grid.vertices[:, 2]
        matrix = placement(context)
        camera = camera_object(
            context,
            f"{image.name} Camera",
            camera_fit(intrinsics),
            matrix,
            far=float(depths.max()),
            focus=intrinsics.reference_depth,
        )
        plane = grid_mesh_object(context, f"{image.name} Depth Plane", grid, matrix)
        plane.data.materials.append(photo_material(f"{image.name} Depth Plane", image, normal=normal))
        select_only(context, plane, camera)
        return (
            f"Depth plane: {len(grid.vertices)} vertices, depth {depths.min():.2f}–{depths.max():.2f} m, "
            f"camera {camera.data.lens:.1f} mm{torn_note(grid)}"
        )


class IMAGEFORGE_OT_cutout(DepthTearing, ImageTool, ImageForgeJobOperator, bpy.types.Operator):
    """Cut the drawn region out of the image as a mesh (flat or displaced by depth) with its own material"""

    bl_idname = "imageforge.cutout"
    bl_label = "Cutout"
    job_id = JobId.GENERATE_CUTOUT_ARTIFACTS

    selection: selection_property()
    refine: bpy.props.BoolProperty(
        name="Refine Edges", description="Refine the selection's edges with the background model", default=True
    )
    displace: bpy.props.BoolProperty(
        name="Displace by Depth", description="Shape the cutout by estimated depth instead of keeping it flat"
    )
    normal_map: bpy.props.BoolProperty(name="Normal Map", description="Add a normal map to the material", default=True)
    subdivisions: subdivision_property(6)

    def invoke(self, context: bpy.types.Context, _event: Any) -> set[str]:
        if not self.selection:
            return start_drawing(self, "CUTOUT", displace=self.displace)
        return self.execute(context)

    def prepare(self, context: bpy.types.Context) -> dict[str, Any]:
        image = self.target_image(context)
        selection = parse_selection(self.selection, image) if self.selection else None
        normal_mode = NormalMode.NONE
        if self.normal_map:
            normal_mode = NormalMode.OBJECT if self.displace else NormalMode.TANGENT
        self._normal_mode = normal_mode
        prefs = preferences.get_preferences()
        return {
            **self.input_parameters(image),
            **geometry_parameters(),
            "selection": selection,
            "refine": self.refine,
            "generate_depth": self.displace,
            "normal_mode": normal_mode.value,
            "geometry_model": preferences.job_model(prefs, Family.GEOMETRY),
            "background_model": preferences.job_model(prefs, Family.BACKGROUND),
        }

    def land(self, context: bpy.types.Context, result: JobResult) -> str:
        source = self.landed_image()
        alpha = read_data_file(result.file("selection_alpha"))[..., 0]
        name = f"{source.name} Cutout"
        if self.displace and "depth" in (result.value or {}):
            grid, matrix = self.displaced_grid(context, result, alpha)
        else:
            grid, matrix = flat_grid(alpha, self.subdivisions, CUTOUT_SIZE), placement(context)
        if len(grid.faces) == 0:
            raise InputError("The selection is empty after cutting out; draw a larger region.")
        cutout = bpy.data.images.load(str(result.file("cutout")), check_existing=False)
        cutout.name = name
        cutout.pack()
        normal = None
        if self._normal_mode is not NormalMode.NONE and "normal" in (result.value or {}):
            camera_space = self._normal_mode is NormalMode.OBJECT
            normal = normal_image(result.file("normal"), f"{name} Normal", camera_space=camera_space)
        space = "OBJECT" if self._normal_mode is NormalMode.OBJECT else "TANGENT"
        obj = grid_mesh_object(context, name, grid, matrix, smooth=self.displace)
        obj.data.materials.append(photo_material(name, cutout, normal=normal, normal_space=space))
        select_only(context, obj)
        return f"Cutout '{obj.name}': {len(grid.vertices)} vertices{torn_note(grid)}"

    def displaced_grid(
        self, context: bpy.types.Context, result: JobResult, alpha: np.ndarray
    ) -> tuple[GridMesh, Matrix]:
        """Depth-shaped mesh centred on its own origin, placed at the cursor facing like a depth plane."""
        points, weight = read_depth(result)
        grid = self.depth_mesh(points, weight * resample_nearest(alpha, weight.shape), self.subdivisions)
        if len(grid.vertices) == 0:
            return grid, placement(context)
        centre = grid.vertices.mean(axis=0)
        centred = replace(grid, vertices=grid.vertices - centre)
        return centred, placement(context) @ Matrix.Translation(Vector(centre.tolist()))


def resample_nearest(values: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Nearest-neighbour resize of a (h, w) array, for a matte at another resolution than the depth."""
    rows = np.minimum((np.arange(shape[0]) + 0.5) * values.shape[0] / shape[0], values.shape[0] - 1).astype(int)
    columns = np.minimum((np.arange(shape[1]) + 0.5) * values.shape[1] / shape[1], values.shape[1] - 1).astype(int)
    return values[np.ix_(rows, columns)]


CLASSES = (IMAGEFORGE_OT_depth_plane, IMAGEFORGE_OT_cutout)
