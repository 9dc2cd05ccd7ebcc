"""The ImageForge submenu in the Image Editor's Image menu and the 3D Viewport's object context menu, and the
frame tools in the Video Sequencer's strip context menu: both list what the operators declare
(operators/listing.py), in their order."""

from __future__ import annotations

from typing import Any

import bpy

from .operators.listing import Surface, listed

MENUS = ("IMAGE_MT_image", "VIEW3D_MT_object_context_menu")


class IMAGEFORGE_MT_tools(bpy.types.Menu):
    bl_idname = "IMAGEFORGE_MT_tools"
    bl_label = "ImageForge"

    def draw(self, _context: bpy.types.Context) -> None:
        layout = self.layout
        layout.operator_context = "INVOKE_REGION_WIN"
        for tool in listed(Surface.TOOLS_MENU):
            layout.operator(tool.idname, icon=tool.listing.icon)


def draw_submenu(self: Any, _context: bpy.types.Context) -> None:
    self.layout.separator()
    self.layout.menu(IMAGEFORGE_MT_tools.bl_idname, icon="IMAGE_DATA")


def draw_strip_entries(self: Any, _context: bpy.types.Context) -> None:
    """The Video Sequencer's strip context menu: the frame tools on the active strip."""
    layout = self.layout
    layout.separator()
    layout.operator_context = "INVOKE_REGION_WIN"
    for tool in listed(Surface.STRIP_MENU):
        layout.operator(tool.idname, icon=tool.listing.icon)


STRIP_MENU = "SEQUENCER_MT_context_menu"


def register_menus() -> None:
    for name in MENUS:
        getattr(bpy.types, name).append(draw_submenu)
    getattr(bpy.types, STRIP_MENU).append(draw_strip_entries)


def unregister_menus() -> None:
    getattr(bpy.types, STRIP_MENU).remove(draw_strip_entries)
    for name in MENUS:
        getattr(bpy.types, name).remove(draw_submenu)


CLASSES = (IMAGEFORGE_MT_tools,)
