"""ModelManager on real ONNX Runtime CPU sessions of the kit's tiny models, plus fake-provider fallbacks."""

from __future__ import annotations

import gc
import sys
import threading
import time
import weakref

import numpy as np
import pytest

from imageforge.contract import Device, ImageForgeError, ModelUnavailableError
from imageforge.server.inference import ModelManager
from imageforge.server.inference.devices import detect_runtime
from imageforge.server.inference.runner import SHRINK_ENTRY, run_options
from tests.kit.onnx_models import ben2_reference, upscaler_reference

from .fake_onnxruntime import CPU, DML, RuntimeException

IMAGE = np.linspace(0, 1, 3 * 8 * 8, dtype=np.float32).reshape(1, 3, 8, 8)


@pytest.fixture
def manager(storage_root):
    models = ModelManager(storage_root, threads=1)
    yield models
    models.close()


def session_ref(handle) -> weakref.ref:
    return weakref.ref(handle.session)


def test_second_acquire_reuses_the_session_without_loading(manager, upscaler):
    started = time.perf_counter()
    first = manager.acquire(upscaler, Device.CPU)
    load = time.perf_counter() - started
    started = time.perf_counter()
    second = manager.acquire(upscaler, Device.CPU)
    reuse = time.perf_counter() - started
    assert second.session is first.session
    (loaded,) = manager.snapshot()["loaded"]
    assert loaded["load_seconds"] <= load
    print(f"load {load * 1e3:.2f} ms, reuse {reuse * 1e3:.3f} ms")
    outputs = second.run({"input": IMAGE}, last_run=True)
    np.testing.assert_array_equal(outputs["output"], upscaler_reference(IMAGE))


def test_another_model_of_the_family_releases_the_old_session(manager, upscaler, upscaler_x2, ben2):
    background = manager.acquire(ben2, Device.CPU)
    old = session_ref(manager.acquire(upscaler, Device.CPU))
    replacement = manager.acquire(upscaler_x2, Device.CPU)
    gc.collect()
    assert old() is None
    np.testing.assert_array_equal(
        replacement.run({"input": IMAGE}, last_run=False)["output"], upscaler_reference(IMAGE, scale=2)
    )
    loaded = {item["family"]: item["model"] for item in manager.snapshot()["loaded"]}
    assert loaded == {"background": "KIT_BEN2", "upscale": "KIT_UPSCALER_X2"}  # other families stay
    pixels = np.random.default_rng(1).random((1, 3, 32, 32), dtype=np.float32)
    result = background.run({"input": pixels}, last_run=True)["output"]
    np.testing.assert_allclose(result.astype(np.float32), ben2_reference(pixels), atol=2e-3)


def test_changed_model_file_reloads(manager, upscaler, storage_root):
    first = session_ref(manager.acquire(upscaler, Device.CPU))
    path = storage_root / "models" / upscaler.directory / upscaler.files[0].path
    path.touch()  # a re-download: new mtime
    manager.acquire(upscaler, Device.CPU)
    gc.collect()
    assert first() is None


def test_clear_unloads_everything_and_the_next_job_reloads(manager, upscaler, ben2):
    refs = [session_ref(manager.acquire(upscaler, Device.CPU)), session_ref(manager.acquire(ben2, Device.CPU))]
    manager.clear()
    gc.collect()
    assert [ref() for ref in refs] == [None, None]
    assert manager.snapshot()["loaded"] == []
    handle = manager.acquire(upscaler, Device.CPU)
    assert handle.run({"input": IMAGE}, last_run=True)["output"].shape == (1, 3, 32, 32)


def test_close_refuses_new_work(manager, upscaler):
    manager.acquire(upscaler)
    manager.close()
    assert manager.snapshot()["loaded"] == []
    with pytest.raises(ImageForgeError, match="shutting down"):
        manager.acquire(upscaler)


def test_cpu_arena_shrink_is_accepted_by_this_onnx_runtime(manager, upscaler):
    handle = manager.acquire(upscaler, Device.CPU)
    created = handle._loaded.current()
    options = run_options(manager.runtime, created, last_run=True)
    assert options.get_run_config_entry(SHRINK_ENTRY) == "cpu:0"
    assert run_options(manager.runtime, created, last_run=False) is None
    for index in range(3):
        outputs = handle.run({"input": IMAGE}, last_run=index == 2)
    np.testing.assert_array_equal(outputs["output"], upscaler_reference(IMAGE))
    with pytest.raises(Exception, match="Did not find an arena based allocator"):  # why only owned arenas
        gpu = manager.runtime.module.RunOptions()
        gpu.add_run_config_entry(SHRINK_ENTRY, "gpu:0")
        handle.session.run(None, {"input": IMAGE}, gpu)


def test_snapshot_reports_what_really_runs_and_the_device_list(manager, upscaler):
    manager.acquire(upscaler, "auto")
    snapshot = manager.snapshot()
    runtime = manager.runtime
    assert snapshot["devices"] == [device.value for device in runtime.devices]
    assert snapshot["onnxruntime"] == {
        "version": runtime.version,
        "variant": "onnxruntime-gpu",
        "providers": list(runtime.providers),
    }
    (loaded,) = snapshot["loaded"]
    assert {key: loaded[key] for key in ("family", "model", "device", "provider", "providers", "fallback")} == {
        "family": "upscale",
        "model": "KIT_UPSCALER",
        "device": runtime.devices[0].value,
        "provider": "CPUExecutionProvider",
        "providers": ["CPUExecutionProvider"],
        "fallback": None,
    }
    assert snapshot["threads"] == 1 and snapshot["detecting"] is False


def test_explicit_cuda_without_its_libraries_runs_on_cpu_and_says_so_each_job(manager, upscaler):
    if Device.CUDA in manager.runtime.devices:
        pytest.skip("CUDA really works on this machine")
    warnings: list[str] = []
    for _ in range(2):
        handle = manager.acquire(upscaler, "cuda", warn=warnings.append)
        assert (handle.device, handle.provider, handle.requested) == (Device.CPU, CPU, Device.CUDA)
    assert len(warnings) == 2
    assert warnings[0].startswith("NVIDIA CUDA is not available on this computer (")
    assert warnings[0].endswith("); running on CPU.")


def test_missing_model_file_is_model_unavailable(manager, upscaler, storage_root):
    (storage_root / "models" / upscaler.directory / upscaler.files[0].path).unlink()
    message = "^Kit Upscaler is not downloaded; download it in the preferences.$"
    with pytest.raises(ModelUnavailableError, match=message):
        manager.acquire(upscaler)


def test_snapshot_never_waits_for_detection(storage_root):
    def slow_detect():
        time.sleep(0.5)
        return detect_runtime()

    models = ModelManager(storage_root, detect=slow_detect)
    models.start_detection()
    started = time.perf_counter()
    snapshot = models.snapshot()
    assert time.perf_counter() - started < 0.1
    assert (snapshot["detecting"], snapshot["devices"], snapshot["onnxruntime"]) == (True, [], None)
    assert models.runtime.version  # acquire-side access waits for it
    assert models.snapshot()["devices"]


def test_broken_onnx_runtime_is_reported_when_a_model_is_needed(storage_root, upscaler):
    def broken():
        raise ImportError("libonnxruntime.so.1: cannot open shared object file")

    models = ModelManager(storage_root, detect=broken)
    with pytest.raises(ModelUnavailableError, match="ONNX Runtime could not be loaded"):
        models.acquire(upscaler)
    assert models.snapshot()["onnxruntime"] is None


def test_runtime_failure_keeps_the_model_on_cpu_across_reloads_until_restart(storage_root, upscaler, fake_runtime):
    runtime = fake_runtime("Windows", DML)
    runtime.module.fail_run[DML] = [RuntimeException("887A0005 device removed")]
    models = ModelManager(storage_root, detect=lambda: runtime, threads=2)
    warnings: list[str] = []
    handle = models.acquire(upscaler, "directml", warn=warnings.append)
    assert handle.device is Device.DIRECTML and warnings == []
    handle.run({"input": IMAGE}, last_run=True)
    assert handle.device is Device.CPU and len(warnings) == 1
    models.clear()
    again = models.acquire(upscaler, "directml", warn=warnings.append)
    assert runtime.module.creations[-1].providers == [CPU]  # straight to CPU, no second DirectML attempt
    assert again.device is Device.CPU
    assert warnings[1] == warnings[0]  # the next job says so too
    assert models.snapshot()["cpu_only"] == ["KIT_UPSCALER"]


def test_device_change_in_a_family_releases_before_loading(storage_root, upscaler, fake_runtime):
    runtime = fake_runtime("Windows", DML)
    models = ModelManager(storage_root, detect=lambda: runtime, threads=2)
    models.acquire(upscaler, "cpu")
    models.acquire(upscaler, "cpu")
    handle = models.acquire(upscaler, "directml")
    assert [creation.providers for creation in runtime.module.creations] == [[CPU], [DML, CPU]]
    assert runtime.module.creations[-1].alive_before == 0
    assert runtime.module.creations[-1].options["intra_op_num_threads"] == 2
    assert handle.provider == DML


def test_threads_override_per_acquire_reloads_with_it(storage_root, upscaler, fake_runtime):
    runtime = fake_runtime()
    models = ModelManager(storage_root, detect=lambda: runtime, threads=2)
    models.acquire(upscaler)
    models.acquire(upscaler, threads=5)
    assert [creation.options["intra_op_num_threads"] for creation in runtime.module.creations] == [2, 5]


def test_snapshot_never_trips_over_cpu_pins_added_by_a_running_job(storage_root, upscaler, fake_runtime):
    # /health calls snapshot() on its own thread while a job's accelerator failure pins a model to the CPU.
    # Each acquire with another thread count is a new session key, so every failed run adds one pin.
    runtime = fake_runtime("Windows", DML)
    models = ModelManager(storage_root, detect=lambda: runtime, threads=2)
    failures: list[BaseException] = []
    done = threading.Event()

    def health() -> None:
        while not done.is_set():
            try:
                models.snapshot()
            except Exception as error:  # "dictionary changed size during iteration"
                failures.append(error)
                return

    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: force the race
    poller = threading.Thread(target=health)
    poller.start()
    try:
        for threads in range(1, 801):
            runtime.module.fail_run[DML] = [RuntimeException("887A0005 device removed")]
            models.acquire(upscaler, "directml", threads=threads).run({"input": IMAGE}, last_run=True)
            if failures:
                break
    finally:
        done.set()
        poller.join()
        sys.setswitchinterval(previous)
    assert failures == []
    assert models.snapshot()["cpu_only"] == ["KIT_UPSCALER"]
