"""Convert to Depth Plane and Cutout: jobs whose results become new meshes, materials and a camera."""

from __future__ import annotations

from typing import Any

import bpy
from blendjob import JobResult

from ...contract import InputError, JobId
from ...contract.jobs import CutoutParams, DepthPlaneParams, NormalMode
from ...contract.results import ResultName
from ...contract.sizes import geometry_size_problem
from ..preferences import job_parameters
from ..scene.background_plane import (
    SUBDIVISIONS,
    depth_planes_of,
    rebuild_mesh,
    show_clean_plate,
)
from ..scene.depth_grid import (
    GridMesh,
    flat_grid,
)
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
from .listing import Listing, SelectionAction, SelectionRow, Surface
from .model_choice import background_model_property, chosen_background_model

CUTOUT_SIZE = 1.0  # metres along the longer side of a flat cutout


def refuse_unanalysable(image: bpy.types.Image, max_input_size: int) -> None:
    """The server's rule (contract/sizes.py), before anything is sent: a still too small for a camera."""
    if (problem := geometry_size_problem((int(image.size[0]), int(image.size[1])), max_input_size)) is not None:
        raise InputError(problem)


class IMAGEFORGE_OT_depth_plane(DepthTearing, ImageTool, ImageForgeJobOperator, bpy.types.Operator):
    """Turn the active image into a mesh displaced by estimated depth, with a camera that reproduces the photo"""

    bl_idname = "imageforge.depth_plane"
    listings = (
        Listing(Surface.TOOLS_MENU, 50, "MOD_DISPLACE"),
        Listing(Surface.TOOLS_PANEL, 50, "MOD_DISPLACE", separated=True),
    )
    bl_label = "Convert to Depth Plane"
    job_id = JobId.GENERATE_DEPTH_PLANE_GEOMETRY

    subdivisions: subdivision_property(7)

    def prepare(self, context: bpy.types.Context) -> DepthPlaneParams:
        image = self.target_image(context)
        params = job_parameters(DepthPlaneParams, input=self.input_path(image))
        refuse_unanalysable(image, params.max_input_size)
        return params

    def land(self, context: bpy.types.Context, result: JobResult) -> str:
        image = self.landed_image()
        # Read and check every result before creating anything, so a bad file leaves the scene as it was.
        points, weight = read_depth(result)
        intrinsics = read_metadata(result.file(ResultName.DEPTH_METADATA)).scaled(*image.size)
        grid = self.depth_mesh(points, weight, self.subdivisions)
        if len(grid.faces) == 0:
            raise InputError("The depth map has no valid pixels; try another image or a higher resolution level.")
        normal = normal_image(result.file(ResultName.NORMAL), f"{image.name} Normal", camera_space=True)
        depths = -grid.vertices[:, 2]
        plane, camera = land_depth_plane(
            context, f"{image.name} Depth Plane", image, image, grid, intrinsics, self.subdivisions, normal=normal
        )
        select_only(context, plane, camera)
        return (
            f"Depth plane: {len(grid.vertices)} vertices, depth {depths.min():.2f}–{depths.max():.2f} m, "
            f"camera {camera.data.lens:.1f} mm{torn_note(grid)}"
        )


class IMAGEFORGE_OT_cutout(DepthTearing, ImageTool, ImageForgeJobOperator, bpy.types.Operator):
    """Cut the drawn region out of the image as a mesh (flat or displaced by depth) with its own material"""

    bl_idname = "imageforge.cutout"
    listings = (Listing(Surface.TOOLS_MENU, 40, "MOD_MASK"),)
    selection_action = SelectionAction(
        "CUTOUT",
        "Cutout",
        20,
        forwards=("displace",),
        rows=(SelectionRow("Cutout", {"displace": False}), SelectionRow("Cutout with Depth", {"displace": True})),
    )
    bl_label = "Cutout"
    job_id = JobId.GENERATE_CUTOUT_ARTIFACTS

    selection: selection_property()
    refine: refine_property()
    displace: bpy.props.BoolProperty(
        name="Displace by Depth", description="Shape the cutout by estimated depth instead of keeping it flat"
    )
    normal_map: bpy.props.BoolProperty(name="Normal Map", description="Add a normal map to the material", default=True)
    fill_behind: bpy.props.BoolProperty(
        name="Fill Behind",
        description="Give this image's depth plane a clean plate (the cut-out region inpainted) and continue its "
        "surface behind the cutout, so no ghost of the object stays on the background",
        default=True,
    )
    subdivisions: subdivision_property(6)
    background_model: background_model_property()

    def invoke(self, context: bpy.types.Context, _event: Any) -> set[str]:
        if not self.selection:
            return start_drawing(self, "CUTOUT", displace=self.displace)
        return self.execute(context)

    def prepare(self, context: bpy.types.Context) -> CutoutParams:
        image = self.target_image(context)
        selection = parse_selection(self.selection, image) if self.selection else None
        normal_mode = NormalMode.NONE
        if self.normal_map:
            normal_mode = NormalMode.OBJECT if self.displace else NormalMode.TANGENT
        self._normal_mode = normal_mode
        self._fill = self.fill_behind and bool(depth_planes_of(image))
        params = job_parameters(
            CutoutParams,
            input=self.input_path(image),
            selection=selection,
            refine=self.refine,
            generate_depth=self.displace or self._fill,  # the background depth comes with the geometry
            normal_mode=normal_mode,
            fill_behind=self._fill,
            **chosen_background_model(self.background_model, "background_model"),  # the refine step's model
        )
        if params.generate_depth or params.normal_mode is not NormalMode.NONE:  # the geometry model runs
            refuse_unanalysable(image, params.max_input_size)
        return params

    def land(self, context: bpy.types.Context, result: JobResult) -> str:
        source = self.landed_image()
        alpha = read_data_file(result.file(ResultName.SELECTION_ALPHA))[..., 0]
        name = f"{source.name} Cutout"
        if self.displace and ResultName.DEPTH in (result.value or {}):
            points, weight = read_depth(result)
            grid, matrix = displaced_cutout(self, points, weight, alpha, self.subdivisions, placement(context))
        else:
            grid, matrix = flat_grid(alpha, self.subdivisions, CUTOUT_SIZE), placement(context)
        if len(grid.faces) == 0:
            raise InputError("The selection is empty after cutting out; draw a larger region.")
        behind = self.background_grids(result, source) if self._fill else []
        cutout = load_packed_image(result.file(ResultName.CUTOUT), name)
        normal = None
        if self._normal_mode is not NormalMode.NONE and ResultName.NORMAL in (result.value or {}):
            camera_space = self._normal_mode is NormalMode.OBJECT
            normal = normal_image(result.file(ResultName.NORMAL), f"{name} Normal", camera_space=camera_space)
        space = "OBJECT" if self._normal_mode is NormalMode.OBJECT else "TANGENT"
        obj = grid_mesh_object(context, name, grid, matrix, smooth=self.displace)
        obj.data.materials.append(photo_material(name, cutout, normal=normal, normal_space=space))
        note = self.fill_planes(result, source, behind) if self._fill else self.no_fill_note(source)
        select_only(context, obj)
        return f"Cutout '{obj.name}': {len(grid.vertices)} vertices{torn_note(grid)}{note}"

    def background_grids(self, result: JobResult, source: bpy.types.Image) -> list[tuple[bpy.types.Object, GridMesh]]:
        """Each depth plane of `source` with its mesh rebuilt from the filled depth (read before anything changes)."""
        if ResultName.BACKGROUND_DEPTH not in (result.value or {}):
            return []
        points, weight = read_depth(result, ResultName.BACKGROUND_DEPTH)
        planes = depth_planes_of(source)
        return [(plane, self.depth_mesh(points, weight, int(plane.get(SUBDIVISIONS, 7)))) for plane in planes]

    def fill_planes(
        self, result: JobResult, source: bpy.types.Image, behind: list[tuple[bpy.types.Object, GridMesh]]
    ) -> str:
        plate = load_packed_image(result.file(ResultName.BACKGROUND), f"{source.name} Clean Plate")
        normal = None
        if ResultName.BACKGROUND_NORMAL in (result.value or {}):
            normal = normal_image(
                result.file(ResultName.BACKGROUND_NORMAL), f"{source.name} Clean Plate Normal", camera_space=True
            )
        planes = depth_planes_of(source)
        for plane in planes:
            show_clean_plate(plane, source, plate, normal)
        for plane, grid in behind:
            if len(grid.faces):
                rebuild_mesh(plane, grid)
        return f"; clean plate and filled depth on {', '.join(repr(plane.name) for plane in planes)}"

    def no_fill_note(self, source: bpy.types.Image) -> str:
        if not self.fill_behind:
            return ""
        return f"; nothing to fill behind: no depth plane of '{source.name}' (Convert to Depth Plane first)"


CLASSES = (IMAGEFORGE_OT_depth_plane, IMAGEFORGE_OT_cutout)
