"""The adapter base, the registry keyed by the catalog's `adapter` field, and model preparation for a job.

Preparing a model inside a job: if its files are not ready they are downloaded first (progress in the
job's message), then the "models" resource hands out the cached session for the requested device. Every
device warning goes to the job's message and log.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ...contract import Device, ModelUnavailableError
from ...contract.catalog import Family, ModelEntry
from ...contract.model_files import model_status
from .. import provenance
from ..downloads.job_download import download_into_job
from ..inference import ModelManager, SessionHandle, current_fraction, job_warner
from ..inference.devices import resolve_device
from ..job_context import JobContext, resource_of

_REGISTRY: dict[str, type[Adapter]] = {}


class Adapter:
    """Base of every adapter. Subclasses set `name` (the catalog's adapter id) and `family`."""

    name: ClassVar[str] = ""
    family: ClassVar[Family]
    coreml_options: ClassVar[Mapping[str, str]] = {}  # passed only when the session is to run on CoreML
    # A model of several graphs names their roles; the catalog entry's option of each role names its .onnx file
    # (SAM 2: {"encoder": "encoder.onnx", "decoder": "decoder.onnx"}). `handle` is then the first role's, and
    # `graphs` holds every role's session. Empty: one graph, the entry's first .onnx file.
    graph_roles: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.name:
            if cls.name in _REGISTRY:
                raise TypeError(f"adapter {cls.name!r} is registered twice")
            _REGISTRY[cls.name] = cls

    def __init__(self, entry: ModelEntry, handle: SessionHandle):
        self.entry = entry
        self.handle = handle
        session = handle.session
        self.inputs = {item.name: item for item in session.get_inputs()}
        self.outputs = [item.name for item in session.get_outputs()]
        self.model_seconds = 0.0  # time inside the model, for the job log and the benchmarks' job/model ratio
        self.runs = 0
        self.graphs: dict[str, SessionHandle] = {}  # every role's session, for a model of several graphs

    def run(
        self, feeds: Mapping[str, np.ndarray], *, last_run: bool, graph: str | None = None
    ) -> dict[str, np.ndarray]:
        """Run through the single inference entry point; `last_run` on the job's final run; `graph` names the
        role to run for a model of several graphs."""
        started = time.perf_counter()
        handle = self.handle if graph is None else self.graphs[graph]
        try:
            return handle.run(feeds, last_run=last_run)
        finally:
            self.model_seconds += time.perf_counter() - started
            self.runs += 1

    def bind_graphs(self) -> None:
        """Check and read the graphs' signatures once `graphs` is set (models of several graphs)."""

    def input_dtype(self, name: str) -> np.dtype:
        return np.dtype(np.float16) if self.inputs[name].type == "tensor(float16)" else np.dtype(np.float32)

    @property
    def provider(self) -> str:
        return self.handle.provider

    @property
    def device(self) -> Device:
        return self.handle.device


def registered_adapters() -> dict[str, type[Adapter]]:
    """Every adapter this version has, by the catalog's `adapter` id."""
    return dict(_REGISTRY)


def adapter_class(entry: ModelEntry) -> type[Adapter]:
    try:
        cls = _REGISTRY[entry.adapter]
    except KeyError:
        raise ModelUnavailableError(f"{entry.label} needs an adapter ({entry.adapter}) this version lacks.") from None
    if cls.family != entry.family:
        raise ModelUnavailableError(f"{entry.label}: adapter {entry.adapter} serves {cls.family} models.")
    return cls


def load_adapter(
    context: JobContext,
    entry: ModelEntry,
    device: Device,
    *,
    download_until: float = 1.0,
) -> Adapter:
    """Make `entry` ready (downloading it if needed) and return its adapter on a session for `device`.

    A download fills the job's bar from where it stands to `download_until` (see `download_for_job`).
    """
    cls = adapter_class(entry)
    storage_root = Path(context.storage_root)
    if not model_status(storage_root, entry).ready:
        download_for_job(context, entry, until=download_until)
    manager = resource_of(context, "models", ModelManager)
    context.progress(current_fraction(context), f"Loading {entry.label}")
    resolved = resolve_device(device, manager.runtime, openvino_auto=entry.openvino_auto).device
    options = dict(cls.coreml_options) if resolved is Device.COREML else None
    handles = {}
    for role in cls.graph_roles or ("",):
        graph = entry.options.get(role) if role else None
        if role and not isinstance(graph, str):
            raise ModelUnavailableError(f"{entry.label}: the catalog entry names no {role} graph.")
        try:
            handles[role] = manager.acquire(
                entry,
                device,
                provider_options=options,
                warn=job_warner(context),
                progress=lambda message: context.progress(current_fraction(context), message),
                graph=graph,
            )
        except ModelUnavailableError as error:
            raise _damaged_or(error, storage_root, entry) from error
    adapter = cls(entry, next(iter(handles.values())))
    adapter.graphs = {role: handle for role, handle in handles.items() if role}
    adapter.bind_graphs()
    provenance.record(context, adapter)
    return adapter


def _damaged_or(error: ModelUnavailableError, storage_root: Path, entry: ModelEntry) -> ModelUnavailableError:
    """A session that cannot load a "ready" file (a Protobuf error): hash it now; a damaged file is named,
    its readiness record dropped (so the next job downloads it again), and the way to fix it given."""
    damaged = [item for item in model_status(storage_root, entry, use_cache=False).files if not item.ready]
    if not damaged:
        return error
    return ModelUnavailableError(
        f"{entry.label} is damaged on disk ({damaged[0].file.path} no longer matches its download); "
        f"run the job again to download it anew, or 'imageforge models download {entry.key}'."
    )


def download_for_job(context: JobContext, entry: ModelEntry, *, until: float = 1.0) -> None:
    """Fetch a missing model inside the job that needs it, reporting bytes and speed in its message.

    The bar moves from where the job stands to `until` (never backwards, never into the share of the
    stages that follow).
    """
    start = current_fraction(context)
    download_into_job(context, [entry], within=(start, max(start, until)))
