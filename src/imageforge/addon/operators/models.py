"""Model management from the panels: download one catalog model (a job), make the DA3 camera model or Click
Select's SAM 2.1 model on this machine (the convert-model job, after a dialog naming its download and time), unload
loaded models (a resource)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import bpy
from blendjob import JobResult

from ...contract import InputError, JobId
from ...contract.conversions import Conversion, Conversions, load_conversions
from ...contract.jobs import ConvertModelParams, DownloadModelParams
from ...contract.server_state import ServerState
from .. import blender_runtime
from ..health_snapshot import server_state
from ..preferences import model_catalog
from .availability import poll_with_reason
from .base import ImageForgeJobOperator


class IMAGEFORGE_OT_download_model(ImageForgeJobOperator, bpy.types.Operator):
    """Download a model into the Storage Root (resumes an interrupted download)"""

    bl_idname = "imageforge.download_model"
    bl_label = "Download Model"
    job_id = JobId.DOWNLOAD_MODEL
    pushes_undo = False  # changes files, not Blender data

    model: bpy.props.StringProperty(name="Model", description="Catalog key of the model", options={"SKIP_SAVE"})

    def prepare(self, _context: bpy.types.Context) -> DownloadModelParams:
        source = model_catalog()
        if source is None:
            raise InputError("The model catalog cannot be read.")
        self._label = source.get(self.model).label  # unknown keys: ModelUnavailableError listing valid ones
        return DownloadModelParams(model=self.model)

    def land(self, _context: bpy.types.Context, _result: JobResult) -> str:
        return f"{self._label} is ready"


CONVERSIONS = load_conversions()


def conversion_dialog(conversions: Conversions, conversion: Conversion, used_by: str) -> list[str]:
    """What the confirmation dialog says before a conversion starts: what is downloaded, how long it takes."""
    return [
        f"Makes {conversion.result.label} for {used_by},",
        f"from the official {conversion.license} weights ({conversion.repository}).",
        f"Downloads the {conversion.label} weights (about {conversion.approximate_download_bytes / 1e6:.0f} MB) and,",
        f"the first time, a converter with PyTorch (about {conversions.environment.approximate_bytes / 1e9:.1f} GB "
        "on disk).",
        f"Then converts on the CPU: about {conversion.approximate_minutes} minutes. Esc cancels.",
    ]


def conversion_choice(family: str, description: str) -> Any:
    """The conversions whose result belongs to `family`, as the dialog's Model menu."""
    return bpy.props.EnumProperty(
        name="Model",
        description=description,
        items=[
            (item.key, item.label, f"{item.repository}, about {item.approximate_download_bytes / 1e6:.0f} MB")
            for item in CONVERSIONS.conversions
            if item.result.family == family
        ],
    )


class PrepareConversion:
    """A Models-panel button that converts an official checkpoint on this machine (the convert-model job) after a
    dialog naming the download and the time. Subclasses declare `model` (conversion_choice) and `used_by`, the
    tool that uses the result."""

    job_id = JobId.CONVERT_MODEL
    pushes_undo = False  # changes files, not Blender data
    used_by = ""

    if TYPE_CHECKING:
        model: str
        bl_label: str
        layout: bpy.types.UILayout

    def invoke(self, context: bpy.types.Context, _event: Any) -> set[str]:
        return context.window_manager.invoke_props_dialog(self, title=self.bl_label, confirm_text="Prepare", width=420)

    def draw(self, _context: bpy.types.Context) -> None:
        self.layout.prop(self, "model")
        column = self.layout.column(align=True)
        for line in conversion_dialog(CONVERSIONS, CONVERSIONS.get(self.model), self.used_by):
            column.label(text=line)

    def prepare(self, _context: bpy.types.Context) -> ConvertModelParams:
        self._label = CONVERSIONS.get(self.model).result.label
        return ConvertModelParams(model=self.model)

    def land(self, _context: bpy.types.Context, _result: JobResult) -> str:
        return f"{self._label} is ready; {self.used_by} uses it"


class IMAGEFORGE_OT_prepare_camera_model(PrepareConversion, ImageForgeJobOperator, bpy.types.Operator):
    """Make the Depth Anything 3 model with cameras that Camera Path from Video needs, from the official weights"""

    bl_idname = "imageforge.prepare_camera_model"
    bl_label = "Prepare DA3 Camera Model"
    used_by = "Camera Path from Video"

    model: conversion_choice(
        "multiview", "Which Depth Anything 3 to convert (Large and Giant are not licensed for commercial use)"
    )


class IMAGEFORGE_OT_prepare_click_select_model(PrepareConversion, ImageForgeJobOperator, bpy.types.Operator):
    """Make the SAM 2.1 model that Click Select needs, from the official weights"""

    bl_idname = "imageforge.prepare_click_select_model"
    bl_label = "Prepare Click Select Model"
    used_by = "Click Select"

    model: conversion_choice("segment", "Which SAM 2.1 to convert (Tiny is faster per click, Small a little finer)")


class IMAGEFORGE_OT_unload_models(bpy.types.Operator):
    """Free the memory of every model the server holds (they load again on the next job)"""

    bl_idname = "imageforge.unload_models"
    bl_label = "Unload Models"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, _context: bpy.types.Context) -> bool:
        ready = server_state(blender_runtime.server_snapshot()) is ServerState.READY
        return poll_with_reason(cls, None if ready else "Models can be unloaded while the server is running and idle")

    def execute(self, _context: bpy.types.Context) -> set[str]:
        try:
            blender_runtime.get_runtime().clear_resource("models")
        except (OSError, RuntimeError) as error:
            self.report({"ERROR"}, f"Could not unload the models: {error}")
            return {"CANCELLED"}
        self.report({"INFO"}, "Models unloaded")
        return {"FINISHED"}


CLASSES = (
    IMAGEFORGE_OT_download_model,
    IMAGEFORGE_OT_prepare_camera_model,
    IMAGEFORGE_OT_prepare_click_select_model,
    IMAGEFORGE_OT_unload_models,
)
