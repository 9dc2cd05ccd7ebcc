"""Stop: cancel the running job, ask the server to exit, and leave the waiting to a reaper (client/retirement.py).

Stop and restart never hold the caller for seconds when called on Blender's main thread; worker threads
(BlendJob's setup and migration) wait for the full exit, since they need the folder free. A restart starts the
new server once the old one is gone (the poll timer or the next `ensure()` does).
"""

from __future__ import annotations

import contextlib
import threading

from blendjob.controller import ServerConnection

from ..contract.job_state import FINISHED_STATES
from ..contract.server_state import ServerState
from . import retirement
from .process_identity import RecordedServerProcess, holds_listening_port
from .server_errors import JobServerError
from .server_lease import Lease
from .server_seat import ServerSeat

REQUEST_SECONDS = 0.5  # each of the cancel and shutdown requests a stop makes on the caller's thread
MAIN_THREAD_WAIT = 0.3  # how long a stop on the main thread waits for the exit before leaving it to a reaper


def stop_server(seat: ServerSeat, *, grace: float, main_thread_wait: float) -> retirement.RetiringServer:
    """Stop the seat's server (already recovered, if another client started it) and forget it."""
    root = seat.root()
    connection, process, log_file = seat.take()
    cancelled = False
    if connection is not None and (process is None or process.poll() is None):
        cancelled = cancel_running_job(connection)
        with contextlib.suppress(JobServerError):  # not answering: the reaper's SIGTERM and SIGKILL still end it
            connection.client.request("POST", "/shutdown", timeout=REQUEST_SECONDS)
    on_main_thread = threading.current_thread() is threading.main_thread()
    retired = retirement.retire(
        retirement.RetiringServer(
            root, process, connection.instance_id if connection is not None else None, log_file, grace=grace
        ),
        # An idle server exits within ~0.3 s: wait for that here, so the common stop is complete on return.
        # A cancelled job takes longer to wind down; waiting for it here would only hold the UI.
        wait=(0.0 if cancelled else main_thread_wait) if on_main_thread else None,
    )
    if not on_main_thread:
        retirement.wait_until_retired(root)
    seat.show(ServerState.STOPPED, "Stopped")
    return retired


def cancel_running_job(connection: ServerConnection) -> bool:
    """Cancel the server's active job, if any; true when it was busy. Queued jobs go with the shutdown."""
    try:
        health = connection.client.request("GET", "/health", timeout=REQUEST_SECONDS)
        active = health.get("active_job") or {}
        if active.get("job_id") and active.get("state") not in FINISHED_STATES:
            connection.client.request("DELETE", f"/jobs/{active['job_id']}", timeout=REQUEST_SECONDS)
            return True
        return bool(health.get("busy"))
    except (JobServerError, AttributeError):
        return True  # not answering, or answering nonsense: treat it as busy, leave the waiting to the reaper


def retire_if_unusable(
    seat: ServerSeat, lease: Lease, *, grace: float, certain: bool = False
) -> retirement.RetiringServer | None:
    """Retire the folder's running server if it cannot serve anyone: it does not hold its own port (another
    program answers there, or nothing does) though the record proves it is the server. Returns the retiring
    server (the next start, after its exit, binds a fresh socket), or None when it was kept: a server this client
    started on a socket it bound itself, or one that still holds its port (its credentials file no longer
    matches); nor, when `certain`, one whose sockets the OS does not show (only Linux does)."""
    process, connection = seat.process, seat.connection
    if not isinstance(process, RecordedServerProcess) or connection is None or process.poll() is not None:
        return None
    holds = holds_listening_port(process.pid, connection.port)
    if holds or (certain and holds is None):
        return None
    lease.end()
    seat.connection = seat.process = None
    retired = retirement.retire(
        retirement.RetiringServer(seat.root(), process, connection.instance_id, None, grace=grace), wait=0.0
    )
    seat.show(ServerState.STARTING, "The previous server no longer answers on its port")
    return retired
