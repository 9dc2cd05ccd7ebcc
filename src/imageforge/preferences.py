"""Extension preferences: Storage Root, device, maximum AI input size."""

from __future__ import annotations

from pathlib import Path

import bpy

from .client.environment import default_storage_root
from .contract import Device
from .contract.jobs import MAX_INPUT_SIZE_DEFAULT


def addon_package() -> str:
    """The add-on's module name: `imageforge` from source, `bl_ext.<repo>.imageforge` when installed."""
    return __package__


def get_preferences(context: bpy.types.Context | None = None):
    context = context or bpy.context
    addon = context.preferences.addons.get(addon_package())
    return addon.preferences if addon else None


def storage_root(path: Path | None = None) -> Path:
    """The configured Storage Root (default when unset). BlendJob passes `path` to save a new location."""
    preferences = get_preferences()
    if path is not None and preferences is not None:
        preferences.storage_root = str(path)
    configured = getattr(preferences, "storage_root", "") if preferences else ""
    return Path(bpy.path.abspath(configured)).resolve() if configured.strip() else default_storage_root()


DEVICE_ITEMS = [(device.value, device.label, f"Run models on {device.label}") for device in Device]


class ImageForgePreferences(bpy.types.AddonPreferences):
    bl_idname = addon_package()

    storage_root: bpy.props.StringProperty(
        name="Storage Root",
        description="Folder for the server environment, models and job files (empty: ~/.imageforge)",
        subtype="DIR_PATH",
        default="",
    )
    device: bpy.props.EnumProperty(name="Device", items=DEVICE_ITEMS, default=Device.AUTO.value)
    max_input_size: bpy.props.IntProperty(
        name="Maximum AI Input Size",
        description="Longest image edge the models analyse; lower it if memory runs out",
        default=MAX_INPUT_SIZE_DEFAULT,
        min=256,
        max=8192,
        step=256,
        subtype="PIXEL",
    )

    def draw(self, _context: bpy.types.Context) -> None:
        layout = self.layout
        layout.prop(self, "storage_root")
        layout.prop(self, "device")
        layout.prop(self, "max_input_size")
