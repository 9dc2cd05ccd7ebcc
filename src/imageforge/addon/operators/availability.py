"""Why a tool cannot run right now, in one sentence: shown as the greyed-out button's tooltip.

Operators call these from poll() (so they must stay cheap: attribute reads, no file access beyond a stat)
and the Tools panel calls them to grey whole rows out.
"""

from __future__ import annotations

import bpy

from ...contract.server_state import ServerState
from .. import blender_runtime
from ..health_snapshot import server_state
from ..scene.active_image import find_active_image, image_problem
from ..scene.video_source import has_video

NO_IMAGE = (
    "No image: open one in the Image Editor, or select an image empty or an object whose material has an image texture"
)


def poll_with_reason(operator: type, reason: str | None) -> bool:
    """poll()'s answer: True when `reason` is None, else False with `reason` as the button's tooltip."""
    if reason is None:
        return True
    getattr(operator, "poll_message_set")(reason)  # noqa: B009  # a bpy.types.Operator subclass (bpy is untyped)
    return False


def task_reason() -> str | None:
    """Why no ImageForge task can start, whatever the server's state: not registered, or a task running here."""
    try:
        active = blender_runtime.get_runtime()
    except RuntimeError:
        return "ImageForge is not registered"
    if active.active_job is not None:
        return "Wait for the running ImageForge task to finish (Esc cancels it)"
    return None


def server_reason() -> str | None:
    """Why no job can be sent to the server: task_reason(), then a server that is not set up."""
    reason = task_reason()
    if reason is None and server_state(blender_runtime.server_snapshot()) is ServerState.UNAVAILABLE:
        return "Set up the server first: ImageForge sidebar, Server, Set Up Server"
    return reason


def image_reason(context: bpy.types.Context) -> str | None:
    found = find_active_image(context)
    if found is None:
        return NO_IMAGE
    return image_problem(found.image)


def tool_reason(context: bpy.types.Context) -> str | None:
    """The reason an image tool is unavailable: the server's first, then the image's."""
    return server_reason() or image_reason(context)


NO_VIDEO = "No video: choose a video or image sequence in the Tools panel, or make a movie clip active"


def video_reason(context: bpy.types.Context) -> str | None:
    """Why Camera Path from Video cannot run: the server's reason first, then a missing source."""
    return server_reason() or (None if has_video(context) else NO_VIDEO)
