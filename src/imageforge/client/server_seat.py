"""What one client knows of its job server at a time: the folder, the process and its connection, the snapshot.

Every part of the client (launch, status, lease, stop; client/controller.py puts them together) reads and
changes this one record. A process and its connection are set and cleared together.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from blendjob.controller import ServerConnection

from ..contract.server_state import ServerState, server_snapshot, stopped
from .process_identity import RecordedServerProcess
from .server_errors import ServerNotRunningError

ServerProcess = subprocess.Popen[bytes] | RecordedServerProcess


@dataclass
class ServerSeat:
    root_factory: Callable[[], Path]
    log_path_factory: Callable[[], Path]
    host: str = "127.0.0.1"
    connection: ServerConnection | None = None
    process: ServerProcess | None = None
    log_file: TextIO | None = None
    snapshot: dict[str, Any] = field(default_factory=stopped)
    auto_start: bool = False  # start a server when the poll finds none (a job or Start asked for one)
    crash_message: str | None = None  # the sentence for a server that ended on its own, until Start or Restart

    def root(self) -> Path:
        return Path(self.root_factory()).resolve()

    def log_path(self) -> Path:
        return Path(self.log_path_factory())

    def show(self, state: ServerState, message: str, **fields: Any) -> None:
        self.snapshot = server_snapshot(state, message, **fields)

    def running(self) -> bool:
        return self.connection is not None and self.process is not None and self.process.poll() is None

    def connected(self) -> ServerConnection:
        """The current connection, or ServerNotRunningError when there is none."""
        if self.connection is None:
            raise ServerNotRunningError("Server is not running")
        return self.connection

    def take(self) -> tuple[ServerConnection | None, ServerProcess | None, TextIO | None]:
        """Forget the server (its connection, process and log), handing them to the caller."""
        taken = self.connection, self.process, self.log_file
        self.connection, self.process, self.log_file = None, None, None
        return taken

    def close_process(self) -> None:
        """Forget the server process and close its log (the process itself is left as it is)."""
        self.process = None
        if self.log_file is not None:
            self.log_file.close()
            self.log_file = None
