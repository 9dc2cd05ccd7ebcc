"""Read the job server's health snapshot: BlendJob's fields defensively, ImageForge's resources typed.

BlendJob's poll timer keeps `runtime.server.snapshot` current (the client's controller writes it): `{"state":
ServerState, "message": ...}` plus, while a server answers, the server's health: `active_job` and `resources` (each
resource's `snapshot()`). BlendJob's own fields are read defensively. ImageForge's resources are
contract/health.py's dataclasses: "models" is `ModelsHealth` (ModelManager), "downloads" `DownloadsHealth`
(DownloadSources); each is read with `from_json`, and one that does not read (a server of another version, a
resource not reported yet) is "not reported" as a whole, never an exception inside a panel's draw().

No bpy here: panels, preferences and tests share these plain functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..contract import Device, InputError
from ..contract.health import DownloadsHealth, DownloadSource, LoadedModel, ModelsHealth
from ..contract.server_state import ServerState


@dataclass(frozen=True)
class ActiveJobProgress:
    """How far the server's running job is, as its snapshot reports it (not the server's JobProgress, which
    a job uses to report it)."""

    fraction: float
    message: str


def server_state(snapshot: Mapping[str, Any] | None) -> ServerState:
    """The snapshot's state (contract/server_state.py, what the client writes); ERROR for one it does not know."""
    raw = _mapping(snapshot).get("state")
    try:
        return ServerState(str(raw).upper())
    except ValueError:
        return ServerState.ERROR if raw else ServerState.STOPPED


def server_message(snapshot: Mapping[str, Any] | None) -> str:
    message = _mapping(snapshot).get("message")
    return str(message) if message else ""


def models_health(snapshot: Mapping[str, Any] | None) -> ModelsHealth | None:
    """The `models` resource, or None when the server reports none this client can read."""
    try:
        return ModelsHealth.from_json(_mapping(_mapping(snapshot).get("resources")).get("models"))
    except InputError:
        return None


def downloads_health(snapshot: Mapping[str, Any] | None) -> DownloadsHealth | None:
    """The `downloads` resource, or None when the server reports none this client can read."""
    try:
        return DownloadsHealth.from_json(_mapping(_mapping(snapshot).get("resources")).get("downloads"))
    except InputError:
        return None


def offered_devices(snapshot: Mapping[str, Any] | None) -> list[Device] | None:
    """Devices the running server's ONNX Runtime really offers (`models.devices`), None when not reported.

    Unknown names are dropped rather than trusted: the preference enum must only ever hold contract ids.
    """
    models = models_health(snapshot)
    if models is None:
        return None
    devices: list[Device] = []
    for name in models.devices:
        try:
            device = Device(name.lower())
        except ValueError:
            continue
        if device not in devices:
            devices.append(device)
    return devices or None


def loaded_models(snapshot: Mapping[str, Any] | None) -> list[LoadedModel]:
    """The sessions the server holds (`models.loaded`: family, model, and the device that really runs it)."""
    models = models_health(snapshot)
    return list(models.loaded) if models is not None else []


def device_warnings(snapshot: Mapping[str, Any] | None) -> list[str]:
    """Device fallbacks since the server started (`models.device_warnings`), each one sentence; [] if none."""
    models = models_health(snapshot)
    return [item for item in models.device_warnings if item] if models is not None else []


def uses_mirror(snapshot: Mapping[str, Any] | None) -> bool:
    """True when the server switched model downloads to the mirror (`downloads.source` is "mirror")."""
    downloads = downloads_health(snapshot)
    return downloads is not None and downloads.source is DownloadSource.MIRROR


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
