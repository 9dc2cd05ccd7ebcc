"""The Tools panel: the image the tools will use, and every tool, greyed out with the reason when unavailable."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import bpy

from ..operators.availability import NO_IMAGE, tool_reason, video_reason
from ..operators.batch_jobs import texture_reason
from ..operators.camera_path import SCENE_PROPERTY
from ..operators.listing import Surface, listed
from ..scene.active_image import ActiveImage, find_active_image
from ..scene.video_source import active_clip
from .sidebar import in_both_sidebars


class ToolsPanel:
    if TYPE_CHECKING:  # what bpy.types.Panel gives the panel class this mixin becomes
        layout: Any

    bl_label = "Tools"
    bl_order = 1

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        layout.operator_context = "INVOKE_REGION_WIN"  # the drawer needs the main region, not the sidebar
        found = find_active_image(context)
        self.draw_image(layout, found)
        reason = tool_reason(context)
        column = layout.column(align=True)
        column.enabled = reason is None
        self.draw_listed_tools(column, context)
        self.draw_batch_tools(layout, context)
        if reason is not None and found is not None:
            layout.label(text=reason, icon="INFO")
        self.draw_video_tools(layout.box(), context)

    @staticmethod
    def draw_image(layout: bpy.types.UILayout, found: ActiveImage | None) -> None:
        if found is None:
            layout.label(text=NO_IMAGE.split(":")[0], icon="ERROR")
            return
        width, height = found.image.size
        layout.label(text=f"{found.image.name} · {width} × {height}", icon="IMAGE_DATA")

    @staticmethod
    def draw_listed_tools(layout: bpy.types.UILayout, context: bpy.types.Context) -> None:
        """Every tool listed on the Tools panel (operators/listing.py), in its order: a button, or the rows the
        operator draws itself (`draw_tool`: Upscale's 2×/4× row, Draw Selection's box and lasso rows)."""
        for tool in listed(Surface.TOOLS_PANEL):
            if tool.listing.separated:
                layout.separator()
            draw = getattr(tool.operator, "draw_tool", None)
            if draw is not None:
                draw(layout, context)
            else:
                layout.operator(tool.idname, icon=tool.listing.icon)

    @staticmethod
    def draw_batch_tools(layout: bpy.types.UILayout, context: bpy.types.Context) -> None:
        """Upscale Textures of Selected Objects, greyed out with the reason when unavailable."""
        reason = texture_reason(context)
        row = layout.row(align=True)
        row.enabled = reason is None
        for scale in ("2", "4"):
            text = f"Upscale Textures {scale}×"
            row.operator("imageforge.upscale_textures", text=text, icon="TEXTURE").scale = scale
        if reason is not None:
            layout.label(text=reason, icon="INFO")

    @staticmethod
    def draw_video_tools(layout: bpy.types.UILayout, context: bpy.types.Context) -> None:
        """The video field, which source will be used, and Camera Path from Video (and its COLMAP export button),
        greyed out with why."""
        layout.label(text="Video", icon="FILE_MOVIE")
        layout.prop(context.scene, SCENE_PROPERTY, text="")
        clip = active_clip(context)
        if not getattr(context.scene, SCENE_PROPERTY) and clip is not None:
            layout.label(text=f"Movie clip: {clip.name}", icon="CLIP")
        reason = video_reason(context)
        row = layout.row()
        row.enabled = reason is None
        row.operator("imageforge.camera_path_from_video", icon="CAMERA_DATA")
        row.operator("imageforge.camera_path_from_video", text="", icon="EXPORT").export_colmap = True
        if reason is not None:
            layout.label(text=reason, icon="INFO")


CLASSES = in_both_sidebars(ToolsPanel, "tools")
