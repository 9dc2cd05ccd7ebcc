"""The Scene panel (3D Viewport sidebar): the reconstruction the active object belongs to, its point radius, Level
Ground, Scale Scene by a known distance or camera height (with why: relative depth), and its COLMAP export.

Shown only while an object of a Camera Path from Video reconstruction is active.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import bpy

from ..operators.reconstruction import active_root, colmap_folder
from ..scene import reconstruction
from .sidebar import CATEGORY

RELATIVE = "Relative depth (DA3 Small, Base): no real size until one known length is set"


def scale_note(root: bpy.types.Object) -> str:
    """What the panel says about the reconstruction's units."""
    scale = float(reconstruction.settings(root).get("scale", 1.0))
    if scale != 1.0:
        return f"Scaled ×{scale:.4g} from a known length"
    if reconstruction.is_metric(root):
        return "Metric depth: units are metres"
    return RELATIVE


class ScenePanel:
    if TYPE_CHECKING:  # what bpy.types.Panel gives the panel class this mixin becomes
        layout: Any

    bl_label = "Scene"
    bl_order = 2

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return active_root(context) is not None

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        root = active_root(context)
        if root is None:  # poll() said there is one; the active object changed since
            return
        layout.label(text=root.name, icon="OUTLINER_OB_EMPTY")
        layout.label(text=scale_note(root), icon="INFO")
        points = reconstruction.points_of(root)
        if points is not None:
            owner, path = reconstruction.radius_property(points)
            layout.prop(owner, path, text="Point Radius")
        layout.operator("imageforge.level_ground", icon="AXIS_TOP")
        row = layout.row(align=True)
        row.operator("imageforge.scale_scene", text="Scale by Distance", icon="DRIVER_DISTANCE").known = "DISTANCE"
        row.operator("imageforge.scale_scene", text="Camera Height", icon="CAMERA_DATA").known = "CAMERA_HEIGHT"
        folder = colmap_folder(root)
        if folder is not None:
            layout.operator("imageforge.open_colmap_folder", icon="FILE_FOLDER")
            layout.label(text=str(folder))
        else:
            layout.operator_context = "INVOKE_DEFAULT"
            export = layout.operator("imageforge.camera_path_from_video", text="Export COLMAP…", icon="EXPORT")
            export.export_colmap = True


class IMAGEFORGE_PT_scene(ScenePanel, bpy.types.Panel):
    bl_idname = "IMAGEFORGE_PT_scene"
    bl_space_type = "VIEW_3D"  # the reconstruction's tools act on 3D objects
    bl_region_type = "UI"
    bl_category = CATEGORY


CLASSES = (IMAGEFORGE_PT_scene,)
