"""Which devices this server can really offer, decided from the installed ONNX Runtime, never from a guess.

The add-on's device menu shows exactly `available_devices()`: listing a provider is not using it, so CUDA is
offered only when its libraries and driver load here (onnxruntime-gpu lists CUDA on every Linux machine and
then silently runs on CPU when `libcublasLt` is missing), and OpenVINO only when one of its devices really
creates a session (openvino_probe.py: onnxruntime-openvino lists it on every machine). An explicit device
that is not available still runs, on CPU, but `resolve_device` returns the warning the job must show: users
complain most about silent fallback.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.metadata
import os
import platform
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ...contract import Device
from .openvino_probe import probe_openvino

PROVIDERS = {
    Device.CPU: "CPUExecutionProvider",
    Device.CUDA: "CUDAExecutionProvider",
    Device.DIRECTML: "DmlExecutionProvider",
    Device.COREML: "CoreMLExecutionProvider",
    Device.OPENVINO: "OpenVINOExecutionProvider",
}

# Every distribution that installs the `onnxruntime` module; they must never be installed together.
PACKAGE_VARIANTS = (
    "onnxruntime-gpu",
    "onnxruntime-directml",
    "onnxruntime-openvino",
    "onnxruntime-qnn",
    "onnxruntime",
)

# A probe returns None when the device can run here, else the reason it cannot (one short clause).
Probe = Callable[["OrtRuntime", Device], "str | None"]


@dataclass(frozen=True)
class OrtRuntime:
    """The imported ONNX Runtime module and what it says about itself on this machine."""

    module: Any
    version: str
    variant: str
    providers: tuple[str, ...]
    system: str
    machine: str
    unavailable: dict[Device, str] = field(default_factory=dict)  # device → why it is not offered
    targets: dict[Device, str] = field(default_factory=dict)  # device → the provider's own device (OpenVINO: "CPU")

    @property
    def devices(self) -> tuple[Device, ...]:
        return available_devices(self)


def detect_runtime(
    module: ModuleType | Any | None = None,
    *,
    system: str | None = None,
    machine: str | None = None,
    probe: Probe | None = None,
) -> OrtRuntime:
    """Import ONNX Runtime (lazily: the server starts without it) and record what it offers here."""
    if module is None:
        import onnxruntime  # heavy: imported only once a model is needed

        module = onnxruntime
    runtime = OrtRuntime(
        module=module,
        version=str(getattr(module, "__version__", "unknown")),
        variant=package_variant(),
        providers=tuple(module.get_available_providers()),
        system=system or platform.system(),
        machine=(machine or platform.machine()).lower(),
    )
    check = probe or probe_device
    for device in _candidates(runtime):
        reason = check(runtime, device)
        if reason is not None:
            runtime.unavailable[device] = reason
    return runtime


def package_variant() -> str:
    """Which distribution installed `onnxruntime` (the GPU, DirectML and CPU builds share the module name)."""
    for name in PACKAGE_VARIANTS:
        try:
            importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        return name
    return "unknown"


def _candidates(runtime: OrtRuntime) -> tuple[Device, ...]:
    """Accelerators this platform may offer, in menu order, before checking that they really load."""
    listed = set(runtime.providers)
    if runtime.system == "Darwin":
        # CoreML on every Apple Silicon machine, no chip-generation checks; Intel Macs get CPU only.
        arm = runtime.machine in ("arm64", "aarch64")
        return (Device.COREML,) if arm and PROVIDERS[Device.COREML] in listed else ()
    if runtime.system not in ("Windows", "Linux"):
        return ()
    found: tuple[Device, ...] = ()
    if runtime.system == "Windows" and PROVIDERS[Device.DIRECTML] in listed:
        found = (Device.DIRECTML,)
    elif PROVIDERS[Device.CUDA] in listed:
        found = (Device.CUDA,)
    if PROVIDERS[Device.OPENVINO] in listed:  # onnxruntime-openvino: never beside CUDA or DirectML today
        found = (*found, Device.OPENVINO)
    return found


def available_devices(runtime: OrtRuntime) -> tuple[Device, ...]:
    """The devices users may pick, default first: accelerator first except on macOS, where CPU leads."""
    accelerators = tuple(device for device in _candidates(runtime) if device not in runtime.unavailable)
    if runtime.system == "Darwin":
        return (Device.CPU, *accelerators)
    return (*accelerators, Device.CPU)


@dataclass(frozen=True)
class DeviceChoice:
    requested: Device
    device: Device
    warning: str | None = None


def resolve_device(requested: Device | str, runtime: OrtRuntime, *, openvino_auto: bool = False) -> DeviceChoice:
    """`auto` → the platform default; an unavailable explicit device → CPU with the warning to show.

    `auto` takes OpenVINO only for a model whose catalog entry says `openvino_auto` (measured faster than the
    CPU provider, openspec/0034): OpenVINO on a CPU is slower than ONNX Runtime's own for the upscalers."""
    requested = Device(requested)
    devices = runtime.devices
    if requested is Device.AUTO:
        chosen = [device for device in devices if device is not Device.OPENVINO or openvino_auto]
        return DeviceChoice(requested, chosen[0])
    if requested in devices:
        return DeviceChoice(requested, requested)
    reason = runtime.unavailable.get(requested) or f"{runtime.variant} {runtime.version} does not provide it"
    warning = f"{requested.label} is not available on this computer ({reason}); running on CPU."
    return DeviceChoice(requested, Device.CPU, warning)


def probe_device(runtime: OrtRuntime, device: Device) -> str | None:
    """The default probe: CUDA's libraries, OpenVINO's session (recording which of its devices runs)."""
    if device is Device.OPENVINO:
        found = probe_openvino(runtime.module)
        if found.target is not None:
            runtime.targets[Device.OPENVINO] = found.target
        return found.reason
    return probe_libraries(runtime, device)


def probe_libraries(runtime: OrtRuntime, device: Device) -> str | None:
    """Load CUDA's provider library the way ONNX Runtime will, to learn whether CUDA can really start.

    Only on Linux: Windows resolves the provider's DLLs through PATH, which ctypes does not search, so a probe
    there would reject working setups; the session factory's fallback still catches a failing CUDA there.
    """
    if device is not Device.CUDA or runtime.system != "Linux":
        return None
    capi = Path(getattr(runtime.module, "__file__", "") or ".").parent / "capi"
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return "no NVIDIA driver was found"
    for name in ("libonnxruntime_providers_shared.so", "libonnxruntime_providers_cuda.so"):
        library = capi / name
        if not library.is_file():
            return f"{name} is missing from the ONNX Runtime package"
        try:
            ctypes.CDLL(os.fspath(library))
        except OSError as error:
            return f"a CUDA library did not load: {str(error).split(':')[0]}"
    return None


def default_intra_op_threads(cpu_count: int | None = None) -> int:
    """Threads per session that leave Blender's UI and viewport a quarter of the cores (at least two)."""
    count = cpu_count if cpu_count is not None else (os.cpu_count() or 2)
    return max(1, count - max(2, count // 4))


def intra_op_threads(blender_attached: bool) -> int:
    """Threads by who is there: Blender's share of the cores left free while a Blender client is attached, every
    physical core when only headless clients (the CLI) are."""
    return default_intra_op_threads() if blender_attached else physical_cores()


@functools.cache
def physical_cores() -> int:
    """Physical cores (ONNX Runtime's own default for intra-op threads): Linux topology, macOS sysctl, else
    the logical count (Windows: hyper-threads then count as cores)."""
    topology = Path("/sys/devices/system/cpu")
    cores = {
        (package.read_text().strip(), core.read_text().strip())
        for package, core in (
            (cpu / "topology" / "physical_package_id", cpu / "topology" / "core_id")
            for cpu in topology.glob("cpu[0-9]*")
        )
        if package.is_file() and core.is_file()
    }
    if cores:
        return len(cores)
    if sys.platform == "darwin":
        try:
            return int(subprocess.run(["sysctl", "-n", "hw.physicalcpu"], capture_output=True, text=True).stdout)
        except (OSError, ValueError):
            pass
    return os.cpu_count() or 1
