"""Launch and credentials: attach to the folder's running server, or start one, one starter at a time.

The server belongs to the storage root (openspec/0015). Just before each start a fresh token is written to the
0600 credentials file the server reads at start-up, and the connection's client presents it; recovering a
running server (another client's, or ours after an add-on reload) reads the same file and the process record,
and the server proves itself on the first request (openspec/0008). On POSIX the listening socket is the
client's and passed to the server: no port is ever free between the two (openspec/0014).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from blendjob.controller import ServerConnection
from blendjob.storage import StorageLock, read_json, write_json

from ..contract.file_lock import exclusive_file_lock
from ..contract.private_storage import make_writable_private_folder
from ..contract.server_credentials import CredentialsError, ServerCredentials, read_credentials, write_credentials
from ..contract.server_settings import differing_settings, settings_fingerprint
from ..contract.server_state import ServerState
from ..contract.storage_trust import check_inside, check_server_files, check_storage_root
from . import retirement
from .authenticated import AuthenticatedJobClient
from .process_identity import ProcessIdentity, RecordedServerProcess, identity_of
from .server_errors import ServerStartError
from .server_seat import ServerSeat
from .storage_holder import holder_description

START_LOCK = ".server-start.lock"
PASS_SOCKET = os.name != "nt"  # POSIX children inherit the listening socket; Windows binds the port itself

CommandFactory = Callable[[int, str, "int | None"], list[str]]  # port, instance id, listening fd -> argv


class ServerLauncher:
    """Starts the server of a seat's folder, or finds the running one. `writer`: setup's or migration's own
    server, whose caller holds the storage lock itself."""

    def __init__(
        self,
        seat: ServerSeat,
        command_factory: CommandFactory,
        *,
        writer: bool = False,
        creationflags: int = 0,
        blocked: Callable[[], bool] | None = None,
    ) -> None:
        self.seat = seat
        self.blocked = blocked  # true while BlendJob's setup or migration changes the folder
        self.command_factory = command_factory
        self.writer = writer
        self.creationflags = creationflags
        self.settings_differ: list[str] = []  # what the last recovered server was started with otherwise

    def attach_or_launch(self) -> ServerConnection | None:
        """The folder's running server, or a new one; None while the previous one is still stopping."""
        seat, root = self.seat, self.seat.root()
        self.settings_differ = []
        with retirement.MUTEX:
            if retirement.is_retiring(root):
                seat.show(ServerState.STARTING, "Waiting for the previous server to stop")
                return None
        seat.crash_message = None
        if self.blocked is not None and self.blocked():
            seat.auto_start = False
            raise ServerStartError("Server Location is being changed")
        if seat.running():
            return seat.connection
        seat.close_process()
        seat.connection = None
        check_storage_root(root)  # before anything in it is read, created or run (openspec/0024)
        make_writable_private_folder(root)  # a read-only root is one sentence, not the start lock's OSError
        with start_lock(root):  # one starter per folder: two clients starting at once get one server
            if self.recover() is None:
                if not self.writer and storage_locked(root):
                    raise ServerStartError(
                        f"Cannot start the job server: {holder_description(root)} is using {root}; wait for it "
                        "to finish or stop it, then try again."
                    )
                self.launch()
        return seat.connection

    def launch(self) -> ServerConnection:
        """Start a server process on a socket of ours (POSIX) with fresh credentials, and record it."""
        seat, root = self.seat, self.seat.root()
        check_server_files(root)  # what it runs and reads: nobody else may have written any of it
        listener = listening_socket(seat.host) if PASS_SOCKET else None
        try:
            port = listener.getsockname()[1] if listener is not None else available_port(seat.host)
            instance_id = uuid.uuid4().hex
            log_path = seat.log_path()
            log_path.parent.mkdir(parents=True, exist_ok=True)
            seat.log_file = log_path.open("a", encoding="utf-8")
            try:
                command = self.command_factory(port, instance_id, listener.fileno() if listener else None)
                credentials = issue_credentials(root, port, instance_id)
                process = subprocess.Popen(
                    command,
                    stdout=seat.log_file,
                    stderr=subprocess.STDOUT,
                    cwd=root,
                    creationflags=self.creationflags,
                    pass_fds=(listener.fileno(),) if listener is not None else (),
                )
            except (OSError, RuntimeError):
                seat.close_process()
                raise
        finally:
            if listener is not None:
                listener.close()  # the server holds its own copy now
        seat.process = process
        identity = identity_of(process.pid)  # read at once: the start time never changes, even before exec
        write_json(
            root / retirement.PROCESS_RECORD,
            {
                "root": str(root),
                "pid": process.pid,
                "started": identity.started if identity is not None else None,
                "parent_pid": os.getpid(),
                "port": port,
                "instance_id": instance_id,
                "settings": settings_fingerprint(),  # what it took from this environment (digests only)
            },
        )
        seat.connection = ServerConnection(port, process.pid, instance_id, AuthenticatedJobClient(credentials))
        seat.show(ServerState.STARTING, "Starting", port=port)
        return seat.connection

    def recover(self) -> ServerConnection | None:
        """Connect to the folder's running server from its process record and credentials (it proves itself on
        the first request); None when no server of this folder is running."""
        seat, root = self.seat, self.seat.root()
        self.settings_differ = []
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
            raise ServerStartError(
                f"A job server (pid {process.pid}) is running for {root} but cannot be verified ({error}); "
                "end that process, then start again."
            ) from error
        if credentials.instance_id != record.get("instance_id") or credentials.port != record.get("port"):
            raise ServerStartError(
                f"A job server (pid {process.pid}) is running for {root} but its credentials belong to another "
                "start; end that process, then start again."
            )
        seat.process = process
        seat.connection = ServerConnection(
            credentials.port, process.pid, credentials.instance_id, AuthenticatedJobClient(credentials, host=seat.host)
        )
        self.settings_differ = differing_settings(record.get("settings"), settings_fingerprint())
        return seat.connection


def issue_credentials(root: Path, port: int, instance_id: str) -> ServerCredentials:
    """A fresh token for one server start, written where that server reads it at start-up."""
    credentials = ServerCredentials.issue(port, instance_id)
    try:
        write_credentials(root, credentials)
    except CredentialsError as error:
        raise ServerStartError(str(error)) from error
    return credentials


@contextlib.contextmanager
def start_lock(root: Path) -> Iterator[None]:
    """Serialise starts of one folder's server across processes (an advisory lock file in the folder)."""
    with exclusive_file_lock(root / START_LOCK):
        yield


def storage_locked(root: Path) -> bool:
    """True when another process holds the folder's storage lock (setup, migration, cleanup, or a server)."""
    lock = StorageLock()
    try:
        lock.acquire(root)
    except RuntimeError:  # BlendJob's StorageLock says "held" only this way
        return True
    lock.release()
    return False


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


def available_port(host: str) -> int:
    """A loopback port free at this moment (Windows: the server binds it itself, so another may take it first)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port
