"""Another user binds the port of a server that no longer listens (it is winding down a job after a stop, or it
died): the next client does not stop at "could not prove…", it retires that server and starts a fresh one on a
fresh socket it binds itself (openspec/0024). The squatter is a real process of `nobody` (tests/kit/squatter.py).
"""

from __future__ import annotations

import json
import os
import time

import pytest

from imageforge.client import retirement
from imageforge.client.job_runner import make_runtime
from imageforge.client.process_identity import RecordedServerProcess
from imageforge.contract.server_credentials import HANDSHAKE_PATH, read_credentials
from tests.client.job_in_flight import start_slow_download
from tests.kit.squatter import other_user, start_squatter

pytestmark = pytest.mark.slow


def squat(port: int, instance_id: str, timeout: float = 60.0):
    """Listen on `port` as soon as the server has let it go (its socket closes within a second of the request)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return start_squatter(port, instance_id)
        except OSError:
            assert time.monotonic() < deadline, f"port {port} never became free"
            time.sleep(0.1)


def test_a_squatted_port_leads_to_a_fresh_server_not_a_dead_end(imageforge_runtime, hub_models):
    """A stop asked while a job runs: the server closes its socket at once but lives until the job ends. Another
    user listens on its port meanwhile. A new client (the next `imageforge run`) finds the living server's record."""
    first = imageforge_runtime.server
    start_slow_download(imageforge_runtime, hub_models)
    old = read_credentials(hub_models.root)
    first.connection.client.request("POST", "/shutdown", timeout=2.0)  # the socket closes; the job runs on
    squatter = squat(old.port, old.instance_id)
    try:
        fresh = make_runtime(hub_models.root)
        try:
            started = time.monotonic()
            connection = fresh.server.ensure(timeout=90)
            waited = time.monotonic() - started
            assert connection.port != old.port and connection.instance_id != old.instance_id
            assert not isinstance(fresh.server.process, RecordedServerProcess)  # its own child, on its own socket
            assert fresh.server.health()["instance_id"] == connection.instance_id
            record = json.loads((hub_models.root / retirement.PROCESS_RECORD).read_text(encoding="utf-8"))
            assert record["instance_id"] == connection.instance_id
        finally:
            fresh.server.stop()
            assert retirement.wait_until_retired(hub_models.root.resolve(), timeout=30)
    finally:
        received = squatter.requests()
        squatter.stop()
    if other_user() is not None:
        assert squatter.uid != os.getuid()
    assert received and {request["path"] for request in received} == {HANDSHAKE_PATH}  # no token, no job
    assert old.token not in json.dumps(received)
    print(f"\nfresh server ready {waited:.1f} s after the squatter answered")
