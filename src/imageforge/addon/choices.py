"""What each preference may hold, and how a stored value that is no longer valid falls back.

Preferences outlive the machine they were saved on (synced user folders, a GPU removed, a catalog that
dropped a model), so every stored value is checked against what is valid *now* and silently replaced by the
default when it is not. No bpy here: the rules are plain functions the preferences class and tests call.
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..contract import Device, ModelUnavailableError
from ..contract.catalog import Catalog, Family, load_catalog, local_overlay_path
from ..contract.jobs import MAX_INPUT_SIZE_DEFAULT, MAX_INPUT_SIZE_LIMIT, RESOLUTION_LEVEL_DEFAULT, RESOLUTION_LEVEL_MAX

# The preference's own steps inside the contract's range (the server accepts any size from 1 px).
MAX_INPUT_SIZE_MIN = 256
MAX_INPUT_SIZE_STEP = 256

# Before the server has run once, offer what the platform's ONNX Runtime package can provide
# (src/imageforge/client/server_environment.json pins one package per platform).
_FALLBACK_DEVICES = {
    "macos": (Device.CPU, Device.COREML),
    "windows": (Device.AUTO, Device.DIRECTML, Device.CPU),
    "linux": (Device.AUTO, Device.CUDA, Device.CPU),
}


def current_platform() -> str:
    """`macos`, `windows`, `linux` or `other` (Intel macOS has no CoreML build: `other`)."""
    machine = platform.machine().lower()
    if sys.platform == "darwin":
        return "macos" if machine in {"arm64", "aarch64"} else "other"
    if sys.platform == "win32":
        return "windows"
    if sys.platform.startswith("linux"):
        return "linux"
    return "other"


def openvino_offered(platform_name: str) -> bool:
    """Whether the Server Runtime preference may choose Intel OpenVINO: its build exists for x86-64 Linux and
    Windows only (client/server_runtimes.py)."""
    return platform_name in ("linux", "windows") and platform.machine().lower() in ("x86_64", "amd64")


def device_choices(offered: Sequence[Device] | None, platform_name: str, runtime: str = "default") -> list[Device]:
    """The Device enum's items, default first. `runtime`: the storage root's ONNX Runtime build
    (client/server_runtimes.py): before the server has run, an OpenVINO environment offers OpenVINO, not CUDA or
    DirectML.

    macOS lists CPU first (and makes it the default): CoreML compiles each model on first use and fails on
    some dynamic shapes, so it is opt-in. Elsewhere Automatic comes first, then the accelerators the server
    reports, then CPU, which is always offered.
    """
    if offered is None:
        if runtime == "openvino" and platform_name in ("linux", "windows"):
            return [Device.AUTO, Device.OPENVINO, Device.CPU]
        return list(_FALLBACK_DEVICES.get(platform_name, (Device.AUTO, Device.CPU)))
    accelerators = [device for device in offered if device not in (Device.AUTO, Device.CPU)]
    if platform_name == "macos":
        return [Device.CPU, *accelerators]
    return [Device.AUTO, *accelerators, Device.CPU]


def valid_device(stored: str, choices: Sequence[Device]) -> Device:
    for device in choices:
        if device.value == stored:
            return device
    return choices[0]


def valid_max_input_size(stored: object) -> int:
    """In range: rounded to the 256 px step; anything else (out of range, not a number): the default."""
    if isinstance(stored, bool) or not isinstance(stored, (int, float)):
        return MAX_INPUT_SIZE_DEFAULT
    if not MAX_INPUT_SIZE_MIN <= stored <= MAX_INPUT_SIZE_LIMIT:
        return MAX_INPUT_SIZE_DEFAULT
    return int(round(stored / MAX_INPUT_SIZE_STEP)) * MAX_INPUT_SIZE_STEP


def chosen_max_input_size(value: int) -> int:
    """What the user typed or dragged: clamped into range, then snapped to the step."""
    return valid_max_input_size(min(max(value, MAX_INPUT_SIZE_MIN), MAX_INPUT_SIZE_LIMIT))


def valid_resolution_level(stored: object) -> int:
    if isinstance(stored, bool) or not isinstance(stored, int) or not 0 <= stored <= RESOLUTION_LEVEL_MAX:
        return RESOLUTION_LEVEL_DEFAULT
    return stored


@dataclass(frozen=True)
class ModelChoice:
    key: str
    label: str
    default: bool


_catalog_cache: dict[tuple[str, int | None], Catalog] = {}


def catalog(storage_root: Path | None = None) -> Catalog | None:
    """The model catalog with `storage_root`'s local overlay (models converted there) merged over it; None when
    it cannot be read (the panel then says so). Kept until the overlay file changes (one stat per call)."""
    overlay = local_overlay_path(storage_root) if storage_root is not None else None
    try:
        changed = overlay.stat().st_mtime_ns if overlay is not None else None
    except OSError:
        changed = None
    key = (str(storage_root), changed)
    if key not in _catalog_cache:
        try:
            loaded = load_catalog(storage_root=storage_root if changed is not None else None)
        except ModelUnavailableError:
            return None
        _catalog_cache.clear()
        _catalog_cache[key] = loaded
    return _catalog_cache[key]


def model_choices(family: Family, source: Catalog | None = None) -> list[ModelChoice]:
    """The family's models, the catalog's default first (so it is the enum's fallback)."""
    source = source if source is not None else catalog()
    if source is None:
        return []
    entries = [entry for entry in source.models if entry.family == family]
    entries.sort(key=lambda entry: not entry.default)
    return [ModelChoice(entry.key, entry.label, entry.default) for entry in entries]


def valid_model(stored: str, choices: Sequence[ModelChoice]) -> str | None:
    """The stored key if the catalog still has it, else the default key; None when the family is empty."""
    for choice in choices:
        if choice.key == stored:
            return choice.key
    return choices[0].key if choices else None
