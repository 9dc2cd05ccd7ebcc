"""Who uses a job server: the attach/heartbeat protocol between clients (Blender, the CLI) and the shared server.

The server belongs to the storage root, not to the process that started it (openspec/0015). Each client
attaches (its pid and kind), sends a heartbeat every `HEARTBEAT_SECONDS` (every request it makes counts, with
`CLIENT_HEADER`), and detaches when done. The server ends a client's lease when the client detaches, when its
process is gone, or after `LEASE_SECONDS` without a heartbeat; it cancels the jobs that client submitted, and
exits once no client and no job has been there for the linger time.
"""

from __future__ import annotations

import os
from enum import StrEnum

CLIENTS_PATH = "/imageforge/clients"  # POST {pid, kind} -> {client_id, ...}
CLIENT_HEADER = "X-ImageForge-Client"  # sent with every request of an attached client: a heartbeat
HEARTBEAT_SECONDS = 5.0
LEASE_SECONDS = 20.0  # four missed heartbeats
LINGER_VARIABLE = "IMAGEFORGE_SERVER_LINGER"
DEFAULT_LINGER_SECONDS = 20.0
MAX_LINGER_SECONDS = 24 * 3600.0


class ClientKind(StrEnum):
    BLENDER = "blender"  # leaves Blender its share of the cores
    CLI = "cli"  # headless: the server may use every core


def heartbeat_path(client_id: str) -> str:
    return f"{CLIENTS_PATH}/{client_id}/heartbeat"


def client_path(client_id: str) -> str:
    return f"{CLIENTS_PATH}/{client_id}"


def cancellation_path(job_id: str) -> str:
    """GET -> {"reason": str | None}: why the server cancelled a job its client did not cancel itself (another
    client asked, or the client's lease ended), as a clause for "The job was cancelled: <reason>."."""
    return f"/imageforge/jobs/{job_id}/cancellation"


def linger_seconds(configured: float | str | None = None) -> float:
    """The linger time: `configured` (a preference), else $IMAGEFORGE_SERVER_LINGER, else 20 s; clamped."""
    raw = configured if configured is not None else os.environ.get(LINGER_VARIABLE)
    try:
        value = DEFAULT_LINGER_SECONDS if raw in (None, "") else float(raw)
    except ValueError:
        value = DEFAULT_LINGER_SECONDS
    if value != value:  # NaN
        value = DEFAULT_LINGER_SECONDS
    return min(max(value, 0.0), MAX_LINGER_SECONDS)
