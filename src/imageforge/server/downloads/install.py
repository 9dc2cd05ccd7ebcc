"""Make catalog models ready on disk: check each file, fetch what is missing, report progress in bytes."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from ...contract import ModelUnavailableError
from ...contract.catalog import ModelEntry
from .fetch import fetch_file, hub_url
from .store import FileState, model_status, remember_verified

Report = Callable[[float, str], None]  # (fraction 0..1, message)
PROGRESS_INTERVAL = 0.25  # seconds between progress messages


def format_rate(bytes_per_second: float) -> str:
    return f"{bytes_per_second / 1e6:.1f} MB/s"


def ensure_models(
    storage_root: Path,
    entries: list[ModelEntry],
    *,
    report: Report,
    cancelled: Callable[[], bool],
) -> dict[str, dict[str, str]]:
    """Return {model key: {file path: "ready" | "downloaded"}} once every file is verified."""
    statuses = [model_status(storage_root, entry) for entry in entries]
    missing = [(status.entry, item) for status in statuses for item in status.files if not item.ready]
    for _, item in missing:
        if not item.file.streamable:
            raise ModelUnavailableError(
                f"{item.path.name} has no declared size and checksum; this version cannot download it."
            )
    total = sum(item.file.size or 0 for _, item in missing) or 1
    outcome = {status.entry.key: {item.file.path: "ready" for item in status.files} for status in statuses}
    done = 0
    started = time.monotonic()
    last_report = 0.0
    for entry, item in missing:
        if item.state in (FileState.WRONG_SIZE, FileState.WRONG_HASH):
            item.path.unlink(missing_ok=True)

        def on_progress(received: int, entry: ModelEntry = entry, done: int = done) -> None:
            nonlocal last_report
            now = time.monotonic()
            if now - last_report < PROGRESS_INTERVAL:
                return
            last_report = now
            fraction = (done + received) / total
            rate = format_rate((done + received) / max(now - started, 1e-3))
            report(fraction, f"Downloading {entry.label} {fraction:.0%} · {rate}")

        fetch_file(
            hub_url(entry.repository, item.file.path),
            item.path,
            size=item.file.size or 0,
            sha256=item.file.sha256 or "",
            on_progress=on_progress,
            cancelled=cancelled,
        )
        remember_verified(storage_root, item.path, item.file)
        done += item.file.size or 0
        outcome[entry.key][item.file.path] = "downloaded"
    report(1.0, "Models are ready")
    return outcome
