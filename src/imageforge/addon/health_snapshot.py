"""Read the job server's health snapshot, defensively.

BlendJob's poll timer keeps `runtime.server.snapshot` current: `{"state": ..., "message": ...}` plus, while a
server answers, `active_job` and `resources` (each resource's `snapshot()`). The readers follow exactly what
the server's resources write: "models" is ModelManager.snapshot() (server/inference/model_manager.py: `loaded`,
`devices`, ...), "downloads" is DownloadSources.snapshot() (server/downloads/sources.py: `source` is "hub" or
"mirror", `mirror` the mirror's URL). A server of another version may still send something else, so a missing
key or a wrong type reads as "not reported" instead of raising inside a panel's draw().

No bpy here: panels, preferences and tests share these plain functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ..contract import Device


class ServerState(StrEnum):
    """The states BlendJob's ServerController reports, plus UNKNOWN for anything else."""

    UNAVAILABLE = "UNAVAILABLE"  # the environment is not installed in the storage root
    STOPPED = "STOPPED"
    STARTING = "STARTING"
    READY = "READY"
    BUSY = "BUSY"
    ERROR = "ERROR"


@dataclass(frozen=True)
class LoadedModel:
    """A model session the server holds in memory, and the device that really runs it."""

    family: str
    model: str
    device: str


@dataclass(frozen=True)
class ActiveJobProgress:
    """How far the server's running job is, as its snapshot reports it (not the server's JobProgress, which
    a job uses to report it)."""

    fraction: float
    message: str


def server_state(snapshot: Mapping[str, Any] | None) -> ServerState:
    raw = _mapping(snapshot).get("state")
    try:
        return ServerState(str(raw).upper())
    except ValueError:
        return ServerState.ERROR if raw else ServerState.STOPPED


def server_message(snapshot: Mapping[str, Any] | None) -> str:
    message = _mapping(snapshot).get("message")
    return str(message) if message else ""


def resource(snapshot: Mapping[str, Any] | None, name: str) -> Mapping[str, Any]:
    return _mapping(_mapping(_mapping(snapshot).get("resources")).get(name))


def offered_devices(snapshot: Mapping[str, Any] | None) -> list[Device] | None:
    """Devices the running server's ONNX Runtime really offers (`models.devices`), None when not reported.

    Unknown names are dropped rather than trusted: the preference enum must only ever hold contract ids.
    """
    raw = resource(snapshot, "models").get("devices")
    if not isinstance(raw, (list, tuple)):
        return None
    devices: list[Device] = []
    for name in raw:
        try:
            device = Device(str(name).lower())
        except ValueError:
            continue
        if device not in devices:
            devices.append(device)
    return devices or None


def loaded_models(snapshot: Mapping[str, Any] | None) -> list[LoadedModel]:
    """The sessions the server holds (`models.loaded`: family, model, and the device that really runs it)."""
    raw = resource(snapshot, "models").get("loaded")
    loaded = []
    for entry in raw if isinstance(raw, (list, tuple)) else ():
        entry = _mapping(entry)
        if entry.get("model"):
            loaded.append(
                LoadedModel(str(entry.get("family") or ""), str(entry["model"]), str(entry.get("device") or "?"))
            )
    return loaded


def device_warnings(snapshot: Mapping[str, Any] | None) -> list[str]:
    """Device fallbacks since the server started (`models.device_warnings`), each one sentence; [] if none."""
    raw = resource(snapshot, "models").get("device_warnings")
    return [str(item) for item in raw if item] if isinstance(raw, (list, tuple)) else []


def uses_mirror(snapshot: Mapping[str, Any] | None) -> bool:
    """True when the server switched model downloads to the mirror (`downloads.source` is "mirror")."""
    return resource(snapshot, "downloads").get("source") == "mirror"


def active_job_progress(snapshot: Mapping[str, Any] | None) -> ActiveJobProgress | None:
    job = _mapping(_mapping(snapshot).get("active_job"))
    if not job:
        return None
    try:
        fraction = min(max(float(job.get("progress", 0.0)), 0.0), 1.0)
    except (TypeError, ValueError):
        fraction = 0.0
    return ActiveJobProgress(fraction, str(job.get("message") or job.get("job_type") or "Working"))


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
