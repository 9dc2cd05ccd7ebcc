"""Run a converter step (uv, the exporter) as a child process that a job can follow and cancel.

The child gets its own process group (a new session on POSIX), so a cancel stops it and everything it started
(uv's installers, torch's worker threads) at once: SIGTERM, then SIGKILL after a grace period; on Windows the
whole tree is ended with `taskkill /T /F`. Its stdout is read line by line on a thread and handed to the job
between cancellation checks; its stderr goes to a log file whose tail explains a failure.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

POLL_SECONDS = 0.2
GRACE_SECONDS = 5.0


class ProcessCancelled(Exception):
    """The job was cancelled while the child ran; the child and its children have been stopped."""


def run_process(
    command: Sequence[str],
    *,
    stderr_path: Path,
    cancelled: Callable[[], bool],
    on_line: Callable[[str], None] = lambda _line: None,
    on_tick: Callable[[], None] = lambda: None,
    env: dict[str, str] | None = None,
) -> int:
    """Run `command` to its end and return its exit status; `on_line` gets each stdout line, `on_tick` is
    called about every 0.2 s without one. Raises ProcessCancelled (after stopping the child) on cancel."""
    stderr_path.parent.mkdir(parents=True, exist_ok=True)
    with open(stderr_path, "ab") as errors:
        process = subprocess.Popen(
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            encoding="utf-8",
            errors="replace",
            env=env,
            **_own_group(),
        )
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line.rstrip("\r\n"))
        lines.put(None)

    reader = threading.Thread(target=read, name="ImageForgeConverterOutput", daemon=True)
    reader.start()
    try:
        while True:
            if cancelled():
                raise ProcessCancelled()
            try:
                line = lines.get(timeout=POLL_SECONDS)
            except queue.Empty:
                on_tick()
                continue
            if line is None:
                break
            on_line(line)
        return process.wait()
    except BaseException:
        stop(process)
        raise
    finally:
        reader.join(timeout=GRACE_SECONDS)


def stop(process: subprocess.Popen[str]) -> None:
    """End `process` and its children: politely, then by force."""
    if process.poll() is not None:
        return
    if os.name == "nt":
        subprocess.run(["taskkill", "/T", "/F", "/PID", str(process.pid)], capture_output=True, check=False)
    else:
        _signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + GRACE_SECONDS
        while process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        _signal_group(process, signal.SIGKILL)
    process.wait()


def _signal_group(process: subprocess.Popen[str], number: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, number)


def _own_group() -> dict[str, Any]:
    if sys.platform == "win32":
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
    return {"start_new_session": True}


def tail(path: Path, lines: int = 20) -> list[str]:
    """The last non-empty lines of a log file (what a failed step said last)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if line.strip()][-lines:]
