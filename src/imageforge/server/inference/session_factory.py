"""The one function that creates ONNX Runtime sessions, and the per-device settings it applies.

Every provider quirk lives here so that adapters never build sessions themselves:
- CUDA: `kSameAsRequested` keeps the arena close to what the model needs (and shrinkable after a job);
  `HEURISTIC` cuDNN search, so a new tile or frame shape does not benchmark every convolution algorithm
  first (ONNX Runtime's default; not measured here, no GPU).
- DirectML: memory patterns off and sequential execution, or creation fails; batch symbols pinned to 1 so
  DirectML can pre-optimise.
- CoreML: the default configuration (forcing MLProgram broke MoGe-2 on M4) plus per-model options, the
  compile cache, and CPU always listed after it for the nodes CoreML cannot take.
- OpenVINO: the device the server probed (openvino_probe.py; "CPU" on a machine without an Intel GPU), FP32
  on CPU (its only other choice, ACCURACY, is the same for our fp32 files) and ACCURACY (the file's own
  precision, not its FP16 default) on a GPU, the request's thread count on CPU, and its compiled-model cache
  under `<storage>/cache/openvino` (OpenVINO keys each blob by model and configuration itself).
- CPU: the request's `cpu_graph` when it has one (the verified fp32 copy of an fp16 file, cpu_copy.py);
  accelerators always load the original.
- An accelerator that fails to create, or that ONNX Runtime silently drops, becomes a CPU session with the
  reason logged and returned, so the job can say so.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ...contract import Device, ModelUnavailableError, ResourceExhaustedError
from .coreml_cache import CoreMLCache
from .devices import PROVIDERS, OrtRuntime, default_intra_op_threads
from .failures import MEMORY_MESSAGE, describe, is_memory_exhaustion

log = logging.getLogger(__name__)

CUDA_DEFAULTS = {"device_id": "0", "arena_extend_strategy": "kSameAsRequested", "cudnn_conv_algo_search": "HEURISTIC"}
DIRECTML_DEFAULTS = {"device_id": "0"}
OPENVINO_CACHE = Path("cache") / "openvino"
BATCH_SYMBOLS = {"batch": 1, "batch_size": 1}


@dataclass(frozen=True)
class SessionRequest:
    """What to load and where. `files[0]` is the graph; later files (external data) only feed cache keys."""

    name: str
    files: tuple[Path, ...]
    device: Device
    provider_options: Mapping[str, str] = field(default_factory=dict)
    free_dimensions: Mapping[str, int] = field(default_factory=dict)
    threads: int | None = None
    label: str = ""  # how messages name the model; `name` (the catalog key) names cache folders
    cpu_graph: Path | None = None  # what CPU sessions load instead of `files[0]`: the fp32 copy of an fp16 file

    @property
    def graph(self) -> Path:
        return self.files[0]

    @property
    def title(self) -> str:
        return self.label or self.name


@dataclass(frozen=True)
class CreatedSession:
    session: Any
    device: Device  # the device that really runs, from session.get_providers()
    providers: tuple[str, ...]
    load_seconds: float
    shrink: str | None = None  # arenas this session really has, as `memory.enable_memory_arena_shrinkage` names them
    fallback: str | None = None  # why this is not the requested device, phrased for the job's message
    graph: Path | None = None  # the file this session was loaded from

    @property
    def provider(self) -> str:
        return self.providers[0]


def create_session(
    runtime: OrtRuntime,
    request: SessionRequest,
    *,
    coreml_cache: CoreMLCache | None = None,
    openvino_cache: Path | None = None,
) -> CreatedSession:
    """A session on `request.device`, or on CPU with `fallback` set when the accelerator cannot take the model.
    `openvino_cache`: the folder OpenVINO keeps compiled models in (`<storage>/cache/openvino`)."""
    started = time.perf_counter()
    if request.device in (Device.CPU, Device.AUTO):
        return _cpu_session(runtime, replace(request, device=Device.CPU), started, fallback=None)
    wanted = PROVIDERS[request.device]
    try:
        session = _accelerated(runtime, request, coreml_cache, openvino_cache)
    except Exception as error:  # any provider failure: the CPU session below is the answer
        reason = describe(error)
        log.warning("%s: %s could not create a session (%s); using CPU.", request.name, wanted, repr(error))
    else:
        providers = tuple(session.get_providers())
        if providers and providers[0] == wanted:
            elapsed = time.perf_counter() - started
            shrink = _shrink_target(request, providers)
            return CreatedSession(session, request.device, providers, elapsed, shrink, graph=request.graph)
        reason = f"ONNX Runtime did not start {wanted}"
        log.warning("%s: %s asked for, %s running; using CPU.", request.name, wanted, list(providers))
        del session  # release it before the CPU session loads the weights again
    message = f"{request.device.label} could not load {request.title} ({reason}); running on CPU."
    return _cpu_session(runtime, replace(request, device=Device.CPU), started, fallback=message)


def provider_list(
    request: SessionRequest, *, cache_folder: Path | None = None, target: str = "CPU"
) -> list[tuple[str, dict[str, str]]]:
    """(provider, options) pairs in priority order; CPU always last so unsupported nodes still run.
    `target`: OpenVINO's own device (`device_type`), as the server probed it."""
    extra = {str(name): str(value) for name, value in request.provider_options.items()}
    cpu: tuple[str, dict[str, str]] = (PROVIDERS[Device.CPU], {})
    if request.device is Device.CUDA:
        return [(PROVIDERS[Device.CUDA], {**CUDA_DEFAULTS, **extra}), cpu]
    if request.device is Device.DIRECTML:
        return [(PROVIDERS[Device.DIRECTML], {**DIRECTML_DEFAULTS, **extra}), cpu]
    if request.device is Device.COREML:
        cache = {"ModelCacheDirectory": str(cache_folder)} if cache_folder is not None else {}
        return [(PROVIDERS[Device.COREML], {**extra, **cache}), cpu]
    if request.device is Device.OPENVINO:
        return [(PROVIDERS[Device.OPENVINO], {**openvino_options(request, target, cache_folder), **extra}), cpu]
    return [cpu]


def openvino_options(request: SessionRequest, target: str, cache_folder: Path | None) -> dict[str, str]:
    options = {"device_type": target, "precision": "FP32" if target == "CPU" else "ACCURACY"}
    if target == "CPU":
        options["num_of_threads"] = str(request.threads or default_intra_op_threads())
    if cache_folder is not None:
        options["cache_dir"] = str(cache_folder)
    return options


def session_options(runtime: OrtRuntime, request: SessionRequest) -> Any:
    options = runtime.module.SessionOptions()
    options.intra_op_num_threads = request.threads or default_intra_op_threads()
    dimensions = dict(request.free_dimensions)
    if request.device is Device.DIRECTML:
        options.enable_mem_pattern = False
        options.execution_mode = runtime.module.ExecutionMode.ORT_SEQUENTIAL
        dimensions = {**BATCH_SYMBOLS, **dimensions}
    for name, value in dimensions.items():
        options.add_free_dimension_override_by_name(name, int(value))
    return options


def _accelerated(
    runtime: OrtRuntime, request: SessionRequest, coreml_cache: CoreMLCache | None, openvino_cache: Path | None
) -> Any:
    if request.device is Device.OPENVINO:
        target = runtime.targets.get(Device.OPENVINO, "CPU")
        if openvino_cache is not None:
            openvino_cache.mkdir(parents=True, exist_ok=True)
        return _open(runtime, request, provider_list(request, cache_folder=openvino_cache, target=target))
    if request.device is not Device.COREML or coreml_cache is None:
        return _open(runtime, request, provider_list(request))
    folder = coreml_cache.folder_for(
        request.name, request.files, request.provider_options, request.free_dimensions, runtime.version
    )
    try:
        return _open(runtime, request, provider_list(request, cache_folder=folder))
    except Exception as error:
        # A compilation cached by a crashed or older run can break creation: start clean, once.
        log.warning("%s: CoreML failed with its cache (%s); clearing it, retrying.", request.name, repr(error))
        coreml_cache.clear(folder)
        folder.mkdir(parents=True, exist_ok=True)
        return _open(runtime, request, provider_list(request, cache_folder=folder))


def _open(runtime: OrtRuntime, request: SessionRequest, providers: list[tuple[str, dict[str, str]]]) -> Any:
    # enable_fallback=0: ONNX Runtime's own retry on CPU would hide the reason and keep the accelerator's options.
    return runtime.module.InferenceSession(
        str(request.graph),
        sess_options=session_options(runtime, request),
        providers=[name for name, _ in providers],
        provider_options=[options for _, options in providers],
        enable_fallback=0,
    )


def _cpu_session(
    runtime: OrtRuntime, request: SessionRequest, started: float, *, fallback: str | None
) -> CreatedSession:
    if request.cpu_graph is not None:
        request = replace(request, files=(request.cpu_graph, *request.files[1:]))
    try:
        session = _open(runtime, request, provider_list(request))
    except Exception as error:
        if is_memory_exhaustion(error):
            raise ResourceExhaustedError(MEMORY_MESSAGE) from error
        if not request.graph.is_file():
            raise ModelUnavailableError(f"The model file of {request.title} is missing; download it again.") from error
        raise ModelUnavailableError(f"{request.title} could not be loaded ({describe(error)}).") from error
    providers = tuple(session.get_providers())
    elapsed = time.perf_counter() - started
    shrink = _shrink_target(request, providers)
    return CreatedSession(session, Device.CPU, providers, elapsed, shrink, fallback, graph=request.graph)


def _shrink_target(request: SessionRequest, providers: tuple[str, ...]) -> str | None:
    """Only arenas the session really owns: asking to shrink a missing arena fails the whole run.

    CUDA's device arena when CUDA really runs; the CPU arena (on by default) for pure CPU sessions, where
    ONNX Runtime 1.23 accepts `cpu:0`. DirectML, CoreML and OpenVINO manage their own memory: nothing to shrink.
    """
    if providers[:1] == (PROVIDERS[Device.CUDA],):
        options = {**CUDA_DEFAULTS, **request.provider_options}
        return f"gpu:{options['device_id']}"
    if providers == (PROVIDERS[Device.CPU],):
        return "cpu:0"
    return None
