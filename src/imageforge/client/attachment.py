"""This process's lease on the shared job server: attach, heartbeat, detach (contract.server_clients).

The server belongs to the storage root and outlives any one client (openspec/0015). A client attaches once
the server answers, then a daemon thread sends a heartbeat every `HEARTBEAT_SECONDS` (re-attaching if the
server forgot it), and every request carries the client's id, so the server knows which jobs are whose. When
the lease ends (detach, this process gone, or four missed heartbeats) the server cancels this client's jobs.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading

from ..contract.server_clients import (
    CLIENT_HEADER,
    CLIENTS_PATH,
    HEARTBEAT_SECONDS,
    ClientKind,
    client_path,
    heartbeat_path,
)
from .authenticated import AuthenticatedJobClient
from .server_errors import JobServerError

REQUEST_SECONDS = 2.0


def this_process_kind() -> ClientKind:
    """Blender when `bpy` is loaded in this process (the add-on), else a headless client (the CLI)."""
    return ClientKind.BLENDER if "bpy" in sys.modules else ClientKind.CLI


class Attachment:
    """One lease: the client id the server gave, and the heartbeat thread that keeps it."""

    def __init__(self, client: AuthenticatedJobClient, instance_id: str, kind: ClientKind) -> None:
        self.client = client
        self.instance_id = instance_id
        self.kind = kind
        self.client_id = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def attach(self) -> str:
        answer = self.client.request(
            "POST", CLIENTS_PATH, {"pid": os.getpid(), "kind": self.kind.value}, timeout=REQUEST_SECONDS
        )
        if not isinstance(answer, dict) or not isinstance(answer.get("client_id"), str):
            raise JobServerError("The job server did not accept this client; restart it.")
        self.client_id = answer["client_id"]
        self.client.extra_headers[CLIENT_HEADER] = self.client_id
        if self._thread is None:
            self._thread = threading.Thread(target=self._beat, name="ImageForgeHeartbeat", daemon=True)
            self._thread.start()
        return self.client_id

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            with contextlib.suppress(JobServerError, KeyError, TypeError):  # busy or gone: the next beat tries again
                if not self.client.request("POST", heartbeat_path(self.client_id), timeout=REQUEST_SECONDS)["known"]:
                    self.attach()  # the lease had ended (this process was stopped for a while): take a new one

    def detach(self) -> None:
        """End the lease now; the server lingers for its other clients, or exits after its linger time."""
        self._stop.set()
        if self.client_id:
            with contextlib.suppress(JobServerError):
                self.client.request("DELETE", client_path(self.client_id), timeout=0.5)
        self.client.extra_headers.pop(CLIENT_HEADER, None)
