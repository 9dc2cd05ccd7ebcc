"""A running server started with other settings than this client's: replaced when nobody uses it, else refused.

The server takes its settings (the hub, mirror, catalog, proxy, converter indexes: contract/server_settings.py)
from its environment once, at start. A client that attaches with other values would be served with the first
client's without a word. So the client that finds such a server asks its health first (without attaching):
with no client attached and no job, it stops the server and the next start launches one with this client's
settings; otherwise it refuses in one sentence that names the settings and who uses the server, and leaves
that server and its clients alone.
"""

from __future__ import annotations

from ..contract.server_state import ServerState
from . import retirement
from .server_errors import JobServerError, ServerStartError
from .server_lease import Lease
from .server_seat import ServerSeat
from .server_status import read_health
from .server_stop import stop_server

HEALTH_SECONDS = 1.0


def replace_or_refuse(
    seat: ServerSeat, lease: Lease, differ: list[str], *, grace: float, main_thread_wait: float
) -> retirement.RetiringServer:
    """Stop the seat's recovered server when it is unused (the caller starts the next one once it is gone),
    or raise ServerStartError saying which settings differ and who uses it (the seat then holds no server)."""
    names = ", ".join(differ)
    try:
        read_health(seat, HEALTH_SECONDS)
        users = [f"{client.kind} (pid {client.pid})" for client in lease.others(seat.snapshot)]
        busy = bool(seat.snapshot.get("busy"))
        answered = True
    except JobServerError:
        users, busy, answered = [], True, False
    if not users and not busy:
        retired = stop_server(seat, grace=grace, main_thread_wait=main_thread_wait)
        seat.show(ServerState.STARTING, f"Restarting the job server with this client's settings ({names})")
        return retired
    _connection, _process, log_file = seat.take()  # not ours to use: the next start asks again
    if log_file is not None:
        log_file.close()
    who = ", ".join(users) if users else ("a running job" if answered else "a server that does not answer now")
    seat.show(ServerState.STOPPED, "The running job server has other settings")
    raise ServerStartError(
        f"The job server of {seat.root()} was started with other settings ({names} differ) and is in use by "
        f"{who}; wait until it is unused (it then stops by itself), or use the same settings, then try again."
    )
