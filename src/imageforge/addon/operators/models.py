"""Model management from the panels: download one catalog model (a job), unload loaded models (a resource)."""

from __future__ import annotations

from typing import Any

import bpy
from blendjob import JobResult

from ...contract import InputError, JobId
from .. import blender_runtime
from ..choices import catalog
from ..health_snapshot import ServerState, server_state
from .base import ImageForgeJobOperator


class IMAGEFORGE_OT_download_model(ImageForgeJobOperator, bpy.types.Operator):
    """Download a model into the Storage Root (resumes an interrupted download)"""

    bl_idname = "imageforge.download_model"
    bl_label = "Download Model"
    job_id = JobId.DOWNLOAD_MODEL
    pushes_undo = False  # changes files, not Blender data

    model: bpy.props.StringProperty(name="Model", description="Catalog key of the model", options={"SKIP_SAVE"})

    def prepare(self, _context: bpy.types.Context) -> dict[str, Any]:
        source = catalog()
        if source is None:
            raise InputError("The model catalog cannot be read.")
        self._label = source.get(self.model).label  # unknown keys: ModelUnavailableError listing valid ones
        return {"model": self.model}

    def land(self, _context: bpy.types.Context, _result: JobResult) -> str:
        return f"{self._label} is ready"


class IMAGEFORGE_OT_unload_models(bpy.types.Operator):
    """Free the memory of every model the server holds (they load again on the next job)"""

    bl_idname = "imageforge.unload_models"
    bl_label = "Unload Models"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, _context: bpy.types.Context) -> bool:
        if server_state(blender_runtime.server_snapshot()) is not ServerState.READY:
            cls.poll_message_set("Models can be unloaded while the server is running and idle")
            return False
        return True

    def execute(self, _context: bpy.types.Context) -> set[str]:
        try:
            blender_runtime.get_runtime().clear_resource("models")
        except (OSError, RuntimeError) as error:
            self.report({"ERROR"}, f"Could not unload the models: {error}")
            return {"CANCELLED"}
        self.report({"INFO"}, "Models unloaded")
        return {"FINISHED"}


CLASSES = (IMAGEFORGE_OT_download_model, IMAGEFORGE_OT_unload_models)
