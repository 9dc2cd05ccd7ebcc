"""The single inference entry point: arena shrink on the last run only, and run-time fallback to CPU."""

from __future__ import annotations

import numpy as np
import pytest

from imageforge.contract import Device, ResourceExhaustedError
from imageforge.server.inference.failures import describe, is_caller_error, is_memory_exhaustion
from imageforge.server.inference.runner import SHRINK_ENTRY, LoadedSession, run
from imageforge.server.inference.session_factory import SessionRequest, create_session

from .fake_onnxruntime import COREML, CPU, CUDA, DML, OPENVINO, Fail, InvalidArgument, RuntimeException

FEEDS = {"input": np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)}


def load(runtime, tmp_path, device: Device) -> LoadedSession:
    graph = tmp_path / "model.onnx"
    graph.write_bytes(b"graph")
    request = SessionRequest("KIT_MODEL", (graph,), device, threads=1, label="Kit Model")
    return LoadedSession(runtime, request, create_session(runtime, request))


@pytest.mark.parametrize(
    ("system", "provider", "device", "shrink"),
    [
        ("Linux", CUDA, Device.CUDA, "gpu:0"),
        ("Linux", CUDA, Device.CPU, "cpu:0"),
        ("Windows", DML, Device.DIRECTML, None),
        ("Darwin", COREML, Device.COREML, None),
        ("Linux", OPENVINO, Device.OPENVINO, None),
    ],
)
def test_arena_shrinks_only_on_the_last_run_and_only_an_owned_arena(
    fake_runtime, tmp_path, system, provider, device, shrink
):
    runtime = fake_runtime(system, provider, machine="arm64")
    loaded = load(runtime, tmp_path, device)
    for index in range(3):
        outputs = run(loaded, FEEDS, last_run=index == 2)
        np.testing.assert_array_equal(outputs["output"], FEEDS["input"] * 2)
    last = {SHRINK_ENTRY: shrink} if shrink else None
    assert [item.run_options for item in runtime.module.runs] == [None, None, last]
    assert loaded.runs == 3


def test_cuda_that_fell_back_at_creation_never_asks_for_the_gpu_arena(fake_runtime, tmp_path):
    runtime = fake_runtime("Linux", CUDA)
    runtime.module.drop.add(CUDA)
    loaded = load(runtime, tmp_path, Device.CUDA)
    run(loaded, FEEDS, last_run=True)  # the fake, like ORT, rejects shrinking an arena the session lacks
    assert runtime.module.runs[-1].run_options == {SHRINK_ENTRY: "cpu:0"}


@pytest.mark.parametrize(
    ("system", "provider", "device", "error"),
    [
        ("Darwin", COREML, Device.COREML, Fail("Unable to compute the prediction: error code: -1")),
        ("Windows", DML, Device.DIRECTML, RuntimeException("80070057 The parameter is incorrect.")),
        ("Windows", DML, Device.DIRECTML, UnicodeDecodeError("utf-8", b"\xc4\xda\xb4\xe6", 0, 1, "invalid start byte")),
        ("Linux", CUDA, Device.CUDA, RuntimeException("CUDA failure 2: out of memory")),
        ("Linux", OPENVINO, Device.OPENVINO, RuntimeException("[OpenVINO-EP] Exception while inferring: GPU lost")),
    ],
)
def test_runtime_failure_on_an_accelerator_reruns_the_same_inputs_on_cpu_and_stays_there(
    fake_runtime, tmp_path, system, provider, device, error
):
    runtime = fake_runtime(system, provider, machine="arm64")
    runtime.module.fail_run[provider] = [error]
    loaded = load(runtime, tmp_path, device)
    pins, warnings = [], []
    loaded.on_cpu_fallback = pins.append
    outputs = run(loaded, FEEDS, last_run=False, warn=warnings.append)
    np.testing.assert_array_equal(outputs["output"], FEEDS["input"] * 2)
    failed, rerun = runtime.module.runs
    assert (failed.provider, rerun.provider) == (provider, CPU)
    np.testing.assert_array_equal(rerun.feeds["input"], FEEDS["input"])
    assert runtime.module.creations[-1].providers == [CPU]
    assert runtime.module.creations[-1].alive_before == 0  # the accelerator's session was released first
    assert warnings == pins == [loaded.created.fallback]
    assert warnings[0].startswith(f"{device.label} failed while running Kit Model (")
    assert warnings[0].endswith("); running it on CPU until the server restarts.")
    run(loaded, FEEDS, last_run=True, warn=warnings.append)
    assert runtime.module.runs[-1].provider == CPU
    assert runtime.module.runs[-1].run_options == {SHRINK_ENTRY: "cpu:0"}
    assert len(runtime.module.creations) == 2 and len(warnings) == 1


def test_memory_exhaustion_on_cpu_after_fallback_names_what_to_lower(fake_runtime, tmp_path):
    runtime = fake_runtime("Windows", DML)
    runtime.module.fail_run[DML] = [UnicodeDecodeError("utf-8", b"\xc4\xda", 0, 1, "invalid start byte")]
    runtime.module.fail_run[CPU] = [Fail("bad_alloc")]
    loaded = load(runtime, tmp_path, Device.DIRECTML)
    with pytest.raises(ResourceExhaustedError) as raised:
        run(loaded, FEEDS, last_run=True)
    assert str(raised.value) == "GPU or system memory exhausted: lower Maximum AI Input Size."
    assert isinstance(raised.value.__cause__, Fail)
    assert loaded.created.device is Device.CPU


def test_memory_exhaustion_on_cpu_is_not_retried(fake_runtime, tmp_path):
    runtime = fake_runtime()
    runtime.module.fail_run[CPU] = [RuntimeException("Failed to allocate memory for buffer of size 8589934592")]
    loaded = load(runtime, tmp_path, Device.CPU)
    with pytest.raises(ResourceExhaustedError, match="^GPU or system memory exhausted: lower Maximum AI Input Size.$"):
        run(loaded, FEEDS, last_run=False)
    assert len(runtime.module.runs) == 1 and len(runtime.module.creations) == 1


def test_a_wrong_feed_on_an_accelerator_is_the_callers_error_not_a_fallback(fake_runtime, tmp_path):
    runtime = fake_runtime("Linux", CUDA)
    loaded = load(runtime, tmp_path, Device.CUDA)
    with pytest.raises(ValueError, match="missing from input feed"):
        run(loaded, {"image": FEEDS["input"]}, last_run=False)
    runtime.module.fail_run[CUDA] = [InvalidArgument("Got invalid dimensions for input: input")]
    with pytest.raises(InvalidArgument):
        run(loaded, FEEDS, last_run=False)
    assert loaded.created.device is Device.CUDA and len(runtime.module.creations) == 1


def test_unloaded_session_says_so(fake_runtime, tmp_path):
    loaded = load(fake_runtime(), tmp_path, Device.CPU)
    loaded.release()
    with pytest.raises(Exception, match="^Kit Model was unloaded while a job still used it.$"):
        run(loaded, FEEDS, last_run=True)


def test_failure_classification():
    assert is_memory_exhaustion(MemoryError())
    assert is_memory_exhaustion(UnicodeDecodeError("gbk", b"\xff", 0, 1, "x"))
    assert is_memory_exhaustion(RuntimeException("CUBLAS_STATUS_ALLOC_FAILED"))
    assert is_memory_exhaustion(Fail("DXGI_ERROR_DEVICE_REMOVED 887A0005"))
    assert not is_memory_exhaustion(Fail("error code: -1"))
    assert is_caller_error(ValueError("Required inputs"))
    assert not is_caller_error(UnicodeDecodeError("gbk", b"\xff", 0, 1, "x"))
    assert not is_caller_error(InvalidArgument("80070057 The parameter is incorrect"))
    assert describe(Fail("[ONNXRuntimeError] : 1 : FAIL : CoreML failed.\n more lines")) == "CoreML failed"
