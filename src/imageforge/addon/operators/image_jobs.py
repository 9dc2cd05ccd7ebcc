"""Remove Background, Upscale Image, Refine Selection, Remove Background in Selection and Fill Selection: jobs
whose result replaces the image in place. The last three take a selection: a box or lasso from Draw Selection, or
Click Select's mask."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import bpy
import numpy as np
from blendjob import JobResult

from ...contract import InputError, JobId
from ...contract.jobs import (
    InpaintImageParams,
    OutputKind,
    RefineImageSelectionParams,
    RemoveBackgroundParams,
    UpscaleImageParams,
)
from ...contract.results import ResultName
from ..preferences import job_parameters
from ..scene.active_image import find_active_image
from ..scene.pixels import read_data_file
from ..scene.replace import keep_within, matte_from_file, multiply_alpha, replace_from_file, replace_within
from ..scene.selection import refined_region
from .base import ImageForgeJobOperator
from .image_tool import ImageTool, parse_selection, selection_property, start_drawing
from .listing import Listing, SelectionAction, Surface
from .model_choice import background_model_property, chosen_background_model
from .upscale_size import scale_property, target_size


class IMAGEFORGE_OT_remove_background(ImageTool, ImageForgeJobOperator, bpy.types.Operator):
    """Remove the background of the active image; the result replaces it in place"""

    bl_idname = "imageforge.remove_background"
    bl_label = "Remove Background"
    listings = (Listing(Surface.TOOLS_MENU, 10, "IMAGE_RGB_ALPHA"), Listing(Surface.TOOLS_PANEL, 10, "IMAGE_RGB_ALPHA"))
    job_id = JobId.REMOVE_BACKGROUND

    background_model: background_model_property()

    def prepare(self, context: bpy.types.Context) -> RemoveBackgroundParams:
        image = self.target_image(context)
        # Float (HDR) images get the matte only and are multiplied here: their values never pass through PNG.
        self._float = image.is_float
        kind = OutputKind.ALPHA if self._float else OutputKind.FOREGROUND
        return job_parameters(
            RemoveBackgroundParams,
            input=self.input_path(image),
            output_kind=kind,
            **chosen_background_model(self.background_model),
        )

    def land(self, _context: bpy.types.Context, result: JobResult) -> str:
        image = self.landed_image()
        if self._float:
            multiply_alpha(image, matte_from_file(result.file(ResultName.ALPHA)), result.directory)
        else:
            replace_from_file(image, result.file(ResultName.FOREGROUND))
        return f"Removed the background of '{image.name}'"


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
            return cls.__doc__ or ""
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

    def prepare(self, context: bpy.types.Context) -> UpscaleImageParams:
        image = self.target_image(context)
        return job_parameters(UpscaleImageParams, input=self.input_path(image), scale=int(self.scale))

    def land(self, _context: bpy.types.Context, result: JobResult) -> str:
        image = self.landed_image()
        replace_from_file(image, result.file(ResultName.UPSCALE))
        return f"Upscaled '{image.name}' to {image.size[0]} × {image.size[1]} px"


class RefinedSelectionTool(ImageTool):
    """A tool that runs the background model on a selection's crop (refine-image-selection) and lands its matte
    around the selection: Refine Selection and Remove Background in Selection. Subclasses set `drawing_action`
    (Draw Selection's action when nothing is selected yet) and `nothing_selected` (the sentence otherwise)."""

    if TYPE_CHECKING:  # what the job operator this mixin joins provides (operators/base.py)

        def execute(self, context: bpy.types.Context) -> set[str]: ...

    drawing_action = ""
    nothing_selected = ""

    selection: selection_property()
    padding: bpy.props.IntProperty(
        name="Padding", description="Context pixels the model sees around the selection", default=32, min=0
    )
    background_model: background_model_property()

    def invoke(self, context: bpy.types.Context, _event: Any) -> set[str]:
        if not self.selection:  # from F3 or a menu: draw the region first
            return start_drawing(self, self.drawing_action)
        return self.execute(context)

    def prepare(self, context: bpy.types.Context) -> RefineImageSelectionParams:
        image = self.target_image(context)
        if not self.selection:
            raise InputError(self.nothing_selected)
        selection = parse_selection(self.selection, image)
        self._selection = selection.to_dict()
        self._float = image.is_float
        return job_parameters(
            RefineImageSelectionParams,
            input=self.input_path(image),
            selection=selection,
            padding=self.padding,
            **chosen_background_model(self.background_model),
        )

    def refined(self, result: JobResult) -> tuple[bpy.types.Image, np.ndarray, np.ndarray]:
        """The image, the result (float images: the matte; byte images: the RGBA cutout) and where it lands.

        The server's matte reaches a little beyond the drawn selection (soft edges it grew into): it lands
        wherever it is defined around the selection, not only inside it (scene/selection.py refined_region)."""
        image = self.landed_image()
        if self._float:
            values = matte_from_file(result.file(ResultName.ALPHA))
            return image, values, refined_region(self._selection, self.padding, values)
        values = read_data_file(result.file(ResultName.CUTOUT))
        return image, values, refined_region(self._selection, self.padding, values[..., 3])


class IMAGEFORGE_OT_refine_selection(RefinedSelectionTool, ImageForgeJobOperator, bpy.types.Operator):
    """Refine the background matte inside a drawn box or lasso; only that region and its soft edge change"""

    bl_idname = "imageforge.refine_selection"
    bl_label = "Refine Selection"
    listings = (Listing(Surface.TOOLS_MENU, 30, "SELECT_SET"),)
    selection_action = SelectionAction("REFINE", "Refine Selection", 10)
    job_id = JobId.REFINE_IMAGE_SELECTION
    drawing_action = "REFINE"
    nothing_selected = "Draw a box or lasso on the image first (Refine Selection in the ImageForge panel)."

    def land(self, _context: bpy.types.Context, result: JobResult) -> str:
        image, values, mask = self.refined(result)
        if self._float:
            multiply_alpha(image, values, result.directory, mask)
        else:
            replace_within(image, values, mask, result.directory)
        return f"Refined {int(mask.sum())} pixels of '{image.name}'"


class IMAGEFORGE_OT_remove_background_in_selection(RefinedSelectionTool, ImageForgeJobOperator, bpy.types.Operator):
    """Remove the background of the active image, keeping only the object inside a drawn or clicked selection"""

    bl_idname = "imageforge.remove_background_in_selection"
    bl_label = "Remove Background in Selection"
    selection_action = SelectionAction("REMOVE", "Remove Background in Selection", 25)
    job_id = JobId.REFINE_IMAGE_SELECTION  # the background model on the selection's crop, as Refine Selection
    drawing_action = "REMOVE"
    nothing_selected = "Select the object first: Click Select, or draw a box or lasso around it."

    def land(self, _context: bpy.types.Context, result: JobResult) -> str:
        # Inside the refined region the model's matte; everywhere else is background: transparent.
        image, values, mask = self.refined(result)
        if self._float:
            multiply_alpha(image, np.where(mask, values, 0.0), result.directory)
        else:
            keep_within(image, values, mask, result.directory)
        return f"Removed the background of '{image.name}' outside the object in the selection"


class IMAGEFORGE_OT_fill_selection(ImageTool, ImageForgeJobOperator, bpy.types.Operator):
    """Fill a drawn or clicked selection with what could be behind it (inpainting); the rest stays as it was"""

    bl_idname = "imageforge.fill_selection"
    bl_label = "Fill Selection"
    selection_action = SelectionAction("FILL", "Fill Selection", 40)
    job_id = JobId.INPAINT_IMAGE

    selection: selection_property()

    def invoke(self, context: bpy.types.Context, _event: Any) -> set[str]:
        if not self.selection:
            return start_drawing(self, "FILL")
        return self.execute(context)

    def prepare(self, context: bpy.types.Context) -> InpaintImageParams:
        image = self.target_image(context)
        if image.is_float:
            # The fill comes back as an 8-bit PNG: landing it would clip the image's HDR values.
            raise InputError(
                f"'{image.name}' is a float (HDR) image; Fill Selection works on 8-bit images. Save a PNG copy first."
            )
        if not self.selection:
            raise InputError("Select what to fill first: Click Select, or draw a box or lasso around it.")
        selection = parse_selection(self.selection, image)
        return job_parameters(InpaintImageParams, input=self.input_path(image), selection=selection)

    def land(self, _context: bpy.types.Context, result: JobResult) -> str:
        image = self.landed_image()
        replace_from_file(image, result.file(ResultName.INPAINT))
        return f"Filled the selection of '{image.name}'"


CLASSES = (
    IMAGEFORGE_OT_remove_background,
    IMAGEFORGE_OT_upscale_image,
    IMAGEFORGE_OT_refine_selection,
    IMAGEFORGE_OT_remove_background_in_selection,
    IMAGEFORGE_OT_fill_selection,
)
