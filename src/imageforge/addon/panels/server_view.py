"""What the server panel shows for each server state: plain data, so every state is testable without a UI.

The panel's draw() only renders a ServerView; all decisions (which buttons, which message, whether Unload is
allowed) are made here from BlendJob's snapshot and this Blender's own running task.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...contract.health import LoadedModel
from ...contract.server_state import ServerState
from ..health_snapshot import (
    ActiveJobProgress,
    active_job_progress,
    device_warnings,
    loaded_models,
    server_message,
    server_state,
    uses_mirror,
)


@dataclass(frozen=True)
class Action:
    operator: str  # BlendJob's server operators, namespace `imageforge`
    text: str
    icon: str


@dataclass(frozen=True)
class ServerView:
    state: ServerState
    headline: str
    icon: str
    message: str = ""
    actions: tuple[Action, ...] = ()
    progress: ActiveJobProgress | None = None
    models: tuple[LoadedModel, ...] = ()
    can_unload: bool = False
    mirror_note: bool = False
    extra: tuple[Action, ...] = field(default=())
    device_warnings: tuple[str, ...] = ()  # CPU fallbacks of this server's run: shown until it restarts


SET_UP = Action("imageforge.setup_server", "Set Up Server…", "IMPORT")
START = Action("imageforge.start_server", "Start", "PLAY")
RESTART = Action("imageforge.restart_server", "Restart", "FILE_REFRESH")
STOP = Action("imageforge.stop_server", "Stop", "SNAP_FACE")
OPEN_LOG = Action("imageforge.open_server_log", "Open Log", "TEXT")


def server_view(
    snapshot: Mapping[str, Any] | None,
    *,
    installed: bool,
    local_progress: ActiveJobProgress | None = None,
) -> ServerView:
    """The view for `snapshot`; `installed` says whether the storage root holds a ready environment.

    `local_progress` is this Blender's running task (setup, migration, a job), shown in every state: during
    setup the server itself cannot report anything yet.
    """
    state = server_state(snapshot)
    if state is ServerState.STOPPED and not installed:
        state = ServerState.UNAVAILABLE
    message = server_message(snapshot)
    mirror = uses_mirror(snapshot)
    if state is ServerState.UNAVAILABLE:
        return ServerView(
            state,
            "Server not installed",
            "ERROR",
            "Set up installs the server's Python environment and the default models.",
            (SET_UP,),
            local_progress,
            mirror_note=mirror,
        )
    if state is ServerState.STOPPED:
        return ServerView(state, "Stopped", "PAUSE", "", (START,), local_progress, mirror_note=mirror)
    if state is ServerState.STARTING:
        return ServerView(state, "Starting…", "SORTTIME", message or "Starting", (), local_progress)
    if state is ServerState.ERROR:
        return ServerView(
            state,
            "Server error",
            "CANCEL",
            message or "The server stopped unexpectedly.",
            (START, OPEN_LOG),
            local_progress,
        )
    models = tuple(loaded_models(snapshot))
    fallbacks = tuple(device_warnings(snapshot))
    if state is ServerState.BUSY:
        progress = active_job_progress(snapshot) or local_progress
        return ServerView(
            state,
            "Running (Busy)",
            "SEQUENCE_COLOR_03",
            "",
            (RESTART, STOP),
            progress,
            models,
            False,
            mirror,
            device_warnings=fallbacks,
        )
    idle = local_progress is None
    return ServerView(
        state,
        "Running",
        "CHECKMARK",
        "",
        (RESTART, STOP),
        local_progress,
        models,
        can_unload=idle and bool(models),
        mirror_note=mirror,
        device_warnings=fallbacks,
    )


def package_source_line(source: str | None) -> str | None:
    """The Server panel's line saying where the environment's packages came from (manifest.json), or None."""
    if not source:
        return None
    if source.startswith("wheelhouse "):
        return "Packages from a wheelhouse"
    if "://" in source:
        return f"Packages from {source.split('://', 1)[1].split('/', 1)[0]}"
    return f"Packages from {source}"
