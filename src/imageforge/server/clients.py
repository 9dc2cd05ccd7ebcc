"""The clients attached to this server (the BlendJob resource "clients"), their jobs, and when to exit.

The server belongs to the storage root: Blender instances and CLI calls attach to it (contract.server_clients).
A watcher thread ends the lease of a client that detached, whose process is gone, or that sent no heartbeat for
`LEASE_SECONDS`, and cancels the jobs it submitted: a CLI killed by SIGKILL, or a Blender that crashed, does
not leave its job running for hours. With no client and no job for the linger time, the server exits. Every
decision is one line in server.log. `snapshot()` (served in `/health`) lists who is attached, which the
add-on's Stop uses to ask before stopping the server for other clients too.
"""

from __future__ import annotations

import contextvars
import logging
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..contract.health import ClientLease, ClientsHealth
from ..contract.server_clients import LEASE_SECONDS, ClientKind
from .blendjob_compat import process_exists

log = logging.getLogger(__name__)
WATCH_SECONDS = 0.25
FIRST_CLIENT_SECONDS = 60.0  # a new server waits at least this long for the client that started it to attach
KEPT_CANCELLATIONS = 256  # why the latest cancelled jobs were cancelled (a client asks once, when it sees it)

CURRENT_CLIENT: contextvars.ContextVar[str | None] = contextvars.ContextVar("imageforge_client", default=None)


class ServerClosingError(RuntimeError):
    """An attach that arrived after the server decided to exit: the client starts a new server instead."""


@dataclass
class AttachedClient:
    client_id: str
    pid: int
    kind: ClientKind
    attached_at: float
    last_seen: float
    jobs: set[str] = field(default_factory=set)


class ClientRegistry:
    def __init__(
        self,
        job_server: Any,
        *,
        linger: float,
        lease: float = LEASE_SECONDS,
        alive: Callable[[int], bool] = process_exists,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.job_server = job_server
        self.linger = linger
        self.lease = lease
        self._alive = alive
        self._clock = clock
        self._lock = threading.Lock()
        self._clients: dict[str, AttachedClient] = {}
        self._idle_since = clock()
        self._stopped = threading.Event()
        self._ever_attached = False
        self._closing = False  # decided to exit: attaching is refused from then on (never exit under a client)
        self._cancellations: OrderedDict[str, str] = OrderedDict()  # job id -> why, when not its own client
        self.on_change: Callable[[], None] = lambda: None  # e.g. the thread rule (who is there decides)

    # -- what clients ask ------------------------------------------------------------------------------------

    def attach(self, pid: int, kind: ClientKind) -> AttachedClient:
        now = self._clock()
        client = AttachedClient(secrets.token_hex(16), int(pid), ClientKind(kind), now, now)
        with self._lock:
            if self._closing:
                raise ServerClosingError("The job server is stopping (no client for its linger time).")
            self._clients[client.client_id] = client
            self._ever_attached = True
        log.warning("client attached: %s pid %s (%s)", client.kind.value, client.pid, client.client_id[:8])
        self.on_change()
        return client

    def seen(self, client_id: str) -> bool:
        """A heartbeat (any request carrying the client's id); False when the lease is unknown or over."""
        with self._lock:
            client = self._clients.get(client_id)
            if client is not None:
                client.last_seen = self._clock()
        return client is not None

    def own(self, client_id: str | None, job_id: str) -> None:
        with self._lock:
            client = self._clients.get(client_id or "")
            if client is not None:
                client.jobs.add(job_id)

    def detach(self, client_id: str) -> bool:
        return self._end([client_id], "detached")

    def cancelling(self, job_id: str, requester_id: str | None) -> bool:
        """Note who asks to cancel `job_id`, before the cancel (the job's client may read its end at once);
        nothing when the job's own client asked (it knows why). True when a new reason was noted, which
        `forget_cancellation` takes back if the cancel found nothing to cancel."""
        with self._lock:
            requester = self._clients.get(requester_id or "")
            if requester is not None and job_id in requester.jobs:
                return False
            if requester is not None:
                why = f"another client ({requester.kind.value}, pid {requester.pid}) cancelled it"
            else:
                why = "a program that is not attached to the job server cancelled it"
        return self._note_cancellation(job_id, why)

    def cancellation(self, job_id: str) -> str | None:
        """Why `job_id` was cancelled, when its own client did not cancel it; None otherwise."""
        with self._lock:
            return self._cancellations.get(job_id)

    def forget_cancellation(self, job_id: str) -> None:
        """The cancel found nothing to cancel (the job had ended): the reason just noted goes."""
        with self._lock:
            self._cancellations.pop(job_id, None)

    def _note_cancellation(self, job_id: str, why: str) -> bool:
        with self._lock:
            if job_id in self._cancellations:
                return False  # the first reason is the one that ended it
            self._cancellations[job_id] = why
            while len(self._cancellations) > KEPT_CANCELLATIONS:
                self._cancellations.popitem(last=False)
            return True

    def kinds(self) -> set[ClientKind]:
        with self._lock:
            return {client.kind for client in self._clients.values()}

    def snapshot(self) -> dict[str, Any]:
        now = self._clock()
        with self._lock:
            clients = tuple(
                ClientLease(c.client_id, c.pid, c.kind.value, round(now - c.attached_at, 1))
                for c in self._clients.values()
            )
            idle = 0.0 if clients else now - self._idle_since
        return ClientsHealth(clients, self.linger, round(idle, 1)).to_json()

    # -- the watcher -----------------------------------------------------------------------------------------

    def start(self) -> None:
        threading.Thread(target=self._watch, name="ImageForgeClients", daemon=True).start()

    def close(self) -> None:
        self._stopped.set()

    def _watch(self) -> None:
        while not self._stopped.wait(WATCH_SECONDS) and not self.job_server.shutdown_event.is_set():
            self.tick()

    def tick(self) -> None:
        """End expired leases (cancelling their jobs); exit after the linger time with no client and no job."""
        now = self._clock()
        with self._lock:
            gone = [c.client_id for c in self._clients.values() if not self._alive(c.pid)]
            silent = [
                c.client_id
                for c in self._clients.values()
                if now - c.last_seen > self.lease and c.client_id not in gone
            ]
        self._end(gone, "process gone")
        self._end(
            silent,
            f"no heartbeat for {self.lease:.0f} s",
            because=(
                f"the job server heard nothing from this client for {self.lease:.0f} s (a paused, stopped or "
                "overloaded process) and ended its lease"
            ),
        )
        busy = bool(self.job_server.snapshot("")["busy"])
        with self._lock:
            if self._clients or busy:
                self._idle_since = now
                return
            idle = now - self._idle_since
            linger = self.linger if self._ever_attached else max(self.linger, FIRST_CLIENT_SECONDS)
            if idle >= linger:
                self._closing = True  # decided under the lock: no attach slips in between
        if self._closing:
            log.warning("no client and no job for %.1f s (linger %.1f s): exiting", idle, linger)
            self.job_server.shutdown_event.set()

    def _end(self, client_ids: list[str], why: str, *, because: str | None = None) -> bool:
        ended = []
        with self._lock:
            for client_id in client_ids:
                client = self._clients.pop(client_id, None)
                if client is not None:
                    ended.append(client)
        if ended:
            with self._lock:
                self._idle_since = self._clock()  # the linger time counts from the last client's departure
        for client in ended:
            log.warning("client %s pid %s left (%s)", client.kind.value, client.pid, why)
            for job_id in sorted(client.jobs):
                noted = self._note_cancellation(job_id, because or f"its client's lease ended ({why})")
                if self.job_server.cancel(job_id) is not None:
                    log.warning("cancelled job %s: its client left (%s)", job_id, why)
                elif noted:  # it had ended already: no reason of ours
                    self.forget_cancellation(job_id)
        if ended:
            self.on_change()
        return bool(ended)
