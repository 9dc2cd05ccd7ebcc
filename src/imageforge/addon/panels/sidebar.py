"""One panel definition, registered in both sidebars: the 3D Viewport's and the Image Editor's."""

from __future__ import annotations

import bpy

CATEGORY = "ImageForge"
SPACES = (("VIEW_3D", ""), ("IMAGE_EDITOR", "_image"))


def in_both_sidebars(mixin: type, name: str) -> tuple[type, ...]:
    """Panel classes `IMAGEFORGE_PT_<name>` (View3D) and `IMAGEFORGE_PT_<name>_image` (Image Editor)."""
    classes = []
    for space, suffix in SPACES:
        idname = f"IMAGEFORGE_PT_{name}{suffix}"
        attributes = {
            "bl_idname": idname,
            "bl_space_type": space,
            "bl_region_type": "UI",
            "bl_category": CATEGORY,
            "__module__": mixin.__module__,
        }
        classes.append(type(idname, (mixin, bpy.types.Panel), attributes))
    return tuple(classes)
