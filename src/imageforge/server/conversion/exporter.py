"""Run a conversion's exporter (a script of src/imageforge/converter/: da3_export.py, sam2_export.py) in the
converter environment.

Every exporter takes `--model M --weights W --output O --progress` (O is the result's one file or the folder
its files go into, as the conversion says), prints JSON progress lines and, last, its report: either one
file's `bytes` and `sha256` (DA3), or `files` [{path, bytes, sha256}] inside the output folder (SAM 2.1), the
checks against torch (`check_*`: name → figure) and optionally `options` for the catalog entry. This module maps
the progress into the job's, shows the elapsed time while a long step (the trace) says nothing, and turns a
failure into one sentence: the check's own verdict, a full disk, or the exporter's last words.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...contract import ModelUnavailableError, ResourceExhaustedError
from ...contract.conversions import Conversion
from .process import run_process, tail

CONVERTER_SCRIPTS = Path(__file__).resolve().parents[2] / "converter"
Report = Callable[[float, str], None]  # (fraction of the export, message)


@dataclass(frozen=True)
class ExportedFile:
    path: Path
    size: int
    sha256: str


@dataclass(frozen=True)
class ExportReport:
    files: tuple[ExportedFile, ...]  # in the order of the conversion's result files
    checks: dict[str, dict[str, float]]  # e.g. check_relative_error: {depth: 1e-5, …}
    options: dict[str, Any]  # for the catalog entry
    seconds: float


def export_model(
    python: Path,
    conversion: Conversion,
    weights: Path,
    output: Path,
    *,
    log: Path,
    cancelled: Callable[[], bool],
    report: Report,
    job_log: Callable[[str], None],
) -> ExportReport:
    """Export and check `conversion` from `weights` into `output` (the file or the folder, as its exporter
    writes); raises with one sentence when it fails."""
    script = CONVERTER_SCRIPTS / conversion.exporter.script
    command = [str(python), "-u", str(script), "--model", conversion.exporter.model, "--weights", str(weights)]
    command += ["--output", str(output), "--progress"]
    state: dict[str, Any] = {"fraction": 0.0, "message": "Starting the exporter", "since": time.monotonic()}
    results: list[dict[str, Any]] = []
    started = time.monotonic()

    def on_line(line: str) -> None:
        try:
            data = json.loads(line)
        except ValueError:
            return  # a library printing to stdout: its words are not progress
        if isinstance(data, dict) and "progress" in data:
            state.update(fraction=float(data["progress"]), message=str(data["message"]), since=time.monotonic())
            report(state["fraction"], state["message"])
        elif isinstance(data, dict) and ("sha256" in data or "files" in data):
            results.append(data)

    def on_tick() -> None:
        elapsed = int(time.monotonic() - state["since"])
        report(state["fraction"], f"{state['message']} · {elapsed // 60} m {elapsed % 60:02d} s")

    log.write_text("", encoding="utf-8")
    status = run_process(command, stderr_path=log, cancelled=cancelled, on_line=on_line, on_tick=on_tick)
    if status or not results:
        said = tail(log, 30)
        for line in said:
            job_log(f"exporter: {line}")
        last = said[-1].strip() if said else f"the exporter exited with status {status}"
        if any("No space left" in line for line in said):
            raise ResourceExhaustedError(f"The disk is full: could not export {conversion.label}; free some space.")
        if "disagrees with torch" in last:
            verdict = last[last.index("disagrees") :].rstrip(".")
            raise ModelUnavailableError(f"The converted {conversion.label} {verdict}; nothing was kept.")
        raise ModelUnavailableError(f"Exporting {conversion.label} failed: {last} (the job log has the details).")
    return _report(conversion, output, results[-1], round(time.monotonic() - started, 1))


def _report(conversion: Conversion, output: Path, result: dict[str, Any], seconds: float) -> ExportReport:
    """The exporter's report, its files checked against the conversion's: every one named, written, in order."""
    if "files" in result:
        listed = {str(item["path"]): item for item in result["files"]}
        files = tuple(
            ExportedFile(output / name, int(listed[name]["bytes"]), str(listed[name]["sha256"]))
            for name in conversion.result.files
            if name in listed
        )
    else:
        files = (ExportedFile(output, int(result["bytes"]), str(result["sha256"])),)
    if len(files) != len(conversion.result.files) or not all(item.path.is_file() for item in files):
        wanted = " and ".join(conversion.result.files)
        raise ModelUnavailableError(f"The exporter of {conversion.label} reported success but did not write {wanted}.")
    checks = {
        name: {key: float(value) for key, value in figures.items()}
        for name, figures in result.items()
        if name.startswith("check_") and isinstance(figures, dict)
    }
    return ExportReport(files=files, checks=checks, options=dict(result.get("options", {})), seconds=seconds)
