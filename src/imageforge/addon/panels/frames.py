"""The Frames panel: Remove Background and Upscale on every frame, in the Video Sequencer's and the Clip
Editor's sidebars (tab "ImageForge"), and in the Image Editor's when it shows a movie or image sequence."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import bpy

from ..operators.batch_jobs import strips_reason
from ..operators.frame_jobs import frames_reason
from ..scene.frame_sources import frame_source_datablock
from .sidebar import CATEGORY


class FramesPanel:
    if TYPE_CHECKING:  # what bpy.types.Panel gives the panel class this mixin becomes
        layout: Any

    bl_label = "Frames"
    bl_order = 2

    def draw(self, context: bpy.types.Context) -> None:
        draw_frame_tools(self.layout, context)


def draw_frame_tools(layout: bpy.types.UILayout, context: bpy.types.Context) -> None:
    """Which clip, both tools (greyed out with the reason when unavailable)."""
    found = frame_source_datablock(context)
    if found is not None:
        kind, item = found
        layout.label(text=f"{item.name} ({kind.value})", icon="FILE_MOVIE")
    reason = frames_reason(context)
    column = layout.column(align=True)
    column.enabled = reason is None
    column.operator("imageforge.remove_background_frames", icon="IMAGE_RGB_ALPHA")
    row = column.row(align=True)
    for scale in ("2", "4"):
        row.operator("imageforge.upscale_frames", text=f"Upscale {scale}×", icon="FULLSCREEN_ENTER").scale = scale
    if reason is not None:
        layout.label(text=reason, icon="INFO")
    farm = layout.row()
    farm.enabled = found is not None  # writes a farm job: no local server needed
    farm.operator("imageforge.send_to_farm", icon="NETWORK_DRIVE")
    if getattr(getattr(context, "space_data", None), "type", None) == "SEQUENCE_EDITOR":
        draw_strip_batch(layout, context)


def draw_strip_batch(layout: bpy.types.UILayout, context: bpy.types.Context) -> None:
    reason = strips_reason(context)
    row = layout.row()
    row.enabled = reason is None
    row.operator("imageforge.remove_background_strips", icon="SEQ_STRIP_DUPLICATE")


def _panel(space: str, suffix: str) -> type:
    idname = f"IMAGEFORGE_PT_frames_{suffix}"
    attributes = {
        "bl_idname": idname,
        "bl_space_type": space,
        "bl_region_type": "UI",
        "bl_category": CATEGORY,
        "__module__": __name__,
    }
    return type(idname, (FramesPanel, bpy.types.Panel), attributes)


class ImageEditorFramesPanel(FramesPanel):
    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return frame_source_datablock(context) is not None


CLASSES = (
    _panel("SEQUENCE_EDITOR", "sequencer"),
    _panel("CLIP_EDITOR", "clip"),
    type(
        "IMAGEFORGE_PT_frames_image",
        (ImageEditorFramesPanel, bpy.types.Panel),
        {
            "bl_idname": "IMAGEFORGE_PT_frames_image",
            "bl_space_type": "IMAGE_EDITOR",
            "bl_region_type": "UI",
            "bl_category": CATEGORY,
            "__module__": __name__,
        },
    ),
)
