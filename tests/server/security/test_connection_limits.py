"""The rules for connections that have not shown the token (server/connection_limits.py), the peer's owner read from
the kernel (server/peer_identity.py), and server.log's limit on repeated lines (server/log_limits.py). The whole
server under a real flood is tests/client/test_connection_flood.py."""

from __future__ import annotations

import logging
import socket
import subprocess

import pytest

from imageforge.server.connection_limits import ConnectionGuard
from imageforge.server.log_limits import RepeatLimit, report_held
from imageforge.server.peer_identity import PeerLookup
from tests.kit.other_user import require_other_user


class Transport:
    def __init__(self) -> None:
        self.aborted = False

    def abort(self) -> None:
        self.aborted = True


class Connection:
    """What the guard reads of uvicorn's protocol: the two addresses, the transport, whether a request is being
    answered, and its proof timer."""

    def __init__(self, port: int, *, in_request: bool = False) -> None:
        self.client = ("127.0.0.1", port)
        self.server = ("127.0.0.1", 8000)
        self.transport = Transport()
        self.request = in_request
        self.rearmed = 0

    def in_request(self) -> bool:
        return self.request

    def arm_proof_timer(self) -> None:
        self.rearmed += 1


class Owners:
    def __init__(self, owners: dict[int, int | None]) -> None:
        self.owners = owners

    def owner(self, peer, _local):
        return self.owners.get(peer[1])


def test_another_users_connection_is_refused_at_once_and_ours_admitted():
    guard = ConnectionGuard(peers=Owners({1: 65534, 2: 0, 3: None}))
    assert guard.admit(Connection(1)) is False
    assert guard.admit(Connection(2)) is True and guard.admit(Connection(3)) is True  # ours; unknown (not Linux)
    assert guard.snapshot() == {"unproven": 2, "refused_users": {65534: 1}, "evicted": 0, "expired": 0}


def test_a_new_connection_pushes_out_the_oldest_unproven_one_never_a_proven_one():
    guard = ConnectionGuard(peers=Owners({}), max_unproven=3)
    connections = [Connection(port) for port in range(10, 16)]
    for connection in connections[:3]:
        assert guard.admit(connection)
    guard.proven(connections[0].client)  # its request carried the token
    for connection in connections[3:]:
        guard.admit(connection)
    assert [c.transport.aborted for c in connections] == [False, True, True, False, False, False]
    assert list(guard.unproven) == [c.client for c in connections[3:]] and guard.evicted == 2


def test_an_unproven_connection_expires_a_proven_one_does_not():
    guard = ConnectionGuard(peers=Owners({}))
    slow, quick = Connection(20), Connection(21)
    guard.admit(slow)
    guard.admit(quick)
    guard.proven(quick.client)
    guard.expire(slow)
    guard.expire(quick)
    assert (slow.transport.aborted, quick.transport.aborted, guard.expired) == (True, False, 1)
    guard.gone(slow)
    assert guard.unproven == {}


def test_a_request_in_progress_is_neither_expired_nor_pushed_out_first():
    """An event loop held for seconds (ONNX Runtime creating a session holds the GIL) delivers a client's request
    and its deadline in the same turn: the request is answered, the deadline moved."""
    guard = ConnectionGuard(peers=Owners({}), max_unproven=2)
    answering, idle = Connection(30, in_request=True), Connection(31)
    guard.admit(answering)
    guard.admit(idle)
    guard.expire(answering)
    assert (answering.transport.aborted, answering.rearmed) == (False, 1)
    guard.admit(Connection(32))
    assert (answering.transport.aborted, idle.transport.aborted) == (False, True)


@pytest.mark.skipif(not PeerLookup().available, reason="sock_diag is Linux's")
def test_the_kernel_names_the_owner_of_a_loopback_peer():
    uid, gid = require_other_user()
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        ours = socket.create_connection(("127.0.0.1", port))
        accepted, peer = listener.accept()
        code = f"import socket,time; s=socket.create_connection(('127.0.0.1',{port})); time.sleep(5)"
        theirs = subprocess.Popen(["/usr/bin/python3.11", "-c", code], user=uid, group=gid, extra_groups=[], cwd="/")
        try:
            other, other_peer = listener.accept()
            lookup = PeerLookup()
            assert lookup.owner(peer, accepted.getsockname()) == 0
            assert lookup.owner(other_peer, other.getsockname()) == uid
            assert lookup.owner(("127.0.0.1", 1), accepted.getsockname()) is None  # no such socket
        finally:
            theirs.kill()
            theirs.wait()
            ours.close()


def test_a_repeated_line_is_logged_a_few_times_then_counted_once_a_window():
    now = [0.0]
    limit = RepeatLimit(burst=3, window=60.0, clock=lambda: now[0])

    def record(message, *args):
        return logging.LogRecord("uvicorn.error", logging.WARNING, __file__, 1, message, args, None)

    passed = [limit.filter(record("Invalid HTTP request received.")) for _ in range(1000)]
    assert passed.count(True) == 3
    assert limit.filter(record("closed %d", 1)) and limit.filter(record("closed %d", 2))  # one template, any args
    lines = []
    handler = logging.Handler()
    handler.emit = lambda r: lines.append(r.getMessage())
    report_held(handler, limit, 60.0)
    assert lines == ["[997 more like this in 60 s were not logged] Invalid HTTP request received."]
    now[0] = 61.0
    assert limit.filter(record("Invalid HTTP request received."))  # a new window
    report_held(handler, limit, 60.0)
    assert len(lines) == 1  # nothing held since
