"""Clean Up Job Files: client/retention.py's policy applied from the Server panel, never to files in use.

The plan is made here, on Blender's side, because only Blender knows what the open .blend references
(scene/referenced_files.py) and which job it is waiting for. Deleting then goes one of two ways:
- a running, idle server deletes through BlendJob's `/job-files/clear` with exactly the planned job ids (the
  server refuses while it runs or queues a job, so a job cannot start mid-delete);
- with no server process, the folders are deleted directly while holding the storage root's lock, which a
  server (ours or another Blender's) holds for as long as it runs.
Anything in between (a job running here or on the server, the server starting) disables the operator with
the reason. BlendJob's own Clear Job Files is not offered: it deletes every folder, protected or not.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

import bpy
from blendjob.storage import StorageLock

from ...client.job_usage import JobUsageMeter, format_bytes
from ...client.retention import (
    RetentionPlan,
    RetentionPolicy,
    delete_folders,
    jobs_folder_problem,
    plan_retention,
    scan_job_folders,
)
from ...contract.server_state import ServerState
from .. import blender_runtime, preferences
from ..health_snapshot import server_state
from ..scene.referenced_files import referenced_paths
from .availability import poll_with_reason, task_reason

METER = JobUsageMeter()  # the Server panel's cached summary; a cleanup invalidates it
DIALOG_ROWS = 8  # folders listed by name in the confirmation; the rest are summed up


class Route(StrEnum):
    SERVER = "server"  # through the running server's /job-files/clear
    DIRECT = "direct"  # no server process: delete_folders under the storage lock


def retention_policy(prefs: Any) -> RetentionPolicy:
    if prefs is None:
        return RetentionPolicy()
    return RetentionPolicy(
        max_age_days=float(prefs.job_files_max_age_days),
        max_total_bytes=int(prefs.job_files_max_size_gb * 1024**3),
    )


def cleanup_route() -> tuple[Route | None, str | None]:
    """How job files can be deleted now, or why they cannot (one sentence for the tooltip and the panel).

    The reasons every task shares come from availability.task_reason(); a server that is not set up is no
    reason here (its storage root may still hold an earlier install's job files, deleted directly).
    """
    reason = task_reason() or jobs_folder_problem(preferences.storage_root())
    if reason is not None:
        return None, reason
    active = blender_runtime.get_runtime()
    state = server_state(blender_runtime.server_snapshot())
    if state is ServerState.BUSY:
        return None, "The server is running a job; clean up job files when it is idle"
    if state is ServerState.READY:
        return Route.SERVER, None
    if state is ServerState.STARTING or getattr(active.server, "process", None) is not None:
        return None, "The server is starting; clean up job files once it is running or stopped"
    return Route.DIRECT, None


def cleanup_reason() -> str | None:
    return cleanup_route()[1]


def protected_paths() -> set[Path]:
    """Files the open .blend references, plus the folders of the job this Blender or the server is running."""
    protected = referenced_paths()
    root = preferences.storage_root()
    active = blender_runtime.get_runtime().active_job
    for job_id in (getattr(active, "job_id", ""), _server_active_job_id()):
        if job_id:
            protected.add((root / "jobs" / job_id).resolve())
    directory = getattr(active, "directory", None)
    if directory:
        protected.add(Path(directory).resolve())
    return protected


def cleanup_plan() -> RetentionPlan:
    prefs = preferences.get_preferences()
    folders = scan_job_folders(preferences.storage_root())
    return plan_retention(folders, retention_policy(prefs), protected_paths=protected_paths())


def delete_planned(plan: RetentionPlan, route: Route) -> tuple[list[str], int]:
    """Delete the plan's folders by `route`; returns the deleted job ids and how many were kept back."""
    root = preferences.storage_root()
    if route is Route.SERVER:
        connection = blender_runtime.get_runtime().server.connection
        if connection is None:
            raise RuntimeError("The server is not connected; start it or stop it, then clean up again")
        result = connection.client.clear_job_files([folder.job_id for folder in plan.delete])
        return list(result.get("jobs", [])), int(result.get("skipped", 0)) + len(result.get("failed", []))
    lock = StorageLock()
    lock.acquire(root)  # RuntimeError when a server (another Blender's too) is using the storage root
    try:
        deletion = delete_folders(plan, root)  # the server's rule: a folder holding a link is kept
    finally:
        lock.release()
    return deletion.deleted_ids, len(deletion.kept)


def _server_active_job_id() -> str:
    job = blender_runtime.server_snapshot().get("active_job")
    return str(job.get("job_id") or "") if isinstance(job, dict) else ""


class IMAGEFORGE_OT_clean_job_files(bpy.types.Operator):
    """Delete old job folders beyond the age and size limits in the preferences; files this .blend uses stay"""

    bl_idname = "imageforge.clean_job_files"
    bl_label = "Clean Up Job Files"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, _context: bpy.types.Context) -> bool:
        return poll_with_reason(cls, cleanup_reason())

    def invoke(self, context: bpy.types.Context, _event: Any) -> set[str]:
        self._preview = cleanup_plan()
        if not self._preview.delete:
            self.report({"INFO"}, f"Nothing to clean up: {self.kept_text(self._preview)}")
            return {"CANCELLED"}
        return context.window_manager.invoke_props_dialog(
            self, width=420, title="Clean Up Job Files", confirm_text="Delete"
        )

    def draw(self, _context: bpy.types.Context) -> None:
        plan = self._preview
        layout = self.layout
        layout.label(text=f"Delete {len(plan.delete)} job folders, freeing {format_bytes(plan.freed_bytes)}?")
        column = layout.column(align=True)
        for folder in plan.delete[:DIALOG_ROWS]:
            column.label(text=f"{folder.job_id[:12]}…  {folder.state}  {format_bytes(folder.bytes)}")
        if len(plan.delete) > DIALOG_ROWS:
            column.label(text=f"and {len(plan.delete) - DIALOG_ROWS} more")
        layout.label(text=f"Keeps {self.kept_text(plan)}", icon="CHECKMARK")
        layout.label(text="Job outputs and logs are deleted permanently.", icon="ERROR")

    def execute(self, _context: bpy.types.Context) -> set[str]:
        route, reason = cleanup_route()
        if route is None:
            self.report({"WARNING"}, reason)
            return {"CANCELLED"}
        plan = cleanup_plan()
        preview = getattr(self, "_preview", None)
        if preview is not None:  # never more than the dialog showed, never what became protected since
            shown = {folder.job_id for folder in preview.delete}
            plan = RetentionPlan(tuple(f for f in plan.delete if f.job_id in shown), plan.keep, plan.protected)
        if not plan.delete:
            self.report({"INFO"}, f"Nothing to clean up: {self.kept_text(plan)}")
            return {"CANCELLED"}
        try:
            deleted, kept_back = delete_planned(plan, route)
        except (OSError, RuntimeError, ValueError) as error:
            self.report({"ERROR"}, f"Could not clean up job files: {error}")
            return {"CANCELLED"}
        finally:
            METER.invalidate()
        done = set(deleted)
        freed = sum(folder.bytes for folder in plan.delete if folder.job_id in done)
        message = f"Deleted {len(deleted)} job folders ({format_bytes(freed)})"
        if kept_back:
            message += f"; {kept_back} could not be deleted"
        self.report({"WARNING"} if kept_back else {"INFO"}, message)
        return {"FINISHED"}

    @staticmethod
    def kept_text(plan: RetentionPlan) -> str:
        kept = len(plan.keep) + len(plan.protected)
        return f"{kept} job folders, {format_bytes(plan.kept_bytes)} ({len(plan.protected)} used by this file)"


CLASSES = (IMAGEFORGE_OT_clean_job_files,)
