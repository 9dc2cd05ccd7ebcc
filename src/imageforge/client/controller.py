"""How ImageForge owns its job server process: BlendJob's ServerController, with three changes.

1. Authenticated: just before each start (BlendJob calls the command factory right before `Popen`) a fresh
   token is written to the 0600 credentials file the server reads at start-up, and the connection's client
   presents it. Recovering a running server after an add-on reload reads the same file.
2. Stop and restart never hold the caller for seconds: the running job is cancelled, shutdown is requested,
   and `retirement` finishes in the background when called on Blender's main thread. Worker threads
   (BlendJob's setup and migrate maintenance) wait for the full exit, since they need the folder free.
   A restart starts the new server once the old one is gone (the poll timer or the next `ensure()` does).
3. A server that dies on its own (killed, crashed) shows ERROR with one readable sentence instead of being
   restarted silently; Start or Restart brings it back, and the interrupted job reads as failed.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import blendjob
from blendjob import JobRuntime
from blendjob.controller import SERVER_DIRECTORY_LOCKS, RegisteredServerProcess, ServerConnection, ServerController
from blendjob.environment import environment_python
from blendjob.runtime import windows_creation_flags
from blendjob.server import TERMINAL_STATES
from blendjob.storage import read_json, write_json

from ..contract.server_credentials import CredentialsError, ServerCredentials, read_credentials, write_credentials
from . import retirement
from .authenticated import AuthenticatedJobClient

REQUEST_SECONDS = 0.5  # each of the cancel and shutdown requests a stop makes on the caller's thread
MAIN_THREAD_WAIT = 0.3  # how long a stop on the main thread waits for the exit before leaving it to a reaper

JOB_ID = re.compile(r"[0-9a-f]{32}")  # BlendJob's job ids (uuid4().hex)
PASS_SOCKET = os.name != "nt"  # POSIX children inherit the listening socket; Windows binds the port itself
LAUNCHER = Path(__file__).resolve().parents[1] / "server" / "launcher.py"
BLENDJOB_ROOT = Path(blendjob.__file__).resolve().parents[1]

CommandFactory = Callable[[int, str, "int | None"], list[str]]


class ImageForgeServerController(ServerController):
    """BlendJob's controller, authenticated, with a non-blocking stop and readable crash reports."""

    def __init__(self, command_factory: CommandFactory, **options: Any) -> None:
        super().__init__(self._command_with_credentials, **options)
        self.base_command_factory = command_factory
        self.issued: ServerCredentials | None = None
        self.crash_message: str | None = None
        self.main_thread_wait = MAIN_THREAD_WAIT
        self.grace = retirement.GRACE_SECONDS
        self.last_retired: retirement.RetiringServer | None = None
        self.job_servers: dict[str, str] = {}  # job id -> instance id of the server it was submitted to

    def root(self) -> Path:
        return Path(self.cwd_factory()).resolve()

    # -- start, with credentials -------------------------------------------------------------------------------

    def start(self) -> ServerConnection | None:
        """Start (or recover) the server; None while the previous server of this folder is still stopping."""
        with retirement.MUTEX:
            if retirement.is_retiring(self.root()):
                self.snapshot = {"state": "STARTING", "message": "Waiting for the previous server to stop"}
                return None
        self.crash_message = None
        if self.blocked is not None and self.blocked():
            self.auto_start = False
            raise RuntimeError("Server Location is being changed")
        if self.process is None:
            self._recover_connection()
        if self.directory_lock is not None:
            self.directory_lock.acquire(self.cwd_factory())
        if self.process is not None and self.process.poll() is None:
            return self.connection
        self._close_process()
        return self._launch()

    def _launch(self) -> ServerConnection:
        """BlendJob's start, except that the listening socket is the client's (POSIX): no port is ever free."""
        root = self.root()
        listener = listening_socket(self.host) if PASS_SOCKET else None
        try:
            port = listener.getsockname()[1] if listener is not None else self._available_port()
            instance_id = uuid.uuid4().hex
            log_path = self.log_path_factory()
            log_path.parent.mkdir(parents=True, exist_ok=True)
            self.log_file = log_path.open("a", encoding="utf-8")
            try:
                command = self.command_factory(port, instance_id, listener.fileno() if listener else None)
                self.process = subprocess.Popen(
                    command,
                    stdout=self.log_file,
                    stderr=subprocess.STDOUT,
                    cwd=root,
                    creationflags=self.creationflags,
                    pass_fds=(listener.fileno(),) if listener is not None else (),
                )
            except (OSError, RuntimeError):
                self.log_file.close()
                self.log_file = None
                if self.directory_lock is not None:
                    self.directory_lock.release()
                raise
        finally:
            if listener is not None:
                listener.close()  # the server holds its own copy now
        write_json(
            root / retirement.PROCESS_RECORD,
            {
                "root": str(root),
                "pid": self.process.pid,
                "parent_pid": os.getpid(),
                "port": port,
                "instance_id": instance_id,
            },
        )
        if self.directory_lock is not None:
            SERVER_DIRECTORY_LOCKS[instance_id] = self.directory_lock
        self.connection = ServerConnection(port, self.process.pid, instance_id, AuthenticatedJobClient(self.issued))
        self.snapshot = {"state": "STARTING", "message": "Starting", "port": port}
        return self.connection

    def _command_with_credentials(self, port: int, instance_id: str, listen_fd: int | None = None) -> list[str]:
        command = self.base_command_factory(port, instance_id, listen_fd)
        credentials = ServerCredentials.issue(port, instance_id)
        try:
            write_credentials(self.root(), credentials)
        except CredentialsError as error:
            raise RuntimeError(str(error)) from error  # BlendJob's callers report RuntimeError and OSError
        self.issued = credentials
        return command

    def _recover_connection(self) -> None:
        """BlendJob's recovery after an add-on reload, reading the running server's token from its file."""
        root = self.root()
        if retirement.is_retiring(root):
            return
        record = read_json(root / retirement.PROCESS_RECORD)
        if record.get("root") != str(root):
            return
        process = RegisteredServerProcess(record["pid"])
        if process.poll() is not None:
            return
        if record.get("parent_pid") != os.getpid():
            raise RuntimeError("Another Blender process is using this Server folder")
        unverified = (
            f"Registered Server process {process.pid} is still running but cannot be verified; "
            "restart Blender before changing the Server location"
        )
        try:
            credentials = read_credentials(root)
        except CredentialsError as error:
            raise RuntimeError(unverified) from error
        if credentials.instance_id != record.get("instance_id") or credentials.port != record.get("port"):
            raise RuntimeError(unverified)
        client = AuthenticatedJobClient(credentials, host=self.host)
        try:
            health = client.request("GET", "/health", timeout=0.5)
        except RuntimeError as error:
            raise RuntimeError(unverified) from error
        if health.get("instance_id") != record.get("instance_id"):
            raise RuntimeError("The registered Server instance does not match")
        if health.get("busy"):
            raise RuntimeError("The registered Server is busy")
        self.connection = ServerConnection(record["port"], record["pid"], record["instance_id"], client)
        self.process = process
        self.issued = credentials

    # -- stop and restart, without holding the caller --------------------------------------------------------

    def stop(self, timeout: float | None = None) -> None:
        """Cancel the running job, ask the server to exit, and leave the waiting to a reaper on the main thread.

        `timeout` is accepted for BlendJob's signature; the grace period is `self.grace`.
        """
        self.auto_start = False
        self.crash_message = None
        root = self.root()
        if self.connection is None:
            self._recover_connection()
        connection, process, log_file = self.connection, self.process, self.log_file
        self.connection, self.process, self.log_file = None, None, None
        cancelled = False
        if connection is not None and (process is None or process.poll() is None):
            cancelled = self._cancel_running_job(connection)
            with contextlib.suppress(RuntimeError):  # not answering: the reaper's SIGTERM and SIGKILL still end it
                connection.client.request("POST", "/shutdown", timeout=REQUEST_SECONDS)
        on_main_thread = threading.current_thread() is threading.main_thread()
        self.last_retired = retirement.retire(
            retirement.RetiringServer(
                root,
                process,
                connection.instance_id if connection is not None else None,
                log_file,
                release_lock=self._release_directory_lock,
                grace=self.grace,
            ),
            # An idle server exits within ~0.3 s: wait for that here, so the common stop is complete on return.
            # A cancelled job takes longer to wind down; waiting for it here would only hold the UI.
            wait=(0.0 if cancelled else self.main_thread_wait) if on_main_thread else None,
        )
        if not on_main_thread:
            retirement.wait_until_retired(root)
        self.snapshot = {"state": "STOPPED", "message": "Stopped"}

    def _cancel_running_job(self, connection: ServerConnection) -> bool:
        """Cancel the server's active job, if any; true when it was busy. Queued jobs go with the shutdown."""
        try:
            health = connection.client.request("GET", "/health", timeout=REQUEST_SECONDS)
            active = health.get("active_job") or {}
            if active.get("job_id") and active.get("state") not in TERMINAL_STATES:
                connection.client.request("DELETE", f"/jobs/{active['job_id']}", timeout=REQUEST_SECONDS)
                return True
            return bool(health.get("busy"))
        except (RuntimeError, AttributeError):
            return True  # not answering, or answering nonsense: treat it as busy, leave the waiting to the reaper

    def _release_directory_lock(self) -> None:
        if self.directory_lock is not None:
            self.directory_lock.release()

    def detach(self) -> None:
        self.stop()

    # -- a server that died on its own -----------------------------------------------------------------------

    def _close_finished_process(self) -> None:
        process = self.process
        if process is not None and process.poll() is not None:
            self.crash_message = crash_message(process, self.log_path_factory())
            self.auto_start = False  # show ERROR; Start or Restart (or the next job) brings it back
        super()._close_finished_process()

    def poll(self, *, available: bool = True) -> float:
        interval = super().poll(available=available)
        if available and self.crash_message and self.process is None:
            self.snapshot = {"state": "ERROR", "message": self.crash_message}
        return interval

    def submit(self, job_type: str, parameters: dict) -> dict:
        submitted = super().submit(job_type, parameters)
        job_id = submitted.get("job_id")
        if not isinstance(job_id, str) or not JOB_ID.fullmatch(job_id):
            raise RuntimeError("The job server answered with an invalid job id; nothing was read from it.")
        self.job_servers[job_id] = self.connection.instance_id
        return {**submitted, "directory": str(self.job_directory(job_id))}

    def status(self, job_id: str) -> dict:
        """A job's status from the server that runs it; never starts a new server that cannot know the job.

        The job's folder is always the client's own `<storage>/jobs/<id>`, whatever the answer says.
        """
        self._require_running(job_id)
        return {**super().status(job_id), "job_id": job_id, "directory": str(self.job_directory(job_id))}

    def job_directory(self, job_id: str) -> Path:
        if not JOB_ID.fullmatch(job_id):
            raise RuntimeError(f"Not a job id: {job_id!r}.")
        return self.root() / "jobs" / job_id

    def cancel(self, job_id: str) -> dict:
        self._require_running(job_id)
        return super().cancel(job_id)

    def mark_job_complete(self, job_id: str) -> None:
        self.job_servers.pop(job_id, None)
        super().mark_job_complete(job_id)

    def _require_running(self, job_id: str) -> None:
        self._close_finished_process()
        if self.process is None:
            raise RuntimeError(self.crash_message or "The job server was stopped before the job finished.")
        started_on = self.job_servers.get(job_id)
        if started_on is not None and started_on != self.connection.instance_id:
            raise RuntimeError("The job server was restarted before the job finished.")


def listening_socket(host: str) -> socket.socket:
    """A loopback socket bound to a free port and listening, inheritable by the server process."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind((host, 0))
        listener.listen(128)
        listener.set_inheritable(True)
    except OSError:
        listener.close()
        raise
    return listener


def crash_message(process: Any, log_path: Path) -> str:
    """One sentence for an exit nobody asked for: how it ended and where its log is."""
    code = getattr(process, "returncode", None)
    if code is None:
        how = "its process ended"
    elif code < 0:
        try:
            how = f"killed by {signal.Signals(-code).name}"
        except ValueError:
            how = f"killed by signal {-code}"
    else:
        how = f"exit code {code}"
    return f"The job server stopped unexpectedly ({how}); start it again, and see {log_path} if it keeps stopping."


class ImageForgeRuntime(JobRuntime):
    """BlendJob's runtime with ImageForge's controller, for its own server and for setup and migration."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Configured exactly as JobRuntime.__init__ configures its ServerController.
        self.server = ImageForgeServerController(
            lambda port, instance_id, listen_fd=None: self._server_command(port, instance_id, listen_fd=listen_fd),
            cwd_factory=self.storage_root,
            log_path_factory=lambda: self.storage_root() / "server.log",
            creationflags=windows_creation_flags(),
            directory_lock=self.directory_lock,
            blocked=self.maintenance_busy,
        )

    def server_controller(self, root: Path) -> ImageForgeServerController:
        """The controller BlendJob's setup and migration use for a folder they already hold locked."""
        return ImageForgeServerController(
            lambda port, instance_id, listen_fd=None: self._server_command(
                port, instance_id, root=root, listen_fd=listen_fd
            ),
            cwd_factory=lambda: root,
            log_path_factory=lambda: root / "server.log",
            creationflags=windows_creation_flags(),
        )

    def _server_command(
        self, port: int, instance_id: str, *, root: Path | None = None, listen_fd: int | None = None
    ) -> list[str]:
        """ImageForge's launcher (server/launcher.py) instead of BlendJob's runner: it serves the passed socket."""
        root = self.storage_root() if root is None else Path(root)
        listen = ["--listen-fd", str(listen_fd)] if listen_fd is not None else ["--port", str(port)]
        return [
            str(environment_python(root)),
            "-u",
            str(LAUNCHER),
            "--blendjob-root",
            str(BLENDJOB_ROOT),
            "--storage-root",
            str(root),
            "--instance-id",
            instance_id,
            *listen,
            "--parent-pid",
            str(os.getpid()),
        ]
