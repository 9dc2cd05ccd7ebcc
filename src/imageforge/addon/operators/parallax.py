"""Parallax Shot: one photo and a selection become a background plane, a cutout in front of it, and a camera move.

One Cutout job does all of it (refine, depth, fill behind): the background plane is built from the clean plate
and the depth continued behind the object, the cutout from its own depth, both in the photo camera's space, so
through that camera the shot looks like the photo and any move shows what is behind the object. The camera gets
a short dolly towards the subject (and a little sideways, which is what shows parallax), becomes the scene
camera, and the whole result is one undo step.
"""

from __future__ import annotations

from typing import Any

import bpy
from blendjob import JobResult
from mathutils import Matrix

from ...contract import InputError, JobId, ResultError
from ...contract.jobs import CutoutParams, NormalMode
from ...contract.results import ResultName
from ..preferences import job_parameters
from ..scene.animation import keyframe_matrices
from ..scene.depth_plane import land_depth_plane, read_depth
from ..scene.intrinsics import read_metadata
from ..scene.materials import load_packed_image, normal_image, photo_material
from ..scene.objects import grid_mesh_object, placement, select_only
from ..scene.pixels import read_data_file
from .base import ImageForgeJobOperator
from .depth_tools import (
    DepthTearing,
    displaced_cutout,
    refine_property,
    subdivision_property,
    torn_note,
)
from .image_tool import ImageTool, parse_selection, selection_property, start_drawing
from .listing import Listing, SelectionAction, Surface
from .model_choice import background_model_property, chosen_background_model

SIDEWAYS = 0.3  # the sideways part of the move, as a fraction of the forward part


def dolly_matrices(start: Matrix, distance: float, forward: float) -> tuple[Matrix, Matrix]:
    """The camera's first and last world matrix: `forward` × `distance` along its view axis (local −Z) and a
    third of that to its right, keeping its orientation."""
    step = forward * distance
    return start, start @ Matrix.Translation((SIDEWAYS * step, 0.0, -step))


class IMAGEFORGE_OT_parallax_shot(DepthTearing, ImageTool, ImageForgeJobOperator, bpy.types.Operator):
    """Turn the photo into a camera move: a background plane with the object inpainted away, the selected object
    as a cutout in front of it, and a short dolly"""

    bl_idname = "imageforge.parallax_shot"
    listings = (Listing(Surface.TOOLS_MENU, 60, "VIEW_CAMERA"),)
    selection_action = SelectionAction("PARALLAX", "Parallax Shot", 30)
    bl_label = "Parallax Shot"
    job_id = JobId.GENERATE_CUTOUT_ARTIFACTS

    selection: selection_property()
    refine: refine_property()
    subdivisions: subdivision_property(7)
    dolly: bpy.props.FloatProperty(
        name="Dolly",
        description="How far the camera moves towards the subject, as a fraction of its distance",
        default=0.15,
        min=0.0,
        max=0.9,
        subtype="FACTOR",
    )
    frames: bpy.props.IntProperty(name="Frames", description="Length of the camera move", default=48, min=2)
    background_model: background_model_property()

    def invoke(self, context: bpy.types.Context, _event: Any) -> set[str]:
        if not self.selection:
            return start_drawing(self, "PARALLAX")
        return self.execute(context)

    def prepare(self, context: bpy.types.Context) -> CutoutParams:
        image = self.target_image(context)
        if not self.selection:
            raise InputError("Draw a selection around the subject first (Parallax Shot in the Tools panel).")
        return job_parameters(
            CutoutParams,
            input=self.input_path(image),
            selection=parse_selection(self.selection, image),
            refine=self.refine,
            generate_depth=True,
            normal_mode=NormalMode.OBJECT,
            fill_behind=True,
            **chosen_background_model(self.background_model, "background_model"),  # the refine step's model
        )

    def land(self, context: bpy.types.Context, result: JobResult) -> str:
        source = self.landed_image()
        # Read and check every result before creating anything, so a bad file leaves the scene as it was.
        intrinsics = read_metadata(result.file(ResultName.BACKGROUND_DEPTH_METADATA)).scaled(*source.size)
        subject = read_metadata(result.file(ResultName.DEPTH_METADATA))
        if subject.reference_depth is None:  # the server writes it for every cutout with depth
            raise ResultError("The cutout's depth metadata has no reference depth; run Parallax Shot again.")
        background_points, background_weight = read_depth(result, ResultName.BACKGROUND_DEPTH)
        points, weight = read_depth(result)
        alpha = read_data_file(result.file(ResultName.SELECTION_ALPHA))[..., 0]
        matrix = placement(context)
        background = self.depth_mesh(background_points, background_weight, self.subdivisions)
        cutout_grid, cutout_matrix = displaced_cutout(self, points, weight, alpha, self.subdivisions, matrix)
        if len(background.faces) == 0 or len(cutout_grid.faces) == 0:
            raise InputError("The depth map has no valid pixels here; try another image or a larger selection.")
        name = source.name
        plate = load_packed_image(result.file(ResultName.BACKGROUND), f"{name} Clean Plate")
        cutout_image = load_packed_image(result.file(ResultName.CUTOUT), f"{name} Cutout")
        normal = normal_image(result.file(ResultName.NORMAL), f"{name} Cutout Normal", camera_space=True)
        behind = normal_image(
            result.file(ResultName.BACKGROUND_NORMAL), f"{name} Clean Plate Normal", camera_space=True
        )
        plane, camera = land_depth_plane(
            context, f"{name} Background", source, plate, background, intrinsics, self.subdivisions,
            normal=behind, focus=subject.reference_depth,
        )  # fmt: skip
        cutout = grid_mesh_object(context, f"{name} Cutout", cutout_grid, cutout_matrix)
        cutout.data.materials.append(photo_material(f"{name} Cutout", cutout_image, normal=normal))
        scene = context.scene
        first = scene.frame_start
        last = first + self.frames - 1
        keyframe_matrices(camera, [first, last], dolly_matrices(matrix, subject.reference_depth, self.dolly))
        scene.frame_end = max(scene.frame_end, last)
        scene.camera = camera  # the shot is what was asked for: look through it
        select_only(context, cutout, plane, camera)
        torn = torn_note(background) + torn_note(cutout_grid)
        return (
            f"Parallax Shot: background {len(background.vertices)} and cutout {len(cutout_grid.vertices)} vertices, "
            f"dolly {self.dolly * subject.reference_depth:.2f} m over frames {first}–{last}{torn}"
        )


CLASSES = (IMAGEFORGE_OT_parallax_shot,)
