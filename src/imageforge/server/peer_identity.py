"""Which local user opened a loopback connection to the server (Linux), so another user's connections are closed at
once instead of holding the server's descriptors (openspec/0024).

A TCP peer has no SO_PEERCRED, but on loopback the peer's socket is a socket of this machine, and the kernel's
sock_diag netlink interface (what `ss` uses) looks one socket up by its four addresses and reports its owner's
uid: one request and one answer per connection, no privileges needed. Elsewhere (macOS, Windows, a kernel without
sock_diag) the owner is unknown (None) and only the connection limits apply.
"""

from __future__ import annotations

import socket
import struct
import sys
import threading

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST = 1
NLMSG_ERROR = 2
ALL_STATES = 0xFFFFFFFF
NO_COOKIE = 0xFFFFFFFF
HEADER = struct.Struct("=IHHII")  # struct nlmsghdr
REQUEST = struct.Struct("=BBBBI")  # struct inet_diag_req_v2, before its socket id
UID_OFFSET = HEADER.size + 4 + 48 + 12  # inet_diag_msg: family, state, timer, retrans; id; expires, rqueue, wqueue


class PeerLookup:
    """Owner uids of loopback TCP peers, one netlink socket reused (lookups are serialised)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._socket: socket.socket | None = None
        self._sequence = 0
        self.available = sys.platform.startswith("linux")

    def owner(self, peer: tuple[str, int], local: tuple[str, int]) -> int | None:
        """The uid owning the socket at `peer` that is connected to `local` (this server's side), or None."""
        if not self.available:
            return None
        try:
            source, destination = socket.inet_aton(peer[0]), socket.inet_aton(local[0])
        except (OSError, TypeError, IndexError):
            return None  # not IPv4
        with self._lock:
            try:
                return self._ask(source, int(peer[1]), destination, int(local[1]))
            except OSError:
                self.available = False  # no sock_diag here: stop asking
                self.close()
                return None

    def _ask(self, source: bytes, sport: int, destination: bytes, dport: int) -> int | None:
        if self._socket is None:
            self._socket = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG)
            self._socket.settimeout(0.5)
        self._sequence = (self._sequence + 1) & 0xFFFFFFFF
        body = REQUEST.pack(socket.AF_INET, socket.IPPROTO_TCP, 0, 0, ALL_STATES)
        body += struct.pack("!HH", sport, dport) + source + bytes(12) + destination + bytes(12)
        body += struct.pack("=III", 0, NO_COOKIE, NO_COOKIE)
        self._socket.send(
            HEADER.pack(HEADER.size + len(body), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, self._sequence, 0) + body
        )
        while True:
            answer = self._socket.recv(8192)
            _length, kind, _flags, sequence, _pid = HEADER.unpack_from(answer)
            if sequence != self._sequence:
                continue  # an answer to an earlier request that timed out
            if kind == NLMSG_ERROR or len(answer) < UID_OFFSET + 4:
                return None  # no such socket (it closed meanwhile)
            uid: int = struct.unpack_from("=I", answer, UID_OFFSET)[0]
            return uid

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None
