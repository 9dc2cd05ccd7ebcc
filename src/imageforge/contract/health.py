"""The parts of the server's health snapshot that are ImageForge's own: its resources `models`, `downloads` and
`clients`, as frozen dataclasses with a layout version.

BlendJob's poll keeps `runtime.server.snapshot` current: its own fields (`state`, `message`, `active_job`, ...)
plus `resources`, each resource's `snapshot()`. The server's resources build these dataclasses and return
`to_json()` (server/inference/model_manager.py, server/downloads/sources.py, server/clients.py); the add-on
reads them with `from_json()` (addon/health_snapshot.py), which raises InputError on a wrong field, so a
panel shows "not reported" instead of a half-read resource. Version 1 is this layout; a snapshot without
`version` comes from a server older than the field and has the same layout, except that `device_warnings`
and `idle_seconds` (added later) may be missing and then read as none and 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from .json_fields import JsonFields

HEALTH_VERSION = 1


class DownloadSource(StrEnum):
    """Where the server fetches model files from: the Hugging Face hub, or the configured mirror."""

    HUB = "hub"
    MIRROR = "mirror"


@dataclass(frozen=True)
class LoadedModel:
    """A model session the server holds, the device asked for, and the device and provider that really run it."""

    family: str
    model: str
    requested_device: str
    device: str
    provider: str
    providers: tuple[str, ...]
    load_seconds: float
    runs: int
    fallback: str | None  # why the requested device was not used, if it was not

    def to_json(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "model": self.model,
            "requested_device": self.requested_device,
            "device": self.device,
            "provider": self.provider,
            "providers": list(self.providers),
            "load_seconds": self.load_seconds,
            "runs": self.runs,
            "fallback": self.fallback,
        }

    @classmethod
    def from_json(cls, fields: JsonFields) -> LoadedModel:
        return cls(
            family=fields.text("family"),
            model=fields.text("model"),
            requested_device=fields.text("requested_device"),
            device=fields.text("device"),
            provider=fields.text("provider"),
            providers=fields.texts("providers"),
            load_seconds=fields.number("load_seconds"),
            runs=fields.integer("runs"),
            fallback=fields.optional_text("fallback"),
        )


@dataclass(frozen=True)
class OnnxRuntimeInfo:
    version: str
    variant: str  # the installed package: onnxruntime, onnxruntime-gpu, onnxruntime-directml
    providers: tuple[str, ...]


@dataclass(frozen=True)
class ModelsHealth:
    """The `models` resource: sessions held, devices ONNX Runtime really offers, and device fallbacks so far."""

    loaded: tuple[LoadedModel, ...]
    devices: tuple[str, ...]  # contract Device values
    unavailable: dict[str, str]  # device -> why it is not offered
    onnxruntime: OnnxRuntimeInfo | None  # None until detection finished
    detecting: bool
    threads: int
    cpu_only: tuple[str, ...]  # models pinned to the CPU after an accelerator failed them
    device_warnings: tuple[str, ...]  # one sentence each; the Server panel shows them until a restart
    version: int = HEALTH_VERSION

    def to_json(self) -> dict[str, Any]:
        runtime = self.onnxruntime
        return {
            "version": self.version,
            "loaded": [model.to_json() for model in self.loaded],
            "devices": list(self.devices),
            "unavailable": dict(self.unavailable),
            "onnxruntime": (
                {"version": runtime.version, "variant": runtime.variant, "providers": list(runtime.providers)}
                if runtime
                else None
            ),
            "detecting": self.detecting,
            "threads": self.threads,
            "cpu_only": list(self.cpu_only),
            "device_warnings": list(self.device_warnings),
        }

    @classmethod
    def from_json(cls, raw: object) -> ModelsHealth:
        fields = JsonFields(raw, "The models snapshot")
        version = fields.version(HEALTH_VERSION)
        runtime = None
        if fields.raw.get("onnxruntime") is not None:
            info = fields.child("onnxruntime")
            runtime = OnnxRuntimeInfo(info.text("version"), info.text("variant"), info.texts("providers"))
        return cls(
            version=version,
            loaded=tuple(LoadedModel.from_json(item) for item in fields.objects("loaded")),
            devices=fields.texts("devices"),
            unavailable=fields.text_map("unavailable"),
            onnxruntime=runtime,
            detecting=fields.flag("detecting"),
            threads=fields.integer("threads"),
            cpu_only=fields.texts("cpu_only"),
            device_warnings=fields.texts("device_warnings", default=()),
        )


@dataclass(frozen=True)
class DownloadsHealth:
    """The `downloads` resource: where model files come from now, and why the server switched, if it did."""

    source: DownloadSource
    hub: str
    mirror: str | None
    switched_at: float | None  # time.time() of the switch to the mirror
    reason: str | None
    last_error: str | None
    version: int = HEALTH_VERSION

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "source": self.source.value,
            "hub": self.hub,
            "mirror": self.mirror,
            "switched_at": self.switched_at,
            "reason": self.reason,
            "last_error": self.last_error,
        }

    @classmethod
    def from_json(cls, raw: object) -> DownloadsHealth:
        fields = JsonFields(raw, "The downloads snapshot")
        version = fields.version(HEALTH_VERSION)
        source = fields.text("source")
        if source not in set(DownloadSource):
            raise fields.problem(f"source must be one of hub, mirror (found {source!r:.40})")
        return cls(
            version=version,
            source=DownloadSource(source),
            hub=fields.text("hub"),
            mirror=fields.optional_text("mirror"),
            switched_at=fields.optional_number("switched_at"),
            reason=fields.optional_text("reason"),
            last_error=fields.optional_text("last_error"),
        )


@dataclass(frozen=True)
class ClientLease:
    client_id: str
    pid: int
    kind: str  # contract/server_clients.py ClientKind value
    seconds: float  # attached for


@dataclass(frozen=True)
class ClientsHealth:
    """The `clients` resource: who holds a lease on the server, and how long it lingers once nobody does."""

    clients: tuple[ClientLease, ...]
    linger: float
    idle_seconds: float
    version: int = HEALTH_VERSION

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "clients": [
                {"client_id": c.client_id, "pid": c.pid, "kind": c.kind, "seconds": c.seconds} for c in self.clients
            ],
            "linger": self.linger,
            "idle_seconds": self.idle_seconds,
        }

    @classmethod
    def from_json(cls, raw: object) -> ClientsHealth:
        fields = JsonFields(raw, "The clients snapshot")
        version = fields.version(HEALTH_VERSION)
        clients = tuple(
            ClientLease(item.text("client_id"), item.integer("pid"), item.text("kind"), item.number("seconds"))
            for item in fields.objects("clients")
        )
        return cls(clients, fields.number("linger"), fields.number("idle_seconds", default=0.0), version)
