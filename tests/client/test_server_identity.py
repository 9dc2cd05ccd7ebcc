"""The client authenticates the server: a squatter on its port (another user's process) learns nothing and fools
no one. The squatter is a real process over real HTTP (tests/kit/squatter.py), run as `nobody` when the tests
run as root, answering `/health` exactly as BlendJob does with the instance id it read from the process table.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest
from blendjob.controller import ServerConnection

from imageforge.client import retirement
from imageforge.client.authenticated import AuthenticatedJobClient, ServerIdentityError
from imageforge.client.job_runner import make_runtime, run_job
from imageforge.contract.server_credentials import HANDSHAKE_PATH, ServerCredentials
from tests.kit.squatter import JOB_ID, free_port, other_user, start_squatter, try_to_bind

pytestmark = pytest.mark.slow


@pytest.fixture
def runtime(server_storage):
    made = make_runtime(server_storage)
    yield made
    made.server.stop()
    assert retirement.wait_until_retired(server_storage.resolve(), timeout=20)


def test_the_servers_port_is_taken_before_its_process_exists(runtime):
    """BlendJob's runner binds its port seconds after the client chose it and showed it on the command line."""
    connection = runtime.server.start()
    attempt = try_to_bind(connection.port)  # at once, as another user: the port is the client's already
    command_line = Path(f"/proc/{connection.pid}/cmdline").read_bytes().split(b"\0")
    assert attempt == "EADDRINUSE"
    assert b"--port" not in command_line and str(connection.port).encode() not in command_line
    runtime.server.ensure(timeout=120)
    assert runtime.server.health()["instance_id"] == connection.instance_id


def test_a_squatter_on_the_servers_port_receives_neither_the_token_nor_a_job():
    """The client holds this start's credentials (its file) but another user's program answers on the port:
    after a crash, or, with BlendJob's runner, in the seconds before the real server listened."""
    port, instance_id = free_port(), uuid.uuid4().hex
    credentials = ServerCredentials.issue(port, instance_id)
    squatter = start_squatter(port, instance_id)
    try:
        client = AuthenticatedJobClient(credentials)  # what every client reading the credentials file does
        with pytest.raises(ServerIdentityError, match=r"could not prove it is ImageForge's job server"):
            client.submit("remove-background", {"image": "/home/artist/private/portrait.png"})
        with pytest.raises(ServerIdentityError):
            client.health()
    finally:
        received = squatter.requests()
        squatter.stop()
    if other_user() is not None:
        assert squatter.uid != os.getuid()  # really another user
    assert [request["path"] for request in received] == [HANDSHAKE_PATH, HANDSHAKE_PATH]
    everything = json.dumps(received)
    assert credentials.token not in everything and "authorization" not in everything.lower()
    assert "portrait.png" not in everything and all(request["body"] == "" for request in received)


def test_results_are_read_from_the_clients_own_job_folder_whatever_the_server_says(runtime, server_storage):
    """Even a server that holds the token cannot point a result into another folder."""
    port, instance_id = free_port(), uuid.uuid4().hex
    credentials = ServerCredentials.issue(port, instance_id)
    liar = start_squatter(port, instance_id, token=credentials.token)
    try:
        client = AuthenticatedJobClient(credentials)
        runtime.server.connection = ServerConnection(port, liar.process.pid, instance_id, client)
        runtime.server.process = liar.process
        with pytest.raises(RuntimeError) as failure:
            run_job(runtime, "download-model", {"model": "NOPE"})
    finally:
        runtime.server.connection = runtime.server.process = None
        received = liar.requests()
        liar.stop()
    own_folder = server_storage.resolve() / "jobs" / JOB_ID
    assert str(failure.value) == f"Job result file does not exist: {own_folder / 'stolen.png'}"
    assert any(request["path"] == f"/jobs/{JOB_ID}" for request in received)  # it did answer "succeeded"
    assert (liar.folder / "stolen.png").read_bytes() == b"not yours"
