"""Stopping a job server without holding Blender's main thread: retire it, then finish in the background.

BlendJob's `stop()` asks the server to shut down and then waits on the caller's thread for up to 10 s, plus
3 s after SIGTERM; with a job running that freezes Blender's UI for ~13 s. Here the controller cancels the job
and asks for shutdown, then hands the process to `retire()`, which waits a short bound itself and, if the
process is still alive, leaves a reaper thread to wait out the grace period, SIGTERM, then SIGKILL. Only after
the process is gone does the reaper remove its `server-process.json` record and credentials and release the
storage lock, so another Blender cannot take the folder while the old server still writes in it.

While a server of a storage root is retiring, `is_retiring(root)` is true and the controller defers any new
start there (one server per folder: the old one may still hold GPU memory or write a model's `.part`).
Reaper threads are not daemons: a CLI that exits right after `stop()` still waits for its server to be reaped.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from blendjob.controller import SERVER_DIRECTORY_LOCKS, terminate_process_tree
from blendjob.storage import read_json

from ..contract.server_credentials import remove_credentials
from .process_identity import RecordedServerProcess

PROCESS_RECORD = "server-process.json"
GRACE_SECONDS = 5.0  # after the shutdown request: time for the cancelled job to end cleanly
TERMINATE_SECONDS = 2.0  # after SIGTERM, before SIGKILL
POLL_SECONDS = 0.02

# Guards the registry, and makes "reaped: release the lock, forget the entry" atomic against a new start.
MUTEX = threading.RLock()
_RETIRING: dict[Path, list[RetiringServer]] = {}


@dataclass
class RetiringServer:
    """A server process this Blender asked to stop, and what to tidy once it has exited."""

    root: Path
    process: Any  # subprocess.Popen, a RecordedServerProcess (a server this client found running), or None
    instance_id: str | None
    log_file: IO[str] | None = None
    release_lock: Callable[[], None] = lambda: None
    grace: float = GRACE_SECONDS
    exit_seen_after: float | None = None  # seconds from retirement to the process's exit, once known
    thread: threading.Thread | None = field(default=None, repr=False)
    started: float = field(default_factory=time.monotonic, repr=False)

    def exited(self) -> bool:
        return self.process is None or self.process.poll() is not None


def is_retiring(root: Path) -> bool:
    with MUTEX:
        return bool(_RETIRING.get(Path(root)))


def retire(server: RetiringServer, *, wait: float | None) -> RetiringServer:
    """Finish stopping `server`: wait at most `wait` seconds here (None: until it is gone), then in the background."""
    with MUTEX:
        _RETIRING.setdefault(server.root, []).append(server)
    if wait is None:
        _reap(server)
    elif _wait_for_exit(server, wait):
        _finish(server)
    else:
        server.thread = threading.Thread(target=_reap, args=(server,), name="ImageForgeServerReaper")
        server.thread.start()
    return server


def wait_until_retired(root: Path, timeout: float | None = None) -> bool:
    """Join the reapers of `root`; true when none is left. For worker threads that need the folder free."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        with MUTEX:
            threads = [server.thread for server in _RETIRING.get(Path(root), ()) if server.thread is not None]
        if not threads:
            return not is_retiring(root)
        for thread in threads:
            thread.join(None if deadline is None else max(deadline - time.monotonic(), 0.0))
        if deadline is not None and time.monotonic() >= deadline:
            return not is_retiring(root)


def forget_record(root: Path, record: dict[str, Any]) -> None:
    """Remove a stale process record (its server is gone) and that start's credentials, if still the same record."""
    path = Path(root) / PROCESS_RECORD
    with MUTEX:
        if read_json(path) == record:
            path.unlink(missing_ok=True)
        if isinstance(record.get("instance_id"), str):
            remove_credentials(Path(root), record["instance_id"])


def _wait_for_exit(server: RetiringServer, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not server.exited():
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_SECONDS)
    return True


def _reap(server: RetiringServer) -> None:
    try:
        remaining = server.grace - (time.monotonic() - server.started)
        if not _wait_for_exit(server, max(remaining, 0.0)):
            with contextlib.suppress(OSError, RuntimeError):
                if isinstance(server.process, RecordedServerProcess):
                    server.process.terminate()  # signalled only while proven to be the recorded server
                else:
                    terminate_process_tree(server.process)  # our own child: its pid cannot be reused meanwhile
            if not _wait_for_exit(server, TERMINATE_SECONDS):
                with contextlib.suppress(OSError):
                    server.process.kill()
                # Unkillable (uninterruptible I/O): its record and lock stay, so no other Blender takes the folder.
                with contextlib.suppress(subprocess.TimeoutExpired):
                    server.process.wait(timeout=TERMINATE_SECONDS)
    finally:
        _finish(server)


def _finish(server: RetiringServer) -> None:
    """Tidy after the exit: close the log, drop the process record and credentials if still ours, free the lock."""
    if server.exited():
        server.exit_seen_after = time.monotonic() - server.started
    if server.log_file is not None:
        server.log_file.close()
    with MUTEX:
        if server.exited():
            record_path = server.root / PROCESS_RECORD
            record = read_json(record_path)
            same_root = record.get("root") == str(server.root)
            # A shared server may have been started by another client: the instance id says the record is its.
            ours = record.get("instance_id") == server.instance_id or (
                server.instance_id is None and record.get("parent_pid") == os.getpid()
            )
            if same_root and ours:
                record_path.unlink(missing_ok=True)
                registered = SERVER_DIRECTORY_LOCKS.pop(record.get("instance_id"), None)
                if registered is not None:
                    registered.release()
            if server.instance_id is not None:
                remove_credentials(server.root, server.instance_id)
            server.release_lock()
        entries = _RETIRING.get(server.root, [])
        if server in entries:
            entries.remove(server)
        if not entries:
            _RETIRING.pop(server.root, None)
