"""Register and unregister every Blender class of the add-on, in order, leaving nothing behind.

Order matters: the runtime first (its server operators are what the panels call, and the job operators are
bound to it), then preferences, operators and panels, the scene's Video property (Camera Path from Video's
input), and menus. Unregister removes the menus and the property, then the runtime (cancelling a running job
while its operator still exists), then the classes in reverse.
"""

from __future__ import annotations

import bpy

from . import blender_runtime, menus, operators, panels, preferences
from .operators import base, camera_path

CLASSES: tuple[type, ...] = (
    preferences.ImageForgePreferences,
    *operators.CLASSES,
    *menus.CLASSES,
    *panels.CLASSES,
)


def register() -> None:
    blender_runtime.register(preferences.storage_root, preferences.server_linger, preferences.setup_choices)
    base.bind(blender_runtime.get_runtime())
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    camera_path.register_properties()
    menus.register_menus()


def unregister() -> None:
    menus.unregister_menus()
    camera_path.unregister_properties()
    blender_runtime.unregister()  # first: a running job is cancelled and cleaned up while its operator class exists
    base.bind(None)
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
