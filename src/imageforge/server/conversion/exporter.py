"""Run the DA3 exporter (src/imageforge/converter/da3_export.py) in the converter environment.

The exporter prints JSON progress lines and, last, its report (size, SHA-256, the check against torch); this
module maps its progress into the job's, shows the elapsed time while a long step (the trace) says nothing, and
turns a failure into one sentence: the check's own verdict, a full disk, or the exporter's last words.
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

EXPORTER = Path(__file__).resolve().parents[2] / "converter" / "da3_export.py"
Report = Callable[[float, str], None]  # (fraction of the export, message)


@dataclass(frozen=True)
class ExportReport:
    path: Path
    size: int
    sha256: str
    check_relative_error: dict[str, float]
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
    """Export and check `conversion` from `weights` into `output`; raises with one sentence when it fails."""
    command = [str(python), "-u", str(EXPORTER), "--model", conversion.exporter, "--weights", str(weights)]
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
        elif isinstance(data, dict) and "sha256" in data:
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
    result = results[-1]
    if not output.is_file():
        raise ModelUnavailableError(f"The exporter of {conversion.label} reported success but wrote no file.")
    return ExportReport(
        path=output,
        size=int(result["bytes"]),
        sha256=str(result["sha256"]),
        check_relative_error={name: float(value) for name, value in result["check_relative_error"].items()},
        seconds=round(time.monotonic() - started, 1),
    )
