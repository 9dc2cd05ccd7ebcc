"""The Server panel: state, the buttons that state allows, the running job, loaded models."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

import bpy

from ...client.job_usage import format_bytes
from ...client.setup import package_source
from ...contract.server_state import ServerState
from .. import blender_runtime
from ..health_snapshot import ActiveJobProgress, server_state
from ..operators import job_files
from ..preferences import storage_root
from .server_view import ServerView, package_source_line, server_view
from .sidebar import in_both_sidebars


def current_server_view() -> ServerView:
    snapshot = blender_runtime.server_snapshot()
    try:
        active = blender_runtime.get_runtime()
    except RuntimeError:
        return server_view(snapshot, installed=False)
    # Readiness reads a small file: only needed to tell "stopped" from "not installed" before the first poll.
    installed = server_state(snapshot) is not ServerState.STOPPED or active.environment_ready()
    local = ActiveJobProgress(active.progress, active.message) if active.active_job is not None else None
    return server_view(snapshot, installed=installed, local_progress=local)


WARNING_WIDTH = 48  # characters per line: the sidebar's default width cuts longer labels off


class ServerPanel:
    if TYPE_CHECKING:  # what bpy.types.Panel gives the panel class this mixin becomes
        layout: Any

    bl_label = "Server"
    bl_order = 0

    def draw(self, _context: bpy.types.Context) -> None:
        view = current_server_view()
        layout = self.layout
        self.draw_status(layout, view)
        self.draw_device_warnings(layout, view)
        self.draw_actions(layout, view)
        self.draw_progress(layout, view)
        self.draw_models(layout, view)
        self.draw_job_files(layout)
        self.draw_package_source(layout)
        if view.mirror_note:
            layout.label(text="Model downloads use the mirror", icon="INFO")

    @staticmethod
    def draw_package_source(layout: bpy.types.UILayout) -> None:
        line = package_source_line(package_source(storage_root()))
        if line:
            layout.label(text=line, icon="PACKAGE")

    @staticmethod
    def draw_status(layout: bpy.types.UILayout, view: ServerView) -> None:
        row = layout.row()
        row.alert = view.state is ServerState.ERROR
        row.label(text=view.headline, icon=view.icon)
        if view.message:
            column = layout.column(align=True)
            column.alert = view.state is ServerState.ERROR
            column.label(text=view.message)

    @staticmethod
    def draw_device_warnings(layout: bpy.types.UILayout, view: ServerView) -> None:
        """Why models run on CPU, until the server restarts (Restart tries the accelerator again)."""
        for warning in view.device_warnings:
            column = layout.column(align=True)
            column.alert = True
            for index, line in enumerate(textwrap.wrap(warning, WARNING_WIDTH)):
                column.label(text=line, icon="ERROR" if index == 0 else "BLANK1")

    @staticmethod
    def draw_actions(layout: bpy.types.UILayout, view: ServerView) -> None:
        if view.actions:
            row = layout.row(align=True)
            for action in view.actions:
                row.operator(action.operator, text=action.text, icon=action.icon)
        for action in view.extra:
            layout.operator(action.operator, text=action.text, icon=action.icon)

    @staticmethod
    def draw_progress(layout: bpy.types.UILayout, view: ServerView) -> None:
        if view.progress is None:
            return
        row = layout.row(align=True)
        row.progress(factor=view.progress.fraction, type="BAR", text=view.progress.message)
        row.operator("imageforge.cancel_job", text="", icon="X")

    @staticmethod
    def draw_models(layout: bpy.types.UILayout, view: ServerView) -> None:
        if view.state not in {ServerState.READY, ServerState.BUSY}:
            return
        box = layout.box()
        box.label(text="Loaded Models" if view.models else "No models loaded", icon="MEMORY")
        for model in view.models:
            box.label(text=f"{model.family.title()}: {model.model} ({model.device})")
        row = box.row()
        row.enabled = view.can_unload
        row.operator("imageforge.unload_models", text="Unload", icon="UNLINKED")

    @staticmethod
    def draw_job_files(layout: bpy.types.UILayout) -> None:
        """Count and size from the cached meter (a stat per redraw), and the cleanup, greyed out with why."""
        usage = job_files.METER.usage(storage_root())
        box = layout.box()
        if usage.count == 0:
            box.label(text="No job files", icon="FILE_FOLDER")
            return
        box.label(text=f"Job Files: {usage.count} · {format_bytes(usage.bytes)}", icon="FILE_FOLDER")
        reason = job_files.cleanup_reason()
        row = box.row()
        row.enabled = reason is None
        row.operator(job_files.IMAGEFORGE_OT_clean_job_files.bl_idname, text="Clean Up Job Files…", icon="TRASH")
        if reason is not None:
            box.label(text=reason, icon="INFO")


CLASSES = in_both_sidebars(ServerPanel, "server")
