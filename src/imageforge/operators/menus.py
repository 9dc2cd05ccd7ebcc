"""The ImageForge submenu in the Image Editor's Image menu and the 3D Viewport's object context menu."""

from __future__ import annotations

import bpy

MENUS = ("IMAGE_MT_image", "VIEW3D_MT_object_context_menu")


class IMAGEFORGE_MT_tools(bpy.types.Menu):
    bl_idname = "IMAGEFORGE_MT_tools"
    bl_label = "ImageForge"

    def draw(self, _context: bpy.types.Context) -> None:
        layout = self.layout
        layout.operator_context = "INVOKE_REGION_WIN"
        layout.operator("imageforge.remove_background", icon="IMAGE_RGB_ALPHA")
        layout.operator("imageforge.upscale_image", icon="FULLSCREEN_ENTER")
        layout.operator("imageforge.refine_selection", icon="SELECT_SET")
        layout.operator("imageforge.cutout", icon="MOD_MASK")
        layout.operator("imageforge.depth_plane", icon="MOD_DISPLACE")
        layout.operator("imageforge.parallax_shot", icon="VIEW_CAMERA")


def draw_submenu(self, _context: bpy.types.Context) -> None:
    self.layout.separator()
    self.layout.menu(IMAGEFORGE_MT_tools.bl_idname, icon="IMAGE_DATA")


def register_menus() -> None:
    for name in MENUS:
        getattr(bpy.types, name).append(draw_submenu)


def unregister_menus() -> None:
    for name in MENUS:
        getattr(bpy.types, name).remove(draw_submenu)


CLASSES = (IMAGEFORGE_MT_tools,)
