"""Remove Background, Upscale Image and Refine Selection: jobs whose result replaces the image in place."""

from __future__ import annotations

import json
from typing import Any

import bpy
from blendjob import JobResult

from ...contract import InputError, JobId
from ...contract.catalog import Family
from ...contract.jobs import OutputKind
from ...contract.parameters import Selection
from ...contract.results import ResultName
from ...contract.sizes import fit_long_edge_size
from .. import preferences
from ..scene.active_image import find_active_image, image_problem, job_input_path
from ..scene.pixels import read_data_file
from ..scene.replace import matte_from_file, multiply_alpha, replace_from_file, replace_within
from ..scene.selection import refined_region
from .availability import NO_IMAGE, tool_reason
from .base import ImageForgeJobOperator
from .listing import Listing, SelectionAction, Surface


class ImageTool:
    """Finds the image a tool works on in execute(), and finds it again by name when the result lands."""

    image_name: bpy.props.StringProperty(
        name="Image", description="Image to process (default: the active image)", options={"HIDDEN", "SKIP_SAVE"}
    )

    @classmethod
    def unavailable_reason(cls, context: bpy.types.Context) -> str | None:
        return tool_reason(context)

    def target_image(self, context: bpy.types.Context) -> bpy.types.Image:
        if self.image_name:
            image = bpy.data.images.get(self.image_name)
            if image is None:
                raise InputError(f"There is no image named '{self.image_name}'.")
        else:
            found = find_active_image(context)
            if found is None:
                raise InputError(f"{NO_IMAGE}.")
            image = found.image
        problem = image_problem(image)
        if problem:
            raise InputError(f"{problem}.")
        self._image_name = image.name
        return image

    def input_parameters(self, image: bpy.types.Image) -> dict[str, Any]:
        return {"input": str(job_input_path(image, self.temporary_directory())), **self.common_parameters()}

    def landed_image(self) -> bpy.types.Image:
        image = bpy.data.images.get(self._image_name)
        if image is None:
            raise InputError(f"The image '{self._image_name}' was removed while the job ran; nothing was changed.")
        return image


def start_drawing(operator: bpy.types.Operator, action: str, **options: Any) -> set[str]:
    """Hand over to the selection drawer, which runs `operator` again with the drawn selection."""
    if not bpy.ops.imageforge.draw_selection.poll():
        operator.report({"WARNING"}, "Draw the selection in the Image Editor or the 3D Viewport (sidebar, Tools)")
        return {"CANCELLED"}
    bpy.ops.imageforge.draw_selection("INVOKE_DEFAULT", action=action, **options)
    return {"FINISHED"}


def selection_property() -> Any:
    return bpy.props.StringProperty(
        name="Selection",
        description='Region in image pixels as JSON: {"box": [x0, y0, x1, y1]}, {"lasso": [[x, y], ...]} or '
        '{"mask": {"width": W, "height": H, "runs": [...]}} (Click Select)',
        options={"HIDDEN", "SKIP_SAVE"},
    )


def parse_selection(raw: str, image: bpy.types.Image) -> dict:
    """The selection as the contract's plain dict, checked to overlap the image."""
    try:
        selection = Selection.parse("selection", json.loads(raw))
    except ValueError as error:
        raise InputError("The selection is not valid JSON; draw it again.") from error
    width, height = image.size
    if selection.mask_file is not None:
        raise InputError("Blender sends a mask selection as run-length data; make it with Click Select.")
    mismatch = selection.size_mismatch(width, height)
    if mismatch is not None:
        raise InputError(mismatch)
    x0, y0, x1, y1 = selection.bounds
    if x1 <= 0 or y1 <= 0 or x0 >= width or y0 >= height:
        raise InputError("The selection lies outside the image; draw it on the image.")
    return selection.to_dict()


class IMAGEFORGE_OT_remove_background(ImageTool, ImageForgeJobOperator, bpy.types.Operator):
    """Remove the background of the active image; the result replaces it in place"""

    bl_idname = "imageforge.remove_background"
    bl_label = "Remove Background"
    listings = (Listing(Surface.TOOLS_MENU, 10, "IMAGE_RGB_ALPHA"), Listing(Surface.TOOLS_PANEL, 10, "IMAGE_RGB_ALPHA"))
    job_id = JobId.REMOVE_BACKGROUND

    def prepare(self, context: bpy.types.Context) -> dict[str, Any]:
        image = self.target_image(context)
        # Float (HDR) images get the matte only and are multiplied here: their values never pass through PNG.
        self._float = image.is_float
        kind = OutputKind.ALPHA if self._float else OutputKind.FOREGROUND
        return {
            **self.input_parameters(image),
            "output_kind": kind.value,
            "model": preferences.job_model(preferences.get_preferences(), Family("background")),
        }

    def land(self, _context: bpy.types.Context, result: JobResult) -> str:
        image = self.landed_image()
        if self._float:
            multiply_alpha(image, matte_from_file(result.file(ResultName.ALPHA)), result.directory)
        else:
            replace_from_file(image, result.file(ResultName.FOREGROUND))
        return f"Removed the background of '{image.name}'"


def scale_property(default: str) -> Any:
    """The Upscale tools' 2× / 4× choice, declared once for every upscale operator."""
    return bpy.props.EnumProperty(
        name="Scale",
        items=(("2", "2×", "Twice the width and height"), ("4", "4×", "Four times the width and height")),
        default=default,
    )


def upscale_target(width: int, height: int, scale: int, max_input_size: int) -> tuple[int, int]:
    """The result's size, as the server computes it: the source limited to Maximum AI Input Size along its
    longer side (fit_long_edge_size), then multiplied by the scale."""
    limited_width, limited_height = fit_long_edge_size((width, height), max_input_size)
    return (limited_width * scale, limited_height * scale)


class IMAGEFORGE_OT_upscale_image(ImageTool, ImageForgeJobOperator, bpy.types.Operator):
    """Upscale the active image 2× or 4× with an AI model; the result replaces it in place"""

    bl_idname = "imageforge.upscale_image"
    bl_label = "Upscale Image"
    listings = (
        Listing(Surface.TOOLS_MENU, 20, "FULLSCREEN_ENTER"),
        Listing(Surface.TOOLS_PANEL, 20, "FULLSCREEN_ENTER"),
    )
    job_id = JobId.UPSCALE_IMAGE

    scale: scale_property("4")

    @classmethod
    def description(cls, context: bpy.types.Context, properties: Any) -> str:
        found = find_active_image(context)
        if found is None or not found.image.size[0]:
            return cls.__doc__
        width, height = target_size(found.image, int(properties.scale))
        return f"Upscale '{found.image.name}' to {width} × {height} px; the result replaces it in place"

    @staticmethod
    def draw_tool(layout: bpy.types.UILayout, context: bpy.types.Context) -> None:
        """The Tools panel's row: Upscale 2× and 4×, each with the size it makes."""
        found = find_active_image(context)
        row = layout.row(align=True)
        for scale in (2, 4):
            text = f"Upscale {scale}×"
            if found is not None and found.image.size[0]:
                text += " → {} × {}".format(*target_size(found.image, scale))
            row.operator(IMAGEFORGE_OT_upscale_image.bl_idname, text=text, icon="FULLSCREEN_ENTER").scale = str(scale)

    def invoke(self, context: bpy.types.Context, _event: Any) -> set[str]:
        if self.properties.is_property_set("scale"):  # the panel's buttons already show the size
            return self.execute(context)
        return context.window_manager.invoke_props_dialog(self, title="Upscale Image", confirm_text="Upscale")

    def draw(self, context: bpy.types.Context) -> None:
        self.layout.prop(self, "scale", expand=True)
        found = find_active_image(context)
        if found is not None and found.image.size[0]:
            width, height = target_size(found.image, int(self.scale))
            self.layout.label(text=f"Result: {width} × {height} px")

    def prepare(self, context: bpy.types.Context) -> dict[str, Any]:
        image = self.target_image(context)
        return {
            **self.input_parameters(image),
            "scale": int(self.scale),
            "model": preferences.job_model(preferences.get_preferences(), Family("upscale")),
        }

    def land(self, _context: bpy.types.Context, result: JobResult) -> str:
        image = self.landed_image()
        replace_from_file(image, result.file(ResultName.UPSCALE))
        return f"Upscaled '{image.name}' to {image.size[0]} × {image.size[1]} px"


def target_size(image: bpy.types.Image, scale: int) -> tuple[int, int]:
    size = preferences.job_max_input_size(preferences.get_preferences())
    return upscale_target(image.size[0], image.size[1], scale, size)


class IMAGEFORGE_OT_refine_selection(ImageTool, ImageForgeJobOperator, bpy.types.Operator):
    """Refine the background matte inside a drawn box or lasso; only that region and its soft edge change"""

    bl_idname = "imageforge.refine_selection"
    bl_label = "Refine Selection"
    listings = (Listing(Surface.TOOLS_MENU, 30, "SELECT_SET"),)
    selection_action = SelectionAction("REFINE", "Refine Selection", 10)
    job_id = JobId.REFINE_IMAGE_SELECTION

    selection: selection_property()
    padding: bpy.props.IntProperty(
        name="Padding", description="Context pixels the model sees around the selection", default=32, min=0
    )

    def invoke(self, context: bpy.types.Context, _event: Any) -> set[str]:
        if not self.selection:  # from F3 or a menu: draw the region first
            return start_drawing(self, "REFINE")
        return self.execute(context)

    def prepare(self, context: bpy.types.Context) -> dict[str, Any]:
        image = self.target_image(context)
        if not self.selection:
            raise InputError("Draw a box or lasso on the image first (Refine Selection in the ImageForge panel).")
        self._selection = parse_selection(self.selection, image)
        self._float = image.is_float
        return {
            **self.input_parameters(image),
            "selection": self._selection,
            "padding": self.padding,
            "model": preferences.job_model(preferences.get_preferences(), Family("background")),
        }

    def land(self, _context: bpy.types.Context, result: JobResult) -> str:
        # The server's matte reaches a little beyond the drawn selection (soft edges it grew into): it lands
        # wherever it is defined around the selection, not only inside it (scene/selection.py refined_region).
        image = self.landed_image()
        if self._float:
            matte = matte_from_file(result.file(ResultName.ALPHA))
            mask = refined_region(self._selection, self.padding, matte)
            multiply_alpha(image, matte, result.directory, mask)
        else:
            cutout = read_data_file(result.file(ResultName.CUTOUT))
            mask = refined_region(self._selection, self.padding, cutout[..., 3])
            replace_within(image, cutout, mask, result.directory)
        return f"Refined {int(mask.sum())} pixels of '{image.name}'"


CLASSES = (IMAGEFORGE_OT_remove_background, IMAGEFORGE_OT_upscale_image, IMAGEFORGE_OT_refine_selection)
