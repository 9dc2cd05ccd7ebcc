"""The convert-model job's steps on their own: finding uv, a failed environment build, the exporter's failures
told in one sentence, a cancelled child process group, the local overlay, and a converted file gone missing.
(The whole conversion runs for real in tests/cli/test_convert_model.py.)"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from imageforge.contract import ModelUnavailableError, ResourceExhaustedError
from imageforge.contract.catalog import load_catalog
from imageforge.contract.conversions import WHEELHOUSE_VARIABLE, load_conversions
from imageforge.server.conversion.environment import (
    UV_VARIABLE,
    converters_root,
    ensure_environment,
    find_uv,
    uv_step,
)
from imageforge.server.conversion.exporter import export_model
from imageforge.server.conversion.local_catalog import register
from imageforge.server.conversion.process import ProcessCancelled, run_process
from imageforge.server.downloads.install import ensure_models
from imageforge.server.downloads.sources import DownloadSources


def executable(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_uv_is_looked_for_in_the_storage_root_then_the_variable_then_path(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv(UV_VARIABLE, raising=False)
    with pytest.raises(ModelUnavailableError, match=r"^Converting needs uv, which was found neither in .*tools"):
        find_uv(tmp_path)
    named = executable(tmp_path / "my-uv", "#!/bin/sh\n")
    monkeypatch.setenv(UV_VARIABLE, str(named))
    assert find_uv(tmp_path) == str(named)
    (tmp_path / "tools").mkdir()
    seeded = executable(tmp_path / "tools" / "uv", "#!/bin/sh\n")
    assert find_uv(tmp_path) == str(seeded)


def test_a_failed_environment_build_says_which_step_and_leaves_nothing(tmp_path, monkeypatch):
    empty = tmp_path / "wheels"
    empty.mkdir()
    monkeypatch.setenv(WHEELHOUSE_VARIABLE, str(empty))  # no wheels: the torch install must fail, offline
    environment = load_conversions().environment
    messages: list[str] = []
    with pytest.raises(ModelUnavailableError, match=r"^Could not install torch==2\.13\.0 \(CPU\) for the converter: "):
        ensure_environment(tmp_path, environment, uv_step(tmp_path / "uv.log", lambda: False), messages.append)
    assert messages[-1].startswith("Installing the converter (1/2: install torch==2.13.0 (CPU), from ")
    assert not (converters_root(tmp_path) / environment.digest).exists()


def test_a_wheelhouse_that_is_not_a_folder_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv(WHEELHOUSE_VARIABLE, str(tmp_path / "nowhere"))
    with pytest.raises(ModelUnavailableError, match=f"{WHEELHOUSE_VARIABLE} names .*nowhere, which is not a folder"):
        ensure_environment(tmp_path, load_conversions().environment, lambda *_: None, lambda _: None)


def fake_exporter(tmp_path: Path, stderr: str, status: int = 1) -> Path:
    return executable(
        tmp_path / "python",
        f'#!/bin/sh\necho \'{{"progress": 0.05, "message": "Exporting"}}\'\necho "{stderr}" >&2\nexit {status}\n',
    )


@pytest.mark.parametrize(
    ("stderr", "error", "message"),
    [
        (
            "SystemExit: The ONNX export disagrees with torch by 0.03 (limit 0.001).",
            ModelUnavailableError,
            "The converted Depth Anything 3 Small disagrees with torch by 0.03 (limit 0.001); nothing was kept.",
        ),
        (
            "OSError: [Errno 28] No space left on device",
            ResourceExhaustedError,
            "The disk is full: could not export Depth Anything 3 Small; free some space.",
        ),
        (
            "RuntimeError: something inside torch",
            ModelUnavailableError,
            "Exporting Depth Anything 3 Small failed: RuntimeError: something inside torch "
            "(the job log has the details).",
        ),
    ],
)
def test_exporter_failures_are_one_sentence_and_logged(tmp_path, stderr, error, message):
    logged: list[str] = []
    progress: list[tuple[float, str]] = []
    with pytest.raises(error) as raised:
        export_model(
            fake_exporter(tmp_path, stderr),
            load_conversions().get("DA3_SMALL"),
            tmp_path / "weights.safetensors",
            tmp_path / "out.onnx",
            log=tmp_path / "exporter.log",
            cancelled=lambda: False,
            report=lambda fraction, text: progress.append((fraction, text)),
            job_log=logged.append,
        )
    assert str(raised.value) == message
    assert logged == [f"exporter: {stderr}"]
    assert progress[0] == (0.05, "Exporting")


def test_cancel_ends_the_child_and_its_children(tmp_path):
    pids = tmp_path / "pids"
    script = executable(tmp_path / "tree.sh", f"#!/bin/sh\nsleep 60 &\necho $! > {pids}\necho started\nwait\n")
    started: list[str] = []
    deadline = time.monotonic() + 30
    with pytest.raises(ProcessCancelled):
        run_process(
            [str(script)],
            stderr_path=tmp_path / "err.log",
            cancelled=lambda: bool(started) or time.monotonic() > deadline,
            on_line=started.append,
        )
    assert started == ["started"]
    grandchild = int(pids.read_text())
    for _ in range(100):
        if not _alive(grandchild):
            break
        time.sleep(0.05)
    assert not _alive(grandchild)


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "zombie" not in status


def test_the_overlay_keeps_one_default_per_family(tmp_path):
    conversions = load_conversions()
    register(tmp_path, conversions.get("DA3_SMALL").catalog_record(1, "a" * 64))
    register(tmp_path, conversions.get("DA3_BASE").catalog_record(2, "b" * 64))
    catalog = load_catalog(storage_root=tmp_path)
    assert catalog.get("DA3_SMALL_CAMERAS").default is False
    assert catalog.get("DA3_BASE_CAMERAS").default is True
    assert catalog.default_for(catalog.get("DA3_BASE_CAMERAS").family).key == "DA3_BASE_CAMERAS"
    register(tmp_path, conversions.get("DA3_SMALL").catalog_record(3, "c" * 64))  # converted again: default again
    catalog = load_catalog(storage_root=tmp_path)
    assert [(entry.key, entry.default) for entry in catalog.models if entry.key.endswith("_CAMERAS")] == [
        ("DA3_BASE_CAMERAS", False),
        ("DA3_SMALL_CAMERAS", True),
    ]
    assert catalog.get("DA3_SMALL_CAMERAS").files[0].size == 3


def test_a_converted_file_gone_missing_asks_for_a_new_conversion_not_a_download(tmp_path):
    register(tmp_path, load_conversions().get("DA3_SMALL").catalog_record(10, "d" * 64))
    entry = load_catalog(storage_root=tmp_path).get("DA3_SMALL_CAMERAS")
    with pytest.raises(ModelUnavailableError) as raised:
        ensure_models(tmp_path, [entry], sources=DownloadSources(), report=lambda *_: None, cancelled=lambda: False)
    assert str(raised.value) == (
        "Depth Anything 3 Small (cameras, converted) was converted on this machine and its file is missing; "
        "convert it again with 'imageforge models convert DA3_SMALL' or the Models panel's "
        "Prepare DA3 camera model… button."
    )


if os.name != "posix":  # pragma: no cover - the suite runs on Linux
    pytest.skip("POSIX shell scripts", allow_module_level=True)
