"""Device ids → what the installed ONNX Runtime really offers here, and explicit-device fallback."""

from __future__ import annotations

import onnxruntime
import pytest

from imageforge.contract import Device
from imageforge.server.inference.devices import (
    default_intra_op_threads,
    detect_runtime,
    package_variant,
    probe_libraries,
    resolve_device,
)

from .fake_onnxruntime import COREML, CUDA, DML


@pytest.mark.parametrize(
    ("system", "machine", "providers", "expected"),
    [
        ("Darwin", "arm64", (COREML,), (Device.CPU, Device.COREML)),  # CPU first and default on macOS
        ("Darwin", "x86_64", (COREML,), (Device.CPU,)),  # Intel Macs: no CoreML offer
        ("Windows", "AMD64", (DML,), (Device.DIRECTML, Device.CPU)),
        ("Windows", "AMD64", ("TensorrtExecutionProvider", CUDA), (Device.CUDA, Device.CPU)),
        ("Linux", "x86_64", ("TensorrtExecutionProvider", CUDA), (Device.CUDA, Device.CPU)),
        ("Linux", "x86_64", ("AzureExecutionProvider",), (Device.CPU,)),  # the plain CPU package
        ("Linux", "aarch64", (), (Device.CPU,)),
    ],
)
def test_devices_follow_platform_and_providers(fake_runtime, system, machine, providers, expected):
    runtime = fake_runtime(system, *providers, machine=machine)
    assert runtime.devices == expected
    assert "mps" not in {device.value for device in runtime.devices}


def test_cuda_listed_but_not_loadable_is_not_offered(fake_runtime):
    runtime = fake_runtime("Linux", CUDA, probe=lambda rt, device: "a CUDA library did not load: libcublasLt.so.12")
    assert runtime.devices == (Device.CPU,)
    assert runtime.unavailable == {Device.CUDA: "a CUDA library did not load: libcublasLt.so.12"}


def test_auto_is_the_platform_default(fake_runtime):
    assert resolve_device("auto", fake_runtime("Windows", DML)).device is Device.DIRECTML
    assert resolve_device(Device.AUTO, fake_runtime("Darwin", COREML, machine="arm64")).device is Device.CPU
    choice = resolve_device(Device.AUTO, fake_runtime("Linux", CUDA))
    assert (choice.device, choice.warning) == (Device.CUDA, None)


def test_explicit_unavailable_device_runs_on_cpu_with_a_warning(fake_runtime):
    choice = resolve_device("coreml", fake_runtime("Windows", DML))
    assert choice.device is Device.CPU
    assert choice.warning == (
        "Apple CoreML is not available on this computer (onnxruntime-gpu 1.23.2 does not provide it); running on CPU."
    )
    unloadable = fake_runtime("Linux", CUDA, probe=lambda rt, device: "no NVIDIA driver was found")
    assert resolve_device("cuda", unloadable).warning == (
        "NVIDIA CUDA is not available on this computer (no NVIDIA driver was found); running on CPU."
    )
    assert resolve_device("directml", fake_runtime("Windows", DML)).warning is None


def test_real_runtime_reports_version_variant_and_what_really_loads():
    runtime = detect_runtime()
    assert runtime.version == onnxruntime.__version__
    assert runtime.variant == package_variant() == "onnxruntime-gpu"
    assert runtime.providers == tuple(onnxruntime.get_available_providers())
    assert runtime.devices[-1] is Device.CPU
    if probe_libraries(runtime, Device.CUDA) is not None:  # this machine: CUDA listed, its libraries absent
        assert "CUDAExecutionProvider" in runtime.providers
        assert runtime.devices == (Device.CPU,)
        assert Device.CUDA in runtime.unavailable


def test_probe_only_loads_libraries_on_linux(fake_runtime):
    runtime = fake_runtime("Windows", CUDA)
    assert probe_libraries(runtime, Device.CUDA) is None
    assert probe_libraries(fake_runtime("Linux", CUDA), Device.DIRECTML) is None


@pytest.mark.parametrize(("cores", "threads"), [(1, 1), (2, 1), (4, 2), (8, 6), (16, 12), (32, 24)])
def test_default_threads_leave_cores_for_blender(cores, threads):
    assert default_intra_op_threads(cores) == threads
