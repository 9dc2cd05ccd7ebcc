"""The guard in front of every endpoint of a real server subprocess: token, Host and Origin, over real HTTP.

One server serves the whole module (a start costs 1–2 s); the test that shuts it down with the right token
comes last.
"""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from imageforge.client.controller import ImageForgeServerController
from imageforge.client.job_runner import make_runtime
from imageforge.contract.server_credentials import ServerCredentials, credentials_path, read_credentials
from imageforge.server.security import LoopbackGuard
from tests.kit.server_env import install_server_environment

pytestmark = pytest.mark.slow

JOB_ID = "0" * 32  # shaped like a BlendJob job id; refused before routing, so it need not exist


@dataclass
class RunningServer:
    controller: ImageForgeServerController
    root: Path
    port: int
    token: str

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_STATE_HOME", str(tmp_path_factory.getbasetemp() / "state"))
        root = install_server_environment(tmp_path_factory.mktemp("guard") / "storage")
        controller = make_runtime(root).server
        connection = controller.ensure(timeout=120)
        yield RunningServer(controller, root, connection.port, read_credentials(root).token)
        controller.stop()


def call(
    server: RunningServer,
    method: str,
    path: str,
    *,
    token: str | None = None,
    host: str | None = None,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, bytes]:
    sent = {"Host": host or server.host, **(headers or {})}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    if body is not None:
        sent.setdefault("Content-Type", "application/json")
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        connection.request(method, path, body=body, headers=sent)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


# Every BlendJob endpoint, with a body that the endpoint accepts.
ENDPOINTS = [
    ("GET", "/health", None),
    ("POST", "/jobs", json.dumps({"job_type": "download-model", "parameters": {"model": "NOPE"}}).encode()),
    ("GET", f"/jobs/{JOB_ID}", None),
    ("DELETE", f"/jobs/{JOB_ID}", None),
    ("GET", "/resources", None),
    ("GET", "/resources/job_folders", None),
    ("POST", "/resources/job_folders/clear", None),
    ("POST", "/job-files/preview", b"{}"),
    ("POST", "/job-files/clear", json.dumps({"jobs": []}).encode()),
    ("POST", "/shutdown", None),
    ("GET", "/no-such-endpoint", None),
]
ENDPOINT_IDS = [f"{method} {path}" for method, path, _body in ENDPOINTS]


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS, ids=ENDPOINT_IDS)
def test_without_a_token_every_endpoint_answers_401_with_no_detail(server, method, path, body):
    assert call(server, method, path, body=body) == (401, b"")


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS, ids=ENDPOINT_IDS)
def test_with_a_wrong_token_every_endpoint_answers_401_with_no_detail(server, method, path, body):
    wrong = server.token[:-1] + ("A" if server.token[-1] != "A" else "B")
    assert call(server, method, path, token=wrong, body=body) == (401, b"")
    assert call(server, method, path, token="", body=body) == (401, b"")


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS, ids=ENDPOINT_IDS)
def test_with_a_foreign_host_every_endpoint_answers_403_even_with_the_token(server, method, path, body):
    for host in ("evil.example", f"evil.example:{server.port}", f"localhost:{server.port}", "127.0.0.1"):
        assert call(server, method, path, token=server.token, host=host, body=body) == (403, b""), host


def test_a_browser_style_cross_origin_shutdown_fails_and_the_server_keeps_running(server):
    browser = {"Origin": "http://evil.example", "Content-Type": "text/plain;charset=UTF-8"}
    status, body = call(server, "POST", "/shutdown", body=b"stop", headers=browser)
    assert (status, body) == (403, b"")
    # A page on the rebinding host name, or one that somehow had the token, is refused too.
    assert call(server, "POST", "/shutdown", body=b"", headers=browser, host=f"evil.example:{server.port}")[0] == 403
    assert call(server, "POST", "/shutdown", body=b"", headers=browser, token=server.token)[0] == 403
    status, health = call(server, "GET", "/health", token=server.token)
    assert status == 200 and json.loads(health)["ready"] is True


def test_with_the_token_every_endpoint_answers_as_blendjob_does(server):
    def ok(method, path, body=None):
        status, payload = call(server, method, path, token=server.token, body=body)
        return status, json.loads(payload) if payload else None

    status, health = ok("GET", "/health")
    assert status == 200 and health["instance_id"] == server.controller.connection.instance_id
    status, job = ok("POST", "/jobs", ENDPOINTS[1][2])
    assert status == 202 and len(job["job_id"]) == 32
    assert ok("GET", f"/jobs/{job['job_id']}")[0] == 200
    assert ok("DELETE", f"/jobs/{JOB_ID}") == (404, {"detail": "Active job was not found"})
    status, resources = ok("GET", "/resources")
    assert status == 200 and "job_folders" in resources
    assert ok("GET", "/resources/job_folders") == (200, {"interrupted_jobs": []})
    assert ok("POST", "/resources/job_folders/clear")[0] in {405, 409}  # reached BlendJob: not clearable / busy
    wait_until_idle(server)
    status, preview = ok("POST", "/job-files/preview", b"{}")
    assert status == 200 and job["job_id"] in preview["jobs"]
    assert ok("POST", "/job-files/clear", json.dumps({"jobs": []}).encode())[0] == 200
    assert ok("GET", "/no-such-endpoint")[0] == 404


def wait_until_idle(server: RunningServer) -> None:
    deadline = time.monotonic() + 30
    while json.loads(call(server, "GET", "/health", token=server.token)[1])["busy"]:
        assert time.monotonic() < deadline, "the refused job never finished"
        time.sleep(0.05)


def test_the_token_is_long_private_and_not_on_the_command_line(server):
    path = credentials_path(server.root)
    assert path.stat().st_mode & 0o777 == 0o600
    assert len(server.token) >= 22  # URL-safe base64: 22 characters carry 128 bits
    pid = server.controller.process.pid
    command_line = Path(f"/proc/{pid}/cmdline").read_bytes()
    environment = Path(f"/proc/{pid}/environ").read_bytes()
    assert server.token.encode() not in command_line
    assert server.token.encode() not in environment
    assert server.controller.connection.client.credentials.token == server.token


def test_the_guard_rules_on_duplicated_and_malformed_headers():
    credentials = ServerCredentials(token="t" * 43, port=4242, instance_id="x")
    guard = LoopbackGuard(None, credentials=credentials)
    host = (b"host", b"127.0.0.1:4242")
    good = (b"authorization", b"Bearer " + b"t" * 43)
    assert guard.refusal([host, good]) is None
    assert guard.refusal([host, host, good]) == 403
    assert guard.refusal([host, good, (b"origin", b"null")]) == 403
    assert guard.refusal([host, good, good]) == 401
    assert guard.refusal([host, (b"authorization", b"bearer " + b"t" * 43)]) == 401
    assert guard.refusal([host, (b"authorization", b"Bearer " + b"t" * 42)]) == 401
    assert guard.refusal([host, (b"authorization", b"t" * 43)]) == 401


def test_last_the_right_token_shuts_the_server_down(server):
    process = server.controller.process
    assert call(server, "POST", "/shutdown", token=server.token) == (202, b'{"state":"stopping"}')
    assert process.wait(timeout=15) == 0  # it exited by itself, cleanly: no SIGTERM was needed
