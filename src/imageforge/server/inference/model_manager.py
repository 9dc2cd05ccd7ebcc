"""ModelManager, the BlendJob resource "models": one warm session per model family, shared by jobs.

Loading is the slow part of a small job (weights read, graph optimised, CoreML compiled), so the session a
job used stays loaded for the next job on the same model and device. One per family (background, geometry,
upscale, multiview) bounds memory: asking for another model or device of a family releases the old session
before the new one loads, so two large models of a family never sit in memory together.

`snapshot()` is served by BlendJob's `/health`, which clients poll with sub-second timeouts, so it never waits
for a loading model or for ONNX Runtime's import: it reads a published copy, and ONNX Runtime is detected in
a background thread started with the server.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

from ...contract import Device, ImageForgeError, ModelUnavailableError
from ...contract.catalog import Family, ModelEntry
from ...contract.health import LoadedModel, ModelsHealth, OnnxRuntimeInfo
from ...contract.model_files import file_path, known_sha256
from ..cpu_copies.cpu_copy import cpu_graph, ready_copy
from .coreml_cache import CoreMLCache
from .devices import OrtRuntime, default_intra_op_threads, detect_runtime, resolve_device
from .runner import LoadedSession, Warn, run
from .session_factory import OPENVINO_CACHE, SessionRequest, create_session


class SessionKey(NamedTuple):
    """What a loaded session was made from: an equal key reuses it, an equal model key repeats a CPU pin."""

    model: str
    device: Device
    files: tuple[tuple[str, int, int], ...]  # (path, size, mtime_ns) per file
    provider_options: tuple[tuple[str, str], ...]
    free_dimensions: tuple[tuple[str, int], ...]
    threads: int
    cpu_graph: str


log = logging.getLogger(__name__)
Slot = tuple[Family, str]  # a family and the graph of its model ("" for a model of one graph)


class SessionHandle:
    """What an adapter holds during one job: run models through it, read what really runs from it."""

    def __init__(
        self,
        family: Family,
        model: str,
        requested: Device,
        loaded: LoadedSession,
        warn: Warn | None,
        *,
        reused: bool = False,
    ):
        self.reused = reused  # the session was already loaded by an earlier job (for the job log)
        self.family = family
        self.model = model
        self.requested = requested
        self._loaded = loaded
        self._warn = warn

    def run(self, feeds: Mapping[str, Any], *, last_run: bool) -> dict[str, Any]:
        """Run through the single entry point; `last_run=True` on a job's final tile, frame or view."""
        return run(self._loaded, feeds, last_run=last_run, warn=self._warn)

    @property
    def device(self) -> Device:
        return self._loaded.current().device

    @property
    def loaded(self) -> bool:
        """Whether the session is still loaded (another model of the family, or Unload Models, releases it)."""
        return self._loaded.created is not None

    @property
    def provider(self) -> str:
        return self._loaded.current().provider

    @property
    def threads(self) -> int:
        """The session's intra-op thread count (what it was created with)."""
        return self._loaded.request.threads or default_intra_op_threads()  # as session_options() resolves it

    @property
    def providers(self) -> tuple[str, ...]:
        return self._loaded.current().providers

    @property
    def graph(self) -> Path | None:
        """The model file the session was loaded from (the fp32 CPU copy of an fp16 file, or the original)."""
        return self._loaded.current().graph

    @property
    def model_path(self) -> Path:
        """The downloaded graph file (never a converted copy), for checks that read the graph (onnx_messages.py)."""
        return self._loaded.request.files[0]

    @property
    def session(self) -> Any:
        """The ONNX Runtime session, for reading input and output metadata; run through `run()`."""
        return self._loaded.current().session


class ModelManager:
    def __init__(
        self,
        storage_root: Path,
        *,
        detect: Callable[[], OrtRuntime] = detect_runtime,
        threads: int | None = None,
    ) -> None:
        self.storage_root = Path(storage_root)
        self.threads = threads or default_intra_op_threads()
        self._coreml_cache = CoreMLCache(self.storage_root)
        self._detect = detect
        self._runtime: OrtRuntime | None = None
        self._runtime_error: BaseException | None = None
        self._detected = threading.Event()
        self._detecting = threading.Lock()
        self._load_lock = threading.RLock()  # held while loading: acquire, clear and close
        self._state_lock = threading.Lock()  # held briefly: what snapshot() reads
        self._loaded: dict[Slot, tuple[SessionKey, LoadedSession]] = {}
        self._cpu_pins: dict[SessionKey, str] = {}  # models whose accelerator failed while running → why (_state_lock)
        self._device_warnings: list[str] = []  # every device warning since this server started (_state_lock)
        self._closed = False

    def start_detection(self) -> None:
        """Detect ONNX Runtime in the background so the first snapshot can already list devices."""
        threading.Thread(target=self._detect_once, name="ImageForgeDetectRuntime", daemon=True).start()

    @property
    def runtime(self) -> OrtRuntime:
        self._detect_once()
        if self._runtime is None:
            raise ModelUnavailableError(
                "ONNX Runtime could not be loaded in the server environment; repair the server."
            ) from self._runtime_error
        return self._runtime

    def acquire(
        self,
        entry: ModelEntry,
        device: Device | str = Device.AUTO,
        *,
        provider_options: Mapping[str, str] | None = None,
        free_dimensions: Mapping[str, int] | None = None,
        threads: int | None = None,
        warn: Warn | None = None,
        progress: Callable[[str], None] | None = None,
        graph: str | None = None,
    ) -> SessionHandle:
        """The session for `entry` on `device`, loaded now or reused; warnings about the device go to `warn`.

        `provider_options` are the model's own options for the chosen accelerator (MoGe-2 on CoreML:
        `{"RequireStaticInputShapes": "1"}`); `threads` overrides the manager's `intra_op_num_threads`.
        CPU sessions of an fp16 file load its verified fp32 copy, derived on first CPU use (`progress` hears
        about that wait); sessions on an accelerator load the original (cpu_copy.py). `graph` names which of the
        entry's .onnx files to load, for a model of several graphs (default: the first).
        """
        runtime = self.runtime
        choice = resolve_device(device, runtime, openvino_auto=entry.openvino_auto)
        files = self._files(entry, graph)
        threads = threads or self.threads
        request = SessionRequest(
            name=entry.key,
            files=files,
            device=choice.device,
            provider_options=dict(provider_options or {}),
            free_dimensions=dict(free_dimensions or {}),
            threads=threads,
            label=entry.label,
            cpu_graph=self._cpu_graph(runtime, entry, files[0], choice.device, threads, progress),
        )
        stats = [path.stat() for path in request.files]
        key = SessionKey(
            entry.key,
            choice.device,
            tuple((str(path), info.st_size, info.st_mtime_ns) for path, info in zip(request.files, stats, strict=True)),
            tuple(sorted(request.provider_options.items())),
            tuple(sorted(request.free_dimensions.items())),
            threads,  # = request.threads
            str(request.cpu_graph),
        )
        slot = (entry.family, graph or "")
        with self._load_lock:
            if self._closed:
                raise ImageForgeError("The server is shutting down; run the job again after it restarts.")
            cached = self._loaded.get(slot)
            reused = cached is not None and cached[0] == key and cached[1].created is not None
            if cached is not None and reused:
                loaded = cached[1]
            else:
                for other, (other_key, _session) in list(self._loaded.items()):
                    if other[0] == entry.family and (other == slot or other_key.model != entry.key):
                        self._release(other)
                loaded = self._load(runtime, slot, key, request)
        for message in (choice.warning, self._cpu_pin(key) or loaded.current().fallback):
            if message:
                log.warning("%s", message)
                self._note_device_warning(message)
                if warn is not None:
                    warn(message)
        return SessionHandle(entry.family, entry.key, Device(device), loaded, warn, reused=reused)

    def prepare_for_cpu(self, entry: ModelEntry, *, progress: Callable[[str], None] | None = None) -> Path | None:
        """After a download on a machine where only the CPU runs models: derive the fp32 copy of an fp16 file
        now, while the user expects to wait, instead of in the first job. Returns the copy, or None."""
        runtime = self.runtime
        if resolve_device(Device.AUTO, runtime, openvino_auto=entry.openvino_auto).device is not Device.CPU:
            return None  # accelerators run the fp16 original; a CPU fallback derives nothing either
        return self._cpu_graph(runtime, entry, self._files(entry, None)[0], Device.CPU, self.threads, progress)

    def hold(self) -> threading.RLock:
        """`with manager.hold():` no session is loaded, released or cleared meanwhile (a click's decoder run
        outside the job queue: server/clicks/)."""
        return self._load_lock

    def snapshot(self) -> dict[str, Any]:
        with self._state_lock:  # a job thread adds sessions and CPU pins meanwhile: copy both under the lock
            current = [(slot[0], key, session, session.created) for slot, (key, session) in self._loaded.items()]
            cpu_only = sorted({key.model for key in self._cpu_pins})
            device_warnings = list(self._device_warnings)
        loaded = tuple(
            LoadedModel(
                family=family,
                model=session.request.name,
                requested_device=key.device.value,
                device=created.device.value,
                provider=created.provider,
                providers=tuple(created.providers),
                load_seconds=round(created.load_seconds, 4),
                runs=session.runs,
                fallback=created.fallback,
            )
            for family, key, session, created in current
            if created is not None
        )
        runtime = self._runtime
        return ModelsHealth(
            loaded=loaded,
            devices=tuple(device.value for device in runtime.devices) if runtime else (),
            unavailable={device.value: why for device, why in runtime.unavailable.items()} if runtime else {},
            onnxruntime=OnnxRuntimeInfo(runtime.version, runtime.variant, tuple(runtime.providers))
            if runtime
            else None,
            detecting=not self._detected.is_set(),
            threads=self.threads,
            cpu_only=tuple(cpu_only),
            device_warnings=tuple(device_warnings),  # the Server panel shows them until the server restarts
        ).to_json()

    def clear(self) -> None:
        """Unload every session (BlendJob calls this only while no job runs). CPU pins stay until restart."""
        with self._load_lock:
            for slot in list(self._loaded):
                self._release(slot)

    def close(self) -> None:
        with self._load_lock:
            self._closed = True
            self.clear()

    def _detect_once(self) -> None:
        with self._detecting:
            if self._detected.is_set():
                return
            try:
                self._runtime = self._detect()
            except Exception as error:  # a broken install must not stop download jobs or the server
                log.exception("ONNX Runtime detection failed")
                self._runtime_error = error
            self._detected.set()

    def _files(self, entry: ModelEntry, graph: str | None) -> tuple[Path, ...]:
        graphs = [item for item in entry.files if item.path.lower().endswith(".onnx")] or list(entry.files)
        if graph is not None:
            graphs = [item for item in graphs if item.path == graph]
            if not graphs:
                raise ModelUnavailableError(f"{entry.label} has no graph {graph}; the catalog entry is incomplete.")
        # The graph first; then the files that only feed the cache key: every other file, or for one graph of
        # several its external data only (another graph's change must not reload this one).
        others = [
            item
            for item in entry.files
            if item is not graphs[0] and (graph is None or not item.path.lower().endswith(".onnx"))
        ]
        ordered = [graphs[0], *others]
        paths = tuple(file_path(self.storage_root, entry, item) for item in ordered)
        for path in paths:
            if not path.is_file():
                raise ModelUnavailableError(f"{entry.label} is not downloaded; download it in the preferences.")
        return paths

    def _cpu_graph(
        self,
        runtime: OrtRuntime,
        entry: ModelEntry,
        graph: Path,
        device: Device,
        threads: int,
        progress: Callable[[str], None] | None,
    ) -> Path | None:
        """The fp32 copy CPU sessions of `graph` load, or None for the original. Derived only for a CPU session;
        for an accelerator's CPU fallback only a copy that already exists is used (no minute-long detour)."""
        try:
            digest = known_sha256(self.storage_root, graph)
            if device is not Device.CPU:
                return ready_copy(graph, digest)
            with self._load_lock:  # one derivation at a time, never while another job loads
                announce = (lambda: progress(f"Preparing {entry.label} for CPU (once)")) if progress else lambda: None
                chosen = cpu_graph(runtime.module, graph, digest, threads=threads, announce=announce)
        except Exception as error:  # a copy is an optimisation: any failure leaves the original serving
            log.warning("%s: no fp32 CPU copy (%r); the original serves.", entry.key, error)
            return None
        return None if chosen == graph else chosen

    def _load(self, runtime: OrtRuntime, slot: Slot, key: SessionKey, request: SessionRequest) -> LoadedSession:
        pinned = replace(request, device=Device.CPU) if self._cpu_pin(key) is not None else request
        created = create_session(
            runtime, pinned, coreml_cache=self._coreml_cache, openvino_cache=self.storage_root / OPENVINO_CACHE
        )
        log.info("Loaded %s on %s in %.3f s", request.name, created.provider, created.load_seconds)
        loaded = LoadedSession(runtime, request, created)
        loaded.on_cpu_fallback = lambda message: self._pin_to_cpu(key, message)  # called on the job's thread
        with self._state_lock:
            self._loaded[slot] = (key, loaded)
        return loaded

    def _pin_to_cpu(self, key: SessionKey, message: str) -> None:
        with self._state_lock:
            self._cpu_pins[key] = message
        self._note_device_warning(message)

    def _note_device_warning(self, message: str) -> None:
        with self._state_lock:
            if message not in self._device_warnings:
                self._device_warnings.append(message)

    def _cpu_pin(self, key: SessionKey) -> str | None:
        with self._state_lock:
            return self._cpu_pins.get(key)

    def _release(self, slot: Slot) -> None:
        with self._state_lock:
            cached = self._loaded.pop(slot, None)
        if cached is not None:
            cached[1].release()
            log.info("Unloaded %s", cached[1].request.name)
