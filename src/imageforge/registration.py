"""Register and unregister every Blender class of the add-on, in order, leaving nothing behind."""

from __future__ import annotations

import bpy

from . import preferences, runtime

CLASSES: tuple[type, ...] = (preferences.ImageForgePreferences,)


def register() -> None:
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    runtime.register()


def unregister() -> None:
    runtime.unregister()
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
