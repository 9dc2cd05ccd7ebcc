"""How ImageForge reaches its job server: BlendJob's ServerController, with these changes.

0. Shared: the server belongs to the storage root (openspec/0015). `start()` attaches to the running server of
   the folder if there is one (after it proved itself), and starts one only otherwise, one starter at a time.
   `detach()` (the CLI at its end, Blender on quit) leaves it running for others; it exits after its linger
   time with no client and no job. `stop()` stops it for everyone.

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
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import blendjob
from blendjob.controller import ServerConnection
from blendjob.environment import environment_python
from blendjob.runtime import windows_creation_flags
from blendjob.server import TERMINAL_STATES
from blendjob.storage import StorageLock, read_json, write_json

from ..contract.errors import InputError
from ..contract.file_lock import exclusive_file_lock
from ..contract.private_storage import make_private_folder
from ..contract.segment_click import CLICK_PATH, ClickAnswer, ClickRequest
from ..contract.server_clients import ClientKind, linger_seconds
from ..contract.server_credentials import CredentialsError, ServerCredentials, read_credentials, write_credentials
from ..contract.storage_trust import UntrustedStorageError, check_inside, check_server_files, check_storage_root
from . import retirement
from .attachment import Attachment, this_process_kind
from .authenticated import AuthenticatedJobClient, ServerIdentityError, ServerUnreachableError
from .blendjob_compat import JobRuntimeHooks, ServerControllerHooks
from .process_identity import ProcessIdentity, RecordedServerProcess, holds_listening_port, identity_of
from .storage_holder import holder_description

if TYPE_CHECKING:
    from ..contract.health import ClientLease

REQUEST_SECONDS = 0.5  # each of the cancel and shutdown requests a stop makes on the caller's thread
CLICK_SECONDS = 5.0  # one Click Select prompt: the decoder and the mask's upsampling (tens of ms; seconds on a
# busy machine); the add-on sends it from a thread, so this never blocks Blender
STATUS_SECONDS = 1.0  # one job-status request; a server busy creating a session answers late (see status())
STATUS_PATIENCE = 120.0  # how long a living server may leave status unanswered before the job is given up
START_LOCK = ".server-start.lock"
MAIN_THREAD_WAIT = 0.3  # how long a stop on the main thread waits for the exit before leaving it to a reaper

JOB_ID = re.compile(r"[0-9a-f]{32}")  # BlendJob's job ids (uuid4().hex)
PASS_SOCKET = os.name != "nt"  # POSIX children inherit the listening socket; Windows binds the port itself
LAUNCHER = Path(__file__).resolve().parents[1] / "server" / "launcher.py"
BLENDJOB_ROOT = Path(blendjob.__file__).resolve().parents[1]

CommandFactory = Callable[[int, str, "int | None"], list[str]]


class ImageForgeServerController(ServerControllerHooks):
    """BlendJob's controller, authenticated, with a non-blocking stop and readable crash reports."""

    # Set by ServerController.__init__; declared here for the type checker. A process and its connection are
    # set and cleared together.
    connection: ServerConnection | None
    process: subprocess.Popen[bytes] | RecordedServerProcess | None
    log_file: TextIO | None
    snapshot: dict[str, Any]

    def __init__(
        self,
        command_factory: CommandFactory,
        *,
        kind: ClientKind | None = None,
        writer: bool = False,
        **options: Any,
    ) -> None:
        super().__init__(self._command_with_credentials, **options)
        self.kind = kind or this_process_kind()
        self.writer = writer  # setup/migration's own server: the caller holds the storage lock, not the server
        self.attachment: Attachment | None = None
        self.last_answer: dict[str, tuple[float, dict[str, Any]]] = {}  # job id -> (when, last status the server gave)
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
        """Attach to the folder's running server, or start one; None while the previous one is still stopping."""
        root = self.root()
        with retirement.MUTEX:
            if retirement.is_retiring(root):
                self.snapshot = {"state": "STARTING", "message": "Waiting for the previous server to stop"}
                return None
        self.crash_message = None
        if self.blocked is not None and self.blocked():
            self.auto_start = False
            raise RuntimeError("Server Location is being changed")
        if self.connection is not None and self.process is not None and self.process.poll() is None:
            return self.connection
        self.close_process()
        self.connection = None
        check_storage_root(root)  # before anything in it is read, created or run (openspec/0024)
        make_private_folder(root)
        with start_lock(root):  # one starter per folder: two clients starting at once get one server
            if self.recover_connection() is None:
                if not self.writer and storage_locked(root):
                    raise RuntimeError(
                        f"Cannot start the job server: {holder_description(root)} is using {root}; wait for it "
                        "to finish or stop it, then try again."
                    )
                self._launch()
        return self.connection

    def _launch(self) -> ServerConnection:
        """BlendJob's start, except that the listening socket is the client's (POSIX): no port is ever free."""
        root = self.root()
        check_server_files(root)  # what it runs and reads: nobody else may have written any of it
        listener = listening_socket(self.host) if PASS_SOCKET else None
        try:
            port = listener.getsockname()[1] if listener is not None else self.available_port()
            instance_id = uuid.uuid4().hex
            log_path = self.log_path_factory()
            log_path.parent.mkdir(parents=True, exist_ok=True)
            self.log_file = log_path.open("a", encoding="utf-8")
            try:
                command = self.command_factory(port, instance_id, listener.fileno() if listener else None)
                credentials = self.issued  # what _command_with_credentials just wrote for this command
                if credentials is None:
                    raise RuntimeError("The job server command was built without credentials.")
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
                raise
        finally:
            if listener is not None:
                listener.close()  # the server holds its own copy now
        identity = identity_of(self.process.pid)  # read at once: the start time never changes, even before exec
        write_json(
            root / retirement.PROCESS_RECORD,
            {
                "root": str(root),
                "pid": self.process.pid,
                "started": identity.started if identity is not None else None,
                "parent_pid": os.getpid(),
                "port": port,
                "instance_id": instance_id,
            },
        )
        self.connection = ServerConnection(port, self.process.pid, instance_id, AuthenticatedJobClient(credentials))
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

    def recover_connection(self) -> ServerConnection | None:
        """Connect to the folder's running server from its process record and credentials (it proves itself on
        the first request); None when no server of this folder is running."""
        root = self.root()
        if retirement.is_retiring(root):
            return None
        check_storage_root(root)
        check_inside(root, retirement.PROCESS_RECORD)
        record = read_json(root / retirement.PROCESS_RECORD)
        if record.get("root") != str(root) or not isinstance(record.get("pid"), int):
            return None
        started = record.get("started")
        identity = ProcessIdentity(record["pid"], started) if isinstance(started, str) else None
        if identity is None or identity_of(identity.pid) != identity:
            # Its server is gone (killed, crashed, a reboot), even if the pid now names another process, which is
            # never waited on or signalled; or a record of an older version, which proves nothing. Forgotten at
            # once: the next start launches a server (a live older one still holds the storage lock).
            retirement.forget_record(root, record)
            return None
        process = RecordedServerProcess(identity)
        try:
            credentials = read_credentials(root)
        except CredentialsError as error:
            raise RuntimeError(
                f"A job server (pid {process.pid}) is running for {root} but cannot be verified ({error}); "
                "end that process, then start again."
            ) from error
        if credentials.instance_id != record.get("instance_id") or credentials.port != record.get("port"):
            raise RuntimeError(
                f"A job server (pid {process.pid}) is running for {root} but its credentials belong to another "
                "start; end that process, then start again."
            )
        self.issued = credentials
        self.process = process
        self.connection = ServerConnection(
            credentials.port, process.pid, credentials.instance_id, AuthenticatedJobClient(credentials, host=self.host)
        )
        return self.connection

    # -- the lease: attach once the server answers, detach when done ------------------------------------------

    def health(self, timeout: float = 0.3) -> dict[str, Any]:
        health: dict[str, Any] = super().health(timeout=timeout)
        connection = self._connected()
        if self.attachment is None or self.attachment.instance_id != connection.instance_id:
            if self.attachment is not None:
                self.attachment.detach()
            attachment = Attachment(connection.client, connection.instance_id, self.kind)
            attachment.attach()
            self.attachment = attachment
        return health

    def ensure(self, timeout: float = 60.0) -> ServerConnection:
        """BlendJob's ensure, except that a server dying twice while starting ends it, and a server that can no
        longer serve anyone (another program answers on its port, or it stopped listening) is retired and a
        fresh one started on a fresh socket; a server that still listens but fails the proof ends it too."""
        self.auto_start = True
        deadline = time.monotonic() + timeout
        starts = 0
        while time.monotonic() < deadline:
            try:
                self.health(timeout=0.5)
                return self.connection
            except ServerIdentityError:
                if not self._retire_if_unusable():
                    raise
            except ServerUnreachableError as error:
                # Refused: nothing listens (a stopping server closes its socket first); on Windows, where a new
                # server binds its port itself, only when the OS says the server does not hold it.
                if not (error.refused and self._retire_if_unusable(certain=True)):
                    self.close_finished_process()
            except RuntimeError:
                self.close_finished_process()
            if self.process is None:
                if starts >= 2:
                    raise RuntimeError(self.crash_message or f"Server did not start; log: {self.log_path_factory()}")
                if self.start() is not None:
                    starts += 1
                    if not isinstance(self.process, subprocess.Popen):
                        continue  # attached to the folder's running server: it can answer at once
            time.sleep(0.05)
        raise RuntimeError(f"Server did not become ready; log: {self.log_path_factory()}")

    def _retire_if_unusable(self, *, certain: bool = False) -> bool:
        """Retire the folder's running server if it cannot serve anyone: it does not hold its own port (another
        program answers there, or nothing does) though the record proves it is the server. True when retired: the
        next start (after its exit) binds a fresh socket. A server this client started on a socket it bound itself,
        or one that still holds its port (its credentials file no longer matches), is not retired; nor, when
        `certain`, one whose sockets the OS does not show (only Linux does)."""
        process, connection = self.process, self.connection
        if not isinstance(process, RecordedServerProcess) or connection is None or process.poll() is not None:
            return False
        holds = holds_listening_port(process.pid, connection.port)
        if holds or (certain and holds is None):
            return False
        self._end_lease()
        self.connection = self.process = None
        self.last_retired = retirement.retire(
            retirement.RetiringServer(self.root(), process, connection.instance_id, None, grace=self.grace), wait=0.0
        )
        self.snapshot = {"state": "STARTING", "message": "The previous server no longer answers on its port"}
        return True

    def attach_running(self, timeout: float = 30.0) -> ServerConnection | None:
        """The folder's running server, attached, or None when none runs; never starts one."""
        if self.recover_connection() is None:
            return None
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.health(timeout=1.0)
                return self.connection
            except ServerIdentityError:
                raise
            except RuntimeError:
                if self.process is None or self.process.poll() is not None:
                    self.connection = self.process = None
                    return None
                if time.monotonic() >= deadline:
                    raise
            time.sleep(0.05)

    def detach(self) -> None:
        """Leave the server to its other clients: it exits by itself after its linger time if none is left."""
        self.auto_start = False
        self._end_lease()
        if self.log_file is not None:
            self.log_file.close()
        if isinstance(self.process, subprocess.Popen):  # our child: reap it when it exits, leave no zombie
            threading.Thread(target=self.process.wait, name="ImageForgeServerReaper", daemon=True).start()
        self.connection, self.process, self.log_file = None, None, None
        self.snapshot = {"state": "STOPPED", "message": "Stopped"}

    def _end_lease(self) -> None:
        attachment, self.attachment = self.attachment, None
        if attachment is not None:
            attachment.detach()

    def other_clients(self) -> list[ClientLease]:
        """The other clients attached to the server (from the last health snapshot): Stop stops theirs too."""
        from ..contract.health import ClientsHealth  # only Stop asks: kept off the CLI's start-up

        own = self.attachment.client_id if self.attachment is not None else None
        raw = (self.snapshot.get("resources") or {}).get("clients")
        try:
            listed = ClientsHealth.from_json(raw).clients if raw is not None else ()
        except InputError:
            return []  # an unreadable snapshot names nobody; the next poll brings a fresh one
        return [client for client in listed if client.client_id != own]

    # -- stop and restart, without holding the caller --------------------------------------------------------

    def stop(self, timeout: float | None = None) -> None:
        """Cancel the running job, ask the server to exit, and leave the waiting to a reaper on the main thread.

        `timeout` is accepted for BlendJob's signature; the grace period is `self.grace`.
        """
        self.auto_start = False
        self.crash_message = None
        root = self.root()
        self._end_lease()
        if self.connection is None:
            with contextlib.suppress(RuntimeError, UntrustedStorageError):  # an untrusted record names no process
                self.recover_connection()
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

    # -- a server that died on its own -----------------------------------------------------------------------

    def close_finished_process(self) -> None:
        process = self.process
        if process is not None and process.poll() is not None:
            self.crash_message = crash_message(process, self.log_path_factory())
            self.auto_start = False  # show ERROR; Start or Restart (or the next job) brings it back
        super().close_finished_process()

    def poll(self, *, available: bool = True) -> float:
        """BlendJob's panel poll, except that a living server that is slow to answer (creating a session holds
        its GIL) reads as busy instead of being "started" again, and a server that fails its proof as ERROR."""
        if available and self.connection is not None and self.process is not None and self.process.poll() is None:
            try:
                self.health(timeout=0.5)
                return 5.0
            except ServerIdentityError as error:
                if self._retire_if_unusable():
                    return 1.0  # starting anew once it has gone (when a job or Start asks for a server)
                self.snapshot = {"state": "ERROR", "message": str(error)}
                return 2.0
            except RuntimeError:
                self.snapshot = {**self.snapshot, "state": "BUSY", "message": "Busy (the server is loading a model)"}
                return 1.0
        interval: float = super().poll(available=available)
        if available and self.crash_message and self.process is None:
            self.snapshot = {"state": "ERROR", "message": self.crash_message}
        return interval

    def submit(self, job_type: str, parameters: dict[str, Any]) -> dict[str, Any]:
        submitted = super().submit(job_type, parameters)
        job_id = submitted.get("job_id")
        if not isinstance(job_id, str) or not JOB_ID.fullmatch(job_id):
            raise RuntimeError("The job server answered with an invalid job id; nothing was read from it.")
        self.job_servers[job_id] = self._connected().instance_id
        return {**submitted, "directory": str(self.job_directory(job_id))}

    def status(self, job_id: str) -> dict[str, Any]:
        """A job's status from the server that runs it, within about a second.

        Never starts a server (one that does not know the job could only say "not found"): a server that died
        reads as the crash sentence. A living server may not answer for seconds while ONNX Runtime creates a
        session (it holds the GIL throughout; openspec/0015): the last status is returned with a waiting message
        until `STATUS_PATIENCE` runs out. The job's folder is always the client's `<storage>/jobs/<id>`.
        """
        self._require_running(job_id)
        try:
            answer = self._connected().client.request("GET", f"/jobs/{job_id}", timeout=STATUS_SECONDS)
        except ServerUnreachableError as error:
            self._require_running(job_id)  # it died meanwhile: the crash sentence
            when, last = self.last_answer.setdefault(job_id, (time.monotonic(), {"state": "running", "progress": 0.0}))
            if time.monotonic() - when > STATUS_PATIENCE:
                raise RuntimeError(
                    f"The job server has not answered for {STATUS_PATIENCE:.0f} s; see {self.log_path_factory()}."
                ) from error
            answer = {**last, "message": "Waiting for the job server (it may be loading a model)"}
        else:
            self.last_answer[job_id] = (time.monotonic(), answer)
        return {**answer, "job_id": job_id, "directory": str(self.job_directory(job_id))}

    def click(self, request: ClickRequest, timeout: float = CLICK_SECONDS) -> ClickAnswer:
        """One Click Select prompt answered beside the job queue (server/click_route.py; openspec/0026). Never
        starts a server: without one it raises RuntimeError, as `status` does."""
        answer = self._connected().client.request("POST", CLICK_PATH, request.to_json(), timeout=timeout)
        return ClickAnswer.from_json(answer)

    def cancel(self, job_id: str) -> dict[str, Any]:
        self._require_running(job_id)
        answer: dict[str, Any] = self._connected().client.request("DELETE", f"/jobs/{job_id}", timeout=STATUS_SECONDS)
        return answer

    def job_directory(self, job_id: str) -> Path:
        if not JOB_ID.fullmatch(job_id):
            raise RuntimeError(f"Not a job id: {job_id!r}.")
        return self.root() / "jobs" / job_id

    def mark_job_complete(self, job_id: str) -> None:
        self.job_servers.pop(job_id, None)
        self.last_answer.pop(job_id, None)
        super().mark_job_complete(job_id)

    def _require_running(self, job_id: str) -> None:
        self.close_finished_process()
        if self.process is None:
            raise RuntimeError(self.crash_message or "The job server was stopped before the job finished.")
        started_on = self.job_servers.get(job_id)
        if started_on is not None and started_on != self._connected().instance_id:
            raise RuntimeError("The job server was restarted before the job finished.")

    def _connected(self) -> ServerConnection:
        """The current connection (set with the process), or BlendJob's own error when there is none."""
        if self.connection is None:
            raise RuntimeError("Server is not running")
        return self.connection


@contextlib.contextmanager
def start_lock(root: Path) -> Any:
    """Serialise starts of one folder's server across processes (an advisory lock file in the folder)."""
    with exclusive_file_lock(root / START_LOCK):
        yield


def storage_locked(root: Path) -> bool:
    """True when another process holds the folder's storage lock (setup, migration, cleanup, or a server)."""
    lock = StorageLock()
    try:
        lock.acquire(root)
    except RuntimeError:
        return True
    lock.release()
    return False


def stop_confirmation(others: list[ClientLease]) -> str | None:
    """What Stop asks when other clients use the server (None: nobody else, stop at once)."""
    if not others:
        return None
    names = ", ".join(
        f"{'Blender' if client.kind == ClientKind.BLENDER.value else 'the imageforge command'} (pid {client.pid})"
        for client in others
    )
    return f"The server is also used by {names}; stopping it cancels their jobs too."


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


class ImageForgeRuntime(JobRuntimeHooks):
    """BlendJob's runtime with ImageForge's controller, for its own server and for setup and migration."""

    def __init__(self, *args: Any, linger: Callable[[], float | None] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.linger = linger or (lambda: None)  # the add-on's preference; None: $IMAGEFORGE_SERVER_LINGER or 20 s

        def command(port: int, instance_id: str, listen_fd: int | None = None) -> list[str]:
            return self.server_command(port, instance_id, listen_fd=listen_fd)

        # Configured exactly as JobRuntime.__init__ configures its ServerController.
        self.server = ImageForgeServerController(
            command,
            cwd_factory=self.storage_root,
            log_path_factory=lambda: self.storage_root() / "server.log",
            creationflags=windows_creation_flags(),
            directory_lock=self.directory_lock,
            blocked=self.maintenance_busy,
        )

    def operator_classes(self) -> tuple[Any, ...]:
        """BlendJob's operators; Stop asks first when other Blender instances or commands use the server."""
        classes: tuple[Any, ...] = super().operator_classes()
        runtime = self
        for operator in classes:
            if operator.bl_idname == f"{self.namespace}.stop_server" and "invoke" not in operator.__dict__:

                def invoke(operator_self: Any, context: Any, event: Any) -> set[str]:
                    message = stop_confirmation(runtime.server.other_clients())
                    if message is None:
                        executed: set[str] = operator_self.execute(context)
                        return executed
                    confirmed: set[str] = context.window_manager.invoke_confirm(
                        operator_self, event, title="Stop the Job Server?", message=message, confirm_text="Stop"
                    )
                    return confirmed

                operator.invoke = invoke
        return classes

    def setup_controller(self, target: Any = None, **options: Any) -> Any:
        """BlendJob's setup, refused before it validates (runs) an environment or installs into a folder that
        another user owns or can write (openspec/0024)."""
        check_server_files(self.storage_root() if target is None else Path(target).expanduser())
        return super().setup_controller(target, **options)

    def migrate_controller(self, target: Any) -> Any:
        """BlendJob's migration, refused into a folder that another user owns or can write."""
        if str(target).strip():
            check_storage_root(Path(target).expanduser())
        return super().migrate_controller(target)

    def server_controller(self, root: Path) -> ImageForgeServerController:
        """The controller BlendJob's setup and migration use for a folder they already hold locked."""

        def command(port: int, instance_id: str, listen_fd: int | None = None) -> list[str]:
            return self.server_command(port, instance_id, root=root, listen_fd=listen_fd, hold_lock=False)

        return ImageForgeServerController(
            command,
            writer=True,
            cwd_factory=lambda: root,
            log_path_factory=lambda: root / "server.log",
            creationflags=windows_creation_flags(),
        )

    def server_command(
        self,
        port: int,
        instance_id: str,
        *,
        root: Path | None = None,
        listen_fd: int | None = None,
        hold_lock: bool = True,
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
            "--linger",
            str(linger_seconds(self.linger())),
            *(["--hold-storage-lock"] if hold_lock else []),
        ]
