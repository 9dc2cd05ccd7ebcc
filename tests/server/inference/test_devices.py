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

from .fake_onnxruntime import COREML, CUDA, DML, OPENVINO


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
        ("Linux", "x86_64", (OPENVINO,), (Device.OPENVINO, Device.CPU)),  # onnxruntime-openvino
        ("Windows", "AMD64", (OPENVINO,), (Device.OPENVINO, Device.CPU)),
        ("Darwin", "arm64", (OPENVINO, COREML), (Device.CPU, Device.COREML)),  # no OpenVINO build for macOS
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


def test_openvino_listed_but_unable_to_create_a_session_is_not_offered(fake_runtime):
    reason = "OpenVINO sees none of its GPU/CPU devices here (it lists none)"
    runtime = fake_runtime("Linux", OPENVINO, probe=lambda rt, device: reason if device is Device.OPENVINO else None)
    assert runtime.devices == (Device.CPU,)
    assert resolve_device("openvino", runtime).warning == (
        f"Intel OpenVINO is not available on this computer ({reason}); running on CPU."
    )


def test_auto_takes_openvino_only_for_models_measured_faster_there(fake_runtime):
    runtime = fake_runtime("Linux", OPENVINO)
    assert resolve_device("auto", runtime).device is Device.CPU  # the upscalers: slower on OpenVINO
    assert resolve_device("auto", runtime, openvino_auto=True).device is Device.OPENVINO
    explicit = resolve_device("openvino", runtime)
    assert (explicit.device, explicit.warning) == (Device.OPENVINO, None)


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
