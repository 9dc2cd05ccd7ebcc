"""The states a client reports for its job server: one enum for the client's snapshot and the add-on's panels.

The client (client/controller.py) writes `{"state": ServerState..., "message": ...}` into its snapshot;
BlendJob's runtime compares the same strings ("BUSY"), which a StrEnum equals.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ServerState(StrEnum):
    UNAVAILABLE = "UNAVAILABLE"  # the environment is not installed in the storage root
    STOPPED = "STOPPED"
    STARTING = "STARTING"
    READY = "READY"
    BUSY = "BUSY"
    ERROR = "ERROR"


def server_snapshot(state: ServerState, message: str, **fields: Any) -> dict[str, Any]:
    """A snapshot of the server as a client sees it: its state, one line for the panel, and any other fields."""
    return {**fields, "state": state, "message": message}


def stopped() -> dict[str, Any]:
    return server_snapshot(ServerState.STOPPED, "Stopped")
