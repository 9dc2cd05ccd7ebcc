"""Tools on a reconstructed video (Camera Path from Video's collection): Level Ground, Scale Scene and Open COLMAP
Folder. They work on the reconstruction the active object belongs to and change only its empty's matrix
(scene/reconstruction.py), so the camera path and the points move together; each is one undo step.

Scale. Depth Anything 3 Small and Base give relative depth: the scene's units are the model's. One known length
sets them: the distance between two points of the cloud selected in Edit Mode, or the camera's height above the
ground at the current frame. Either rescales about the ground point under the first camera, so a levelled
ground stays at Z = 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import bpy
import numpy as np

from ...contract import InputError
from ..scene import reconstruction
from ..scene.ground_plane import Plane, fit_ground, level_matrix, scale_factor, scaled_about
from .availability import poll_with_reason

NO_RECONSTRUCTION = "Select an object of a Camera Path from Video reconstruction"
NO_POINTS = "This reconstruction has no point cloud: run Camera Path from Video with Point Cloud on"


def active_root(context: bpy.types.Context) -> bpy.types.Object | None:
    return reconstruction.find_root(getattr(context, "active_object", None))


def reconstruction_reason(context: bpy.types.Context, *, points: bool) -> str | None:
    root = active_root(context)
    if root is None:
        return NO_RECONSTRUCTION
    if points and reconstruction.points_of(root) is None:
        return NO_POINTS
    return None


def ground_of(root: bpy.types.Object) -> Plane:
    """The ground stored on the reconstruction, else found in its points now (and stored)."""
    plane = reconstruction.ground(root)
    if plane is None:
        plane = detect_ground(root)
    return plane


def detect_ground(root: bpy.types.Object) -> Plane:
    points = reconstruction.points_of(root)
    if points is None:
        raise InputError(f"{NO_POINTS}.")
    plane = fit_ground(reconstruction.local_points(points))
    reconstruction.store_ground(root, plane)
    return plane


class ReconstructionTool:
    bl_options = {"REGISTER", "UNDO"}
    needs_points = True

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return poll_with_reason(cls, reconstruction_reason(context, points=cls.needs_points))

    def report_refusal(self, error: InputError) -> set[str]:
        getattr(self, "report")({"WARNING"}, str(error))  # noqa: B009  # a bpy.types.Operator subclass
        return {"CANCELLED"}


class IMAGEFORGE_OT_level_ground(ReconstructionTool, bpy.types.Operator):
    """Find the ground in the point cloud and turn the reconstruction so the ground is Z = 0 under its camera"""

    bl_idname = "imageforge.level_ground"
    bl_label = "Level Ground"

    def execute(self, context: bpy.types.Context) -> set[str]:
        root = active_root(context)
        try:
            plane = detect_ground(root)
        except InputError as error:
            return self.report_refusal(error)
        origin = reconstruction.world_matrix(root)[:3, 3]
        matrix = level_matrix(plane, reconstruction.uniform_scale(root), (float(origin[0]), float(origin[1])))
        reconstruction.set_world_matrix(root, matrix)
        self.report({"INFO"}, f"Ground levelled: {plane.inliers / plane.total:.0%} of the points lie on it")
        return {"FINISHED"}


class IMAGEFORGE_OT_scale_scene(ReconstructionTool, bpy.types.Operator):
    """Scale the reconstruction (camera path and points together) so that one known length is right"""

    bl_idname = "imageforge.scale_scene"
    bl_label = "Scale Scene"

    known: bpy.props.EnumProperty(
        name="Known",
        items=(
            ("DISTANCE", "Distance", "The distance between the two points selected in the point cloud (Edit Mode)"),
            ("CAMERA_HEIGHT", "Camera Height", "The camera's height above the ground at the current frame"),
        ),
        default="DISTANCE",
    )
    length: bpy.props.FloatProperty(
        name="Length", description="What the known length really is", default=1.0, min=1e-6, subtype="DISTANCE"
    )

    def invoke(self, context: bpy.types.Context, _event: Any) -> set[str]:
        return context.window_manager.invoke_props_dialog(self, title=self.bl_label)

    def execute(self, context: bpy.types.Context) -> set[str]:
        root = active_root(context)
        try:
            measured = self.measured(context, root)
            factor = scale_factor(self.length, measured, "distance" if self.known == "DISTANCE" else "camera height")
            plane = reconstruction.ground(root)
            world = reconstruction.world_matrix(root)
            foot = np.zeros(3) if plane is None else plane.foot(np.zeros(3))  # under the first camera
            pivot = (world @ np.append(foot, 1.0))[:3]
            reconstruction.set_world_matrix(root, scaled_about(world, factor, pivot))
        except InputError as error:
            return self.report_refusal(error)
        settings = reconstruction.settings(root)
        settings["scale"] = float(settings.get("scale", 1.0)) * factor
        self.report({"INFO"}, f"Scaled the scene ×{factor:.4g}: {measured:.4g} → {self.length:.4g}")
        return {"FINISHED"}

    def measured(self, context: bpy.types.Context, root: bpy.types.Object) -> float:
        """The known length as the scene has it now, in world units."""
        world = reconstruction.world_matrix(root)
        scale = reconstruction.uniform_scale(root)
        if self.known == "DISTANCE":
            points = reconstruction.points_of(root)
            chosen = reconstruction.selected_points(points) if points is not None else np.zeros((0, 3))
            if len(chosen) != 2:
                raise InputError(f"Select exactly two points of the point cloud in Edit Mode ({len(chosen)} selected).")
            return float(np.linalg.norm(chosen[0] - chosen[1])) * scale
        camera = reconstruction.camera_of(root)
        if camera is None:
            raise InputError("This reconstruction has no camera.")
        plane = ground_of(root)
        local = np.linalg.inv(world) @ np.append(np.array(camera.matrix_world.translation), 1.0)
        return abs(float(plane.distance(local[:3][None])[0])) * scale


class IMAGEFORGE_OT_open_colmap_folder(ReconstructionTool, bpy.types.Operator):
    """Open the folder the reconstruction's COLMAP export was unpacked into"""

    bl_idname = "imageforge.open_colmap_folder"
    bl_label = "Open COLMAP Folder"
    bl_options = {"REGISTER"}
    needs_points = False

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        root = active_root(context)
        reason = reconstruction_reason(context, points=False)
        if reason is None and colmap_folder(root) is None:
            reason = "No COLMAP export: run Camera Path from Video with Export COLMAP"
        return poll_with_reason(cls, reason)

    def execute(self, context: bpy.types.Context) -> set[str]:
        folder = colmap_folder(active_root(context))
        if folder is None or not folder.is_dir():
            self.report({"WARNING"}, f"The COLMAP folder '{folder}' is gone.")
            return {"CANCELLED"}
        return bpy.ops.wm.path_open(filepath=str(folder))


def colmap_folder(root: bpy.types.Object | None) -> Path | None:
    stored = reconstruction.settings(root).get("colmap") if root is not None else None
    return Path(stored) if stored else None


CLASSES = (IMAGEFORGE_OT_level_ground, IMAGEFORGE_OT_scale_scene, IMAGEFORGE_OT_open_colmap_folder)
