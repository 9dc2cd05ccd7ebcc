"""The session factory: exact providers, provider options and session options per device, and every fallback."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from imageforge.contract import Device, ModelUnavailableError, ResourceExhaustedError
from imageforge.server.inference.coreml_cache import CoreMLCache
from imageforge.server.inference.session_factory import SessionRequest, create_session

from .fake_onnxruntime import COREML, CPU, CUDA, DML, OPENVINO, ExecutionMode, Fail, RuntimeException


@pytest.fixture
def graph(tmp_path: Path) -> Path:
    path = tmp_path / "model.onnx"
    path.write_bytes(b"graph bytes")
    return path


def request(graph: Path, device: Device, **changes) -> SessionRequest:
    return SessionRequest("KIT_MODEL", (graph,), device, threads=3, **changes)


def test_cuda_gets_a_shrinkable_arena_and_heuristic_search(fake_runtime, graph):
    runtime = fake_runtime("Linux", CUDA)
    created = create_session(runtime, request(graph, Device.CUDA, provider_options={"gpu_mem_limit": 2**30}))
    (creation,) = runtime.module.creations
    assert creation.providers == [CUDA, CPU]
    assert creation.provider_options == [
        {
            "device_id": "0",
            "arena_extend_strategy": "kSameAsRequested",
            "cudnn_conv_algo_search": "HEURISTIC",
            "gpu_mem_limit": "1073741824",
        },
        {},
    ]
    assert creation.kwargs == {"enable_fallback": 0}  # ORT's own silent retry would hide the reason
    assert creation.options["intra_op_num_threads"] == 3
    assert creation.options["free_dimensions"] == {}
    assert (created.device, created.provider, created.shrink, created.fallback) == (Device.CUDA, CUDA, "gpu:0", None)


def test_directml_disables_memory_patterns_runs_sequentially_and_pins_batch(fake_runtime, graph):
    runtime = fake_runtime("Windows", DML)
    created = create_session(runtime, request(graph, Device.DIRECTML, free_dimensions={"num_tokens": 1800}))
    (creation,) = runtime.module.creations
    assert creation.providers == [DML, CPU]
    assert creation.provider_options == [{"device_id": "0"}, {}]
    assert creation.options["enable_mem_pattern"] is False
    assert creation.options["execution_mode"] is ExecutionMode.ORT_SEQUENTIAL
    assert creation.options["free_dimensions"] == {"batch": 1, "batch_size": 1, "num_tokens": 1800}
    assert (created.device, created.shrink) == (Device.DIRECTML, None)


def test_openvino_gets_its_probed_device_precision_threads_and_cache(fake_runtime, graph, storage_root):
    runtime = fake_runtime("Linux", OPENVINO)
    cache = storage_root / "cache" / "openvino"
    created = create_session(runtime, request(graph, Device.OPENVINO), openvino_cache=cache)
    (creation,) = runtime.module.creations
    assert creation.providers == [OPENVINO, CPU]
    assert creation.provider_options == [
        {"device_type": "CPU", "precision": "FP32", "num_of_threads": "3", "cache_dir": str(cache)},
        {},
    ]
    assert cache.is_dir() and creation.kwargs == {"enable_fallback": 0}
    assert (created.device, created.provider, created.shrink) == (Device.OPENVINO, OPENVINO, None)
    assert created.fallback is None
    runtime.targets[Device.OPENVINO] = "GPU"  # an Intel GPU the probe created a session on
    create_session(runtime, request(graph, Device.OPENVINO))
    assert runtime.module.creations[-1].provider_options == [{"device_type": "GPU", "precision": "ACCURACY"}, {}]


def test_openvino_that_onnx_runtime_drops_becomes_cpu_with_the_reason(fake_runtime, graph):
    runtime = fake_runtime("Linux", OPENVINO)
    runtime.module.drop.add(OPENVINO)  # what the real one does when its device is missing: a log line, CPU
    created = create_session(runtime, request(graph, Device.OPENVINO))
    assert [creation.providers for creation in runtime.module.creations] == [[OPENVINO, CPU], [CPU]]
    assert (created.device, created.provider) == (Device.CPU, CPU)
    assert created.fallback == (
        "Intel OpenVINO could not load KIT_MODEL (ONNX Runtime did not start OpenVINOExecutionProvider); "
        "running on CPU."
    )


def test_coreml_uses_default_config_plus_model_options_cache_and_cpu_after(fake_runtime, graph, storage_root):
    runtime = fake_runtime("Darwin", COREML, machine="arm64")
    cache = CoreMLCache(storage_root)
    options = {"RequireStaticInputShapes": "1"}
    created = create_session(runtime, request(graph, Device.COREML, provider_options=options), coreml_cache=cache)
    (creation,) = runtime.module.creations
    assert creation.providers == [COREML, CPU]
    coreml_options = creation.provider_options[0]
    assert set(coreml_options) == {"RequireStaticInputShapes", "ModelCacheDirectory"}  # no forced ModelFormat
    folder = Path(coreml_options["ModelCacheDirectory"])
    assert folder.parent == storage_root / "cache" / "coreml" and folder.is_dir()
    assert creation.options["execution_mode"] is ExecutionMode.ORT_SEQUENTIAL
    assert creation.options["enable_mem_pattern"] is True
    assert (created.device, created.shrink, created.fallback) == (Device.COREML, None, None)


def test_cpu_session_lists_only_cpu_and_shrinks_the_cpu_arena(fake_runtime, graph):
    runtime = fake_runtime("Linux", CUDA)
    created = create_session(runtime, request(graph, Device.CPU))
    (creation,) = runtime.module.creations
    assert (creation.providers, creation.provider_options) == ([CPU], [{}])
    assert (created.device, created.shrink) == (Device.CPU, "cpu:0")


def test_threads_default_leaves_cores_for_blender(fake_runtime, graph, monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    runtime = fake_runtime()
    create_session(runtime, SessionRequest("KIT_MODEL", (graph,), Device.CPU))
    assert runtime.module.creations[0].options["intra_op_num_threads"] == 6


def test_accelerator_creation_failure_falls_back_to_cpu_with_reason_logged(fake_runtime, graph, caplog):
    runtime = fake_runtime("Linux", CUDA)
    runtime.module.fail_create[CUDA] = [RuntimeException("[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : CUDA failure 2")]
    with caplog.at_level(logging.WARNING):
        created = create_session(runtime, request(graph, Device.CUDA))
    first, second = runtime.module.creations
    assert (first.providers, first.succeeded) == ([CUDA, CPU], False)
    assert (second.providers, second.provider_options, second.succeeded) == ([CPU], [{}], True)
    assert (created.device, created.provider, created.shrink) == (Device.CPU, CPU, "cpu:0")
    assert created.fallback == "NVIDIA CUDA could not load KIT_MODEL (CUDA failure 2); running on CPU."
    assert "CUDA failure 2" in caplog.text


def test_silently_dropped_accelerator_is_reported_not_trusted(fake_runtime, graph):
    runtime = fake_runtime("Windows", DML)
    runtime.module.drop.add(DML)
    created = create_session(runtime, request(graph, Device.DIRECTML))
    first, second = runtime.module.creations
    assert first.providers == [DML, CPU] and second.providers == [CPU]
    assert second.alive_before == 0  # the dropped session was released before the CPU one loaded
    assert second.options["enable_mem_pattern"] is True  # CPU gets CPU settings, not DirectML's
    assert created.device is Device.CPU
    assert "did not start DmlExecutionProvider" in created.fallback


def test_coreml_creation_failure_clears_the_cache_and_retries_once(fake_runtime, graph, storage_root):
    runtime = fake_runtime("Darwin", COREML, machine="arm64")
    runtime.module.fail_create[COREML] = [Fail("Error compiling model")]
    cache = CoreMLCache(storage_root)
    folder = cache.folder_for("KIT_MODEL", (graph,), {}, {}, runtime.version)
    (folder / "stale.mlmodelc").write_text("broken compilation")
    created = create_session(runtime, request(graph, Device.COREML), coreml_cache=cache)
    first, second = runtime.module.creations
    assert first.providers == second.providers == [COREML, CPU]
    assert first.provider_options[0]["ModelCacheDirectory"] == str(folder)
    assert not (folder / "stale.mlmodelc").exists()
    assert created.device is Device.COREML


def test_coreml_failing_twice_with_a_cache_ends_on_cpu(fake_runtime, graph, storage_root):
    runtime = fake_runtime("Darwin", COREML, machine="arm64")
    runtime.module.fail_create[COREML] = [Fail("Error compiling model"), Fail("Error compiling model")]
    created = create_session(runtime, request(graph, Device.COREML), coreml_cache=CoreMLCache(storage_root))
    assert [creation.providers for creation in runtime.module.creations] == [[COREML, CPU], [COREML, CPU], [CPU]]
    assert created.device is Device.CPU
    assert created.fallback == "Apple CoreML could not load KIT_MODEL (Error compiling model); running on CPU."


def test_coreml_failure_without_a_cache_goes_straight_to_cpu(fake_runtime, graph):
    runtime = fake_runtime("Darwin", COREML, machine="arm64")
    runtime.module.fail_create[COREML] = [Fail("Error compiling model")]
    create_session(runtime, request(graph, Device.COREML))
    assert [creation.providers for creation in runtime.module.creations] == [[COREML, CPU], [CPU]]


def test_cpu_creation_failures_become_clear_errors(fake_runtime, graph, tmp_path):
    runtime = fake_runtime()
    runtime.module.fail_create[CPU] = [Fail("bad_alloc")]
    with pytest.raises(ResourceExhaustedError, match="lower Maximum AI Input Size"):
        create_session(runtime, request(graph, Device.CPU))
    runtime.module.fail_create[CPU] = [Fail("NO_SUCHFILE")]
    with pytest.raises(ModelUnavailableError, match="missing; download it again"):
        create_session(runtime, request(tmp_path / "absent.onnx", Device.CPU))
    runtime.module.fail_create[CPU] = [Fail("[ONNXRuntimeError] : 7 : INVALID_PROTOBUF : Protobuf parsing failed.")]
    with pytest.raises(ModelUnavailableError, match=r"^KIT_MODEL could not be loaded \(Protobuf parsing failed\)\.$"):
        create_session(runtime, request(graph, Device.CPU))
