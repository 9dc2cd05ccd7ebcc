"""How ImageForge reaches its job server: the client's own controller, answering what BlendJob's runtime asks.

BlendJob's runtime, operators and setup call `runtime.server` by the names in client/blendjob_compat.py
`CONTROLLER_CALLS`; this class answers them, holding BlendJob's pieces (its ServerConnection, storage lock,
process-record helpers and job results) rather than deriving from its ServerController. Each concern is its own
module; this one only puts them together:

- client/server_launch.py: launch and credentials. The server belongs to the storage root (openspec/0015):
  `start()` attaches to the folder's running server once it proved itself, and starts one only otherwise.
- client/server_status.py: status and polling. A server that dies on its own shows ERROR with one sentence;
  a living one slow to answer (creating a session) reads as busy.
- client/server_lease.py: leases. `detach()` (the CLI at its end, Blender on quit) leaves the server to its
  other clients; it exits after its linger time with no client and no job.
- client/server_stop.py: stop. `stop()` stops it for everyone without holding Blender's main thread.

Every error is a client/server_errors.py type (a RuntimeError, so BlendJob's operators report its sentence).
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from blendjob import JobResult
from blendjob.controller import ServerConnection

from ..contract.segment_click import CLICK_PATH, ClickAnswer, ClickRequest
from ..contract.server_clients import ClientKind
from ..contract.server_state import ServerState
from ..contract.storage_trust import UntrustedStorageError
from . import retirement
from .job_follow import Progress, follow_job
from .server_errors import JobServerError, ServerIdentityError, ServerStartError, ServerUnreachableError
from .server_launch import CommandFactory, ServerLauncher
from .server_lease import Lease
from .server_seat import ServerProcess, ServerSeat
from .server_status import JobStatuses, notice_exit, read_health
from .server_stop import MAIN_THREAD_WAIT, retire_if_unusable, stop_server
from .settings_mismatch import replace_or_refuse

if TYPE_CHECKING:
    from ..contract.health import ClientLease

CLICK_SECONDS = 5.0  # one Click Select prompt: the decoder and the mask's upsampling (tens of ms; seconds on a
# busy machine); the add-on sends it from a thread, so this never blocks Blender


class ImageForgeServerController:
    """One client's view of its storage root's job server: start or attach, follow jobs, lease, stop."""

    def __init__(
        self,
        command_factory: CommandFactory,
        *,
        cwd_factory: Callable[[], Path],
        log_path_factory: Callable[[], Path],
        kind: ClientKind | None = None,
        writer: bool = False,
        creationflags: int = 0,
        blocked: Callable[[], bool] | None = None,
    ) -> None:
        self.seat = ServerSeat(cwd_factory, log_path_factory)
        self.launcher = ServerLauncher(
            self.seat, command_factory, writer=writer, creationflags=creationflags, blocked=blocked
        )
        self.lease = Lease(kind)
        self.jobs = JobStatuses(self.seat)
        self.main_thread_wait = MAIN_THREAD_WAIT
        self.grace = retirement.GRACE_SECONDS
        self.last_retired: retirement.RetiringServer | None = None

    # -- what the seat holds, as BlendJob's runtime and the add-on read it ------------------------------------

    @property
    def connection(self) -> ServerConnection | None:
        return self.seat.connection

    @connection.setter
    def connection(self, value: ServerConnection | None) -> None:
        self.seat.connection = value

    @property
    def process(self) -> ServerProcess | None:
        return self.seat.process

    @process.setter
    def process(self, value: ServerProcess | None) -> None:
        self.seat.process = value

    @property
    def log_file(self) -> TextIO | None:
        return self.seat.log_file

    @property
    def snapshot(self) -> dict[str, Any]:
        return self.seat.snapshot

    @snapshot.setter
    def snapshot(self, value: dict[str, Any]) -> None:
        self.seat.snapshot = value

    @property
    def auto_start(self) -> bool:
        return self.seat.auto_start

    @auto_start.setter
    def auto_start(self, value: bool) -> None:
        self.seat.auto_start = value

    @property
    def kind(self) -> ClientKind:
        return self.lease.kind

    @kind.setter
    def kind(self, value: ClientKind) -> None:
        self.lease.kind = value

    def root(self) -> Path:
        return self.seat.root()

    # -- launch -------------------------------------------------------------------------------------------

    def start(self) -> ServerConnection | None:
        """Attach to the folder's running server, or start one; None while the previous one is still stopping.
        A running server started with other settings is replaced when unused, else refused
        (client/settings_mismatch.py)."""
        connection = self.launcher.attach_or_launch()
        if connection is not None and self.launcher.settings_differ:
            differ, self.launcher.settings_differ = self.launcher.settings_differ, []
            self.last_retired = replace_or_refuse(
                self.seat, self.lease, differ, grace=self.grace, main_thread_wait=self.main_thread_wait
            )
            return None
        return connection

    def enable(self) -> ServerConnection | None:
        """Start (the panel's Start): the running server if it answers, else a start."""
        self.seat.auto_start = True
        try:
            self.health(timeout=0.2)
        except JobServerError:
            self.start()
        return self.seat.connection

    def ensure(self, timeout: float = 60.0) -> ServerConnection:
        """A server that answers, started if need be. A server dying twice while starting ends it, and a server
        that can no longer serve anyone (another program answers on its port, or it stopped listening) is
        retired and a fresh one started on a fresh socket; a server that still listens but fails the proof
        ends it too."""
        seat = self.seat
        seat.auto_start = True
        deadline = time.monotonic() + timeout
        starts = 0
        while time.monotonic() < deadline:
            try:
                self.health(timeout=0.5)
                return seat.connected()
            except ServerIdentityError:
                if not self._retire_if_unusable():
                    raise
            except ServerUnreachableError as error:
                # Refused: nothing listens (a stopping server closes its socket first); on Windows, where a new
                # server binds its port itself, only when the OS says the server does not hold it.
                if not (error.refused and self._retire_if_unusable(certain=True)):
                    notice_exit(seat)
            except JobServerError:
                notice_exit(seat)
            if seat.process is None:
                if starts >= 2:
                    raise ServerStartError(seat.crash_message or f"Server did not start; log: {seat.log_path()}")
                if self.start() is not None:
                    starts += 1
                    if not isinstance(seat.process, subprocess.Popen):
                        continue  # attached to the folder's running server: it can answer at once
            time.sleep(0.05)
        raise ServerStartError(f"Server did not become ready; log: {seat.log_path()}")

    def attach_running(self, timeout: float = 30.0) -> ServerConnection | None:
        """The folder's running server, attached, or None when none runs; never starts one."""
        if self.launcher.recover() is None:
            return None
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.health(timeout=1.0)
                return self.seat.connection
            except ServerIdentityError:
                raise
            except JobServerError:
                if self.seat.process is None or self.seat.process.poll() is not None:
                    self.seat.connection = self.seat.process = None
                    return None
                if time.monotonic() >= deadline:
                    raise
            time.sleep(0.05)

    # -- status and polling --------------------------------------------------------------------------------

    def health(self, timeout: float = 0.3) -> dict[str, Any]:
        """The server's health (into the snapshot), and this client's lease on it."""
        health = read_health(self.seat, timeout)
        self.lease.hold(self.seat.connected())
        return health

    def poll(self, *, available: bool = True) -> float:
        """The panel's poll (seconds until the next): a living server slow to answer (creating a session holds
        its GIL) reads as busy instead of being started again, one that fails its proof as ERROR, one that died
        as its crash sentence; with auto start on, a missing server is started."""
        seat = self.seat
        if not available:
            seat.show(ServerState.UNAVAILABLE, "Environment is not installed")
            return 2.0
        if seat.running():
            try:
                self.health(timeout=0.5)
                return 5.0
            except ServerIdentityError as error:
                if self._retire_if_unusable():
                    return 1.0  # starting anew once it has gone (when a job or Start asks for a server)
                seat.show(ServerState.ERROR, str(error))
                return 2.0
            except JobServerError:
                seat.snapshot = {
                    **seat.snapshot,
                    "state": ServerState.BUSY,
                    "message": "Busy (the server is loading a model)",
                }
                return 1.0
        interval = self._poll_missing()
        if seat.crash_message and seat.process is None:
            seat.show(ServerState.ERROR, seat.crash_message)
        return interval

    def _poll_missing(self) -> float:
        seat = self.seat
        try:
            self.health(timeout=0.5)
            return 5.0
        except JobServerError:
            notice_exit(seat)
        if not seat.auto_start:
            seat.show(ServerState.STOPPED, "Stopped")
            return 2.0
        try:
            self.start()
        except (OSError, RuntimeError) as error:  # any reason a start fails is shown, in its one sentence
            seat.show(ServerState.ERROR, str(error))
            return 2.0
        seat.show(ServerState.STARTING, "Starting")
        return 1.0

    def close_finished_process(self) -> None:
        """Forget the server process (and its connection) when it has exited, keeping how it ended."""
        notice_exit(self.seat)

    # -- jobs ---------------------------------------------------------------------------------------------

    def submit(self, job_type: str, parameters: dict[str, Any]) -> dict[str, Any]:
        submitted: dict[str, Any] = self.ensure().client.submit(job_type, parameters)
        return self.jobs.submitted(submitted)

    def status(self, job_id: str) -> dict[str, Any]:
        """A job's status from the server that runs it, within about a second (server_status.JobStatuses)."""
        return self.jobs.status(job_id)

    def cancel(self, job_id: str) -> dict[str, Any]:
        return self.jobs.cancel(job_id)

    def job_directory(self, job_id: str) -> Path:
        return self.jobs.directory(job_id)

    def mark_job_complete(self, job_id: str) -> None:
        self.jobs.complete(job_id)

    def request(
        self,
        job_type: str,
        parameters: dict[str, Any],
        *,
        response: Callable[[JobResult], object] | None = None,
        progress: Progress | None = None,
        cancel_check: Callable[[], bool] | None = None,
        poll_interval: float = 0.25,
    ) -> JobResult:
        """One job followed to its result (BlendJob's setup offers this to an add-on's post-setup hook)."""
        result = follow_job(
            self,
            job_type,
            parameters,
            on_progress=progress or (lambda _status: None),
            cancel_requested=cancel_check or (lambda: False),
            poll_interval=poll_interval,
        )
        if response is not None:
            response(result)
        return result

    def click(self, request: ClickRequest, timeout: float = CLICK_SECONDS) -> ClickAnswer:
        """One Click Select prompt answered beside the job queue (server/click_route.py; openspec/0026). Never
        starts a server: without one it raises ServerNotRunningError, as `status` does."""
        answer = self.seat.connected().client.request("POST", CLICK_PATH, request.to_json(), timeout=timeout)
        return ClickAnswer.from_json(answer)

    def resource(self, name: str) -> Any:
        return self.ensure().client.resource(name)

    def clear_resource(self, name: str) -> Any:
        return self.ensure().client.clear_resource(name)

    # -- leases -------------------------------------------------------------------------------------------

    def detach(self) -> None:
        """Leave the server to its other clients: it exits by itself after its linger time if none is left."""
        seat = self.seat
        seat.auto_start = False
        self.lease.end()
        _connection, process, log_file = seat.take()
        if log_file is not None:
            log_file.close()
        if isinstance(process, subprocess.Popen):  # our child: reap it when it exits, leave no zombie
            threading.Thread(target=process.wait, name="ImageForgeServerReaper", daemon=True).start()
        seat.show(ServerState.STOPPED, "Stopped")

    def other_clients(self) -> list[ClientLease]:
        """The other clients attached to the server (from the last health snapshot): Stop stops theirs too."""
        return self.lease.others(self.seat.snapshot)

    # -- stop ---------------------------------------------------------------------------------------------

    def stop(self, timeout: float | None = None) -> None:
        """Cancel the running job, ask the server to exit, and leave the waiting to a reaper on the main thread.

        `timeout` is accepted for BlendJob's callers; the grace period is `self.grace`.
        """
        seat = self.seat
        seat.auto_start = False
        seat.crash_message = None
        self.lease.end()
        if seat.connection is None:
            # A server that cannot be verified, or an untrusted record, names no process to stop.
            with contextlib.suppress(JobServerError, UntrustedStorageError):
                self.launcher.recover()
        self.last_retired = stop_server(seat, grace=self.grace, main_thread_wait=self.main_thread_wait)

    def restart(self) -> ServerConnection | None:
        self.stop()
        self.seat.auto_start = True
        return self.start()

    def _retire_if_unusable(self, *, certain: bool = False) -> bool:
        retired = retire_if_unusable(self.seat, self.lease, grace=self.grace, certain=certain)
        if retired is None:
            return False
        self.last_retired = retired
        return True
