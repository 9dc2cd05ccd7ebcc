"""What a connection that has not shown the token may hold: nothing for long (openspec/0024).

uvicorn closes a connection only after a response (its keep-alive timeout): a connection that never sends a
request stays open for ever, and 1,200 of them from another user exhausted the server's descriptors, failing the
running job with "Too many open files". Every accepted connection here is *unproven* until a request on it carries
this start's token (server/security.py's guard marks it), and until then:

- a connection from another local user is closed at once (Linux, server/peer_identity.py: the kernel names the
  peer socket's owner; our clients are this user's processes, the only ones that can read the token);
- it has `HANDSHAKE_SECONDS` from its arrival to prove itself, then it is closed (our client proves on its first
  two requests, within milliseconds: the handshake, then the request with the token);
- at most `MAX_UNPROVEN` are open at once: a new one closes the oldest unproven one, so a flood can never starve
  a new connection of the client, which proves itself before any later arrival can push it out.
A proven connection is never closed by these rules. The listen backlog is kept small (`BACKLOG`): asyncio accepts
up to a backlog's worth of connections in one go, before any of them can be judged.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from .peer_identity import PeerLookup

log = logging.getLogger(__name__)
HANDSHAKE_SECONDS = 3.0
MAX_UNPROVEN = 32
BACKLOG = 64
KEEP_ALIVE_SECONDS = 2  # an idle proven connection between requests (uvicorn's default is 5 s)

Address = tuple[str, int]


class ConnectionGuard:
    """The unproven connections of one server, oldest first, and who was refused. Used on the event loop only."""

    def __init__(
        self,
        *,
        peers: PeerLookup | None = None,
        max_unproven: int = MAX_UNPROVEN,
        handshake_seconds: float = HANDSHAKE_SECONDS,
    ) -> None:
        self.peers = peers or PeerLookup()
        self.max_unproven = max_unproven
        self.handshake_seconds = handshake_seconds
        self.unproven: dict[Address, GuardedH11Protocol] = {}
        self.own_users = {os.geteuid(), 0} if hasattr(os, "geteuid") else set()
        self.refused_users: dict[int, int] = {}  # uid -> connections closed at once
        self.evicted = 0  # unproven connections closed to make room
        self.expired = 0  # unproven connections closed after HANDSHAKE_SECONDS

    def admit(self, protocol: GuardedH11Protocol) -> bool:
        """Take a new connection in (making room if needed), or refuse it: true when admitted."""
        client, server = protocol.client, protocol.server
        owner = self.peers.owner(client, server) if client and server else None  # type: ignore[arg-type]
        if owner is not None and owner not in self.own_users:
            self.refused_users[owner] = self.refused_users.get(owner, 0) + 1
            log.warning("closed a connection from another user (uid %s): %d so far", owner, self.refused_users[owner])
            return False
        while len(self.unproven) >= self.max_unproven:
            # The oldest that is not in the middle of a request (a request ahead of its proof is our client's
            # whose event loop turn has not come yet: the server may have been held, e.g. creating a session).
            waiting = [address for address, each in self.unproven.items() if not each.in_request()]
            oldest = waiting[0] if waiting else next(iter(self.unproven))
            self.unproven.pop(oldest).transport.abort()
            self.evicted += 1
            log.warning("closed an unproven connection to make room: %d so far", self.evicted)
        if client is not None:
            self.unproven[client] = protocol
        return True

    def proven(self, client: Address | None) -> None:
        """A request on this connection carried the token: no limit applies to it any more."""
        if client is not None:
            self.unproven.pop(tuple(client), None)  # type: ignore[arg-type]

    def expire(self, protocol: GuardedH11Protocol) -> None:
        """Close a connection still unproven after its time, unless a request on it is being answered: then it
        gets another period (a held event loop delivers the request and this deadline in the same turn)."""
        if protocol.in_request():
            protocol.arm_proof_timer()
            return
        if protocol.client is not None and self.unproven.get(protocol.client) is protocol:
            del self.unproven[protocol.client]
            protocol.transport.abort()
            self.expired += 1
            log.warning(
                "closed a connection that did not prove itself in %.0f s: %d so far",
                self.handshake_seconds,
                self.expired,
            )

    def gone(self, protocol: GuardedH11Protocol) -> None:
        if protocol.client is not None and self.unproven.get(protocol.client) is protocol:
            del self.unproven[protocol.client]

    def snapshot(self) -> dict[str, Any]:
        return {
            "unproven": len(self.unproven),
            "refused_users": dict(self.refused_users),
            "evicted": self.evicted,
            "expired": self.expired,
        }


class GuardedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with the guard's rules applied from the moment a connection is accepted."""

    guard: ConnectionGuard  # set on the subclass `protocol_class` makes

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._proof_timer: asyncio.TimerHandle | None = None
        if not self.guard.admit(self):
            transport.abort()
            return
        self.arm_proof_timer()

    def arm_proof_timer(self) -> None:
        self._proof_timer = self.loop.call_later(self.guard.handshake_seconds, self.guard.expire, self)

    def in_request(self) -> bool:
        """A request on this connection has arrived and its response is not complete."""
        cycle = getattr(self, "cycle", None)
        return cycle is not None and not cycle.response_complete

    def connection_lost(self, exc: Exception | None) -> None:
        timer = getattr(self, "_proof_timer", None)
        if timer is not None:
            timer.cancel()
        self.guard.gone(self)
        super().connection_lost(exc)


def protocol_class(guard: ConnectionGuard) -> type[GuardedH11Protocol]:
    """The protocol class for uvicorn's `http` setting, bound to `guard`."""
    return type("ImageForgeH11Protocol", (GuardedH11Protocol,), {"guard": guard})
