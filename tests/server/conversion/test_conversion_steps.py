"""The convert-model job's steps on their own: finding uv, a failed environment build, the exporter's failures
told in one sentence, a cancelled child process group, the local overlay, and a converted file gone missing.
(The whole conversion runs for real in tests/cli/test_convert_model.py.)"""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import time
from pathlib import Path

import pytest

from imageforge.contract import ModelUnavailableError, ResourceExhaustedError
from imageforge.contract.catalog import ModelFile, load_catalog, parse_catalog
from imageforge.contract.conversions import WHEELHOUSE_VARIABLE, load_conversions
from imageforge.server.conversion.environment import (
    UV_VARIABLE,
    converters_root,
    ensure_environment,
    find_uv,
    install_commands,
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
    assert messages[-1].startswith("Installing the converter (1/3: install torch==2.13.0 (CPU), from ")
    assert not (converters_root(tmp_path) / environment.digest).exists()


def test_a_wheelhouse_that_is_not_a_folder_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv(WHEELHOUSE_VARIABLE, str(tmp_path / "nowhere"))
    with pytest.raises(ModelUnavailableError, match=f"{WHEELHOUSE_VARIABLE} names .*nowhere, which is not a folder"):
        ensure_environment(tmp_path, load_conversions().environment, lambda *_: None, lambda _: None)


def test_the_source_packages_are_built_last_without_isolation_and_without_cuda(tmp_path, monkeypatch):
    monkeypatch.delenv(WHEELHOUSE_VARIABLE, raising=False)
    environment = load_conversions().environment
    installs = install_commands("uv", tmp_path / "python", environment)
    assert [what for _, what, _ in installs] == [
        "install torch==2.13.0 (CPU)",
        "install the converter's packages",
        "build the converter's source packages",
    ]
    command, _, variables = installs[-1]
    assert command[-3:] == ["antlr4-python3-runtime==4.9.3", "iopath==0.1.10", "sam2==1.1.0"]
    assert "--no-deps" in command and "--no-build-isolation" in command and "--index-url" not in command
    assert variables == {"SAM2_BUILD_CUDA": "0"}
    assert "setuptools==84.2.1" in installs[1][0]  # the build backend is installed before them
    wheels = tmp_path / "wheels"
    monkeypatch.setenv(WHEELHOUSE_VARIABLE, str(wheels))
    command, _, _ = install_commands("uv", tmp_path / "python", environment)[-1]
    assert command[command.index("--no-index") : command.index("--no-index") + 3] == [
        "--no-index",
        "--find-links",
        str(wheels),
    ]


def test_the_environments_name_changes_with_a_build_variable():
    environment = load_conversions().environment
    changed = dataclasses.replace(environment, build_environment={"SAM2_BUILD_CUDA": "1"})
    assert changed.digest != environment.digest


def reporting_exporter(tmp_path: Path, files: list[str], written: list[str]) -> Path:
    """An exporter that writes `written` into its --output folder and reports `files` there."""
    report = {
        "files": [{"path": name, "bytes": 3, "sha256": "f" * 64} for name in files],
        "check_max_abs": {"encoder": 1e-5, "decoder": 2e-5},
        "check_relative_error": {"encoder": 1e-6, "decoder": 3e-6},
        "options": {"stability_delta": 0.05},
    }
    touch = "".join(f'printf abc > "$out/{name}"\n' for name in written)
    return executable(
        tmp_path / "python",
        '#!/bin/sh\nwhile [ "$1" != "--output" ]; do shift; done\nout="$2"\nmkdir -p "$out"\n'
        f"{touch}echo '{json.dumps(report)}'\n",
    )


def test_an_exporter_of_several_files_reports_each_in_the_results_order(tmp_path):
    conversion = load_conversions().get("SAM2_TINY")
    exported = export_model(
        reporting_exporter(tmp_path, ["decoder.onnx", "encoder.onnx"], ["encoder.onnx", "decoder.onnx"]),
        conversion,
        tmp_path / "weights.pt",
        tmp_path / "out",
        log=tmp_path / "exporter.log",
        cancelled=lambda: False,
        report=lambda *_: None,
        job_log=lambda _: None,
    )
    assert [item.path for item in exported.files] == [
        tmp_path / "out" / "encoder.onnx",
        tmp_path / "out" / "decoder.onnx",
    ]
    assert exported.checks == {
        "check_max_abs": {"encoder": 1e-5, "decoder": 2e-5},
        "check_relative_error": {"encoder": 1e-6, "decoder": 3e-6},
    }
    record = conversion.catalog_record(
        [ModelFile(item.path.name, item.size, item.sha256) for item in exported.files], exported.options
    )
    (entry,) = parse_catalog({"models": [record]}, Path("overlay.json")).models
    assert entry.options["stability_delta"] == 0.05 and entry.options["encoder"] == "encoder.onnx"


def test_an_exporter_that_left_out_a_file_fails_in_one_sentence(tmp_path):
    with pytest.raises(ModelUnavailableError) as raised:
        export_model(
            reporting_exporter(tmp_path, ["encoder.onnx", "decoder.onnx"], ["encoder.onnx"]),
            load_conversions().get("SAM2_TINY"),
            tmp_path / "weights.pt",
            tmp_path / "out",
            log=tmp_path / "exporter.log",
            cancelled=lambda: False,
            report=lambda *_: None,
            job_log=lambda _: None,
        )
    assert str(raised.value) == (
        "The exporter of SAM 2.1 Hiera Tiny reported success but did not write encoder.onnx and decoder.onnx."
    )


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
    register(tmp_path, conversions.get("DA3_SMALL").catalog_record([ModelFile("da3_small_cameras.onnx", 1, "a" * 64)]))
    register(tmp_path, conversions.get("DA3_BASE").catalog_record([ModelFile("da3_base_cameras.onnx", 2, "b" * 64)]))
    catalog = load_catalog(storage_root=tmp_path)
    assert catalog.get("DA3_SMALL_CAMERAS").default is False
    assert catalog.get("DA3_BASE_CAMERAS").default is True
    assert catalog.default_for(catalog.get("DA3_BASE_CAMERAS").family).key == "DA3_BASE_CAMERAS"
    register(
        tmp_path, conversions.get("DA3_SMALL").catalog_record([ModelFile("da3_small_cameras.onnx", 3, "c" * 64)])
    )  # converted again: default again
    catalog = load_catalog(storage_root=tmp_path)
    assert [(entry.key, entry.default) for entry in catalog.models if entry.key.endswith("_CAMERAS")] == [
        ("DA3_BASE_CAMERAS", False),
        ("DA3_SMALL_CAMERAS", True),
    ]
    assert catalog.get("DA3_SMALL_CAMERAS").files[0].size == 3


def test_a_converted_file_gone_missing_asks_for_a_new_conversion_not_a_download(tmp_path):
    register(
        tmp_path,
        load_conversions().get("DA3_SMALL").catalog_record([ModelFile("da3_small_cameras.onnx", 10, "d" * 64)]),
    )
    entry = load_catalog(storage_root=tmp_path).get("DA3_SMALL_CAMERAS")
    with pytest.raises(ModelUnavailableError) as raised:
        ensure_models(tmp_path, [entry], sources=DownloadSources(), report=lambda *_: None, cancelled=lambda: False)
    assert str(raised.value) == (
        "Depth Anything 3 Small (cameras, converted) was converted on this machine and its file is missing; "
        "convert it again with 'imageforge models convert DA3_SMALL' or the Models panel's "
        "Prepare DA3 camera model… button."
    )


def test_a_converted_segment_model_gone_missing_names_its_own_button(tmp_path):
    conversion = load_conversions().get("SAM2_SMALL")
    files = [ModelFile(name, 10, "d" * 64) for name in conversion.result.files]
    register(tmp_path, conversion.catalog_record(files))
    entry = load_catalog(storage_root=tmp_path).get("SAM2_SMALL_ONNX")
    with pytest.raises(ModelUnavailableError) as raised:
        ensure_models(tmp_path, [entry], sources=DownloadSources(), report=lambda *_: None, cancelled=lambda: False)
    assert str(raised.value) == (
        "SAM 2.1 Hiera Small (click select, converted) was converted on this machine and its file is missing; "
        "convert it again with 'imageforge models convert SAM2_SMALL' or the Models panel's "
        "Prepare Click Select model… button."
    )


if os.name != "posix":  # pragma: no cover - the suite runs on Linux
    pytest.skip("POSIX shell scripts", allow_module_level=True)
