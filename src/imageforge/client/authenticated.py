"""BlendJob's HTTP client, made mutual: the server proves it holds the token before it is sent anything.

Another local user can read a server's port from the process table and listen on it once the real server is
gone (or, before the client bound the socket itself, before the real one listened). So every request here
opens one connection, sends a fresh random challenge to the handshake path, checks the answer against the
token (contract.server_credentials `proof`), and only then sends the token and the request, on that same
connection, with reconnection disabled: nothing (no token, no job parameters) ever reaches a process that
cannot prove it is this server start. The paths are BlendJob's JobServer's; the client is ours (BlendJob's
JobClient cannot send a header or prove the server), and so are its errors (client/server_errors.py): an HTTP
error is a ServerAnswerError with the server's `detail`, no answer a ServerUnreachableError.
"""

from __future__ import annotations

import hmac
import http.client
import json
import secrets
from typing import Any

from ..contract.server_credentials import CHALLENGE_HEADER, HANDSHAKE_PATH, PROOF_HEADER, ServerCredentials
from .server_errors import ServerAnswerError, ServerIdentityError, ServerUnreachableError

CHALLENGE_BYTES = 24
JOB_FILES_SECONDS = 60.0  # previewing or clearing job files walks every job folder


class AuthenticatedJobClient:
    """The HTTP client of one server start: its port and its token, sent only to a process that proves it.

    Besides `request`, it answers the calls BlendJob's own operators make on `connection.client`
    (client/blendjob_compat.py `CONNECTION_CLIENT_CALLS`)."""

    def __init__(self, credentials: ServerCredentials, *, host: str = "127.0.0.1", timeout: float = 2.0) -> None:
        self.timeout = timeout
        self.credentials = credentials
        self.host = host
        self.extra_headers: dict[str, str] = {}  # e.g. the attached client's id (client/attachment.py)

    def request(self, method: str, path: str, payload: Any = None, timeout: float | None = None) -> Any:
        body = None if payload is None else json.dumps(payload).encode("utf-8")
        connection = http.client.HTTPConnection(
            self.host, self.credentials.port, timeout=self.timeout if timeout is None else timeout
        )
        try:
            self._prove_server(connection)
            connection.auto_open = 0  # the request goes over the proven connection, never over a new one
            headers = {
                "Host": self.credentials.host_header,
                "Authorization": self.credentials.authorization,
                **self.extra_headers,
            }
            if body is not None:
                headers["Content-Type"] = "application/json"
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as error:
            raise ServerUnreachableError(
                f"Unable to reach Job Server: {str(error) or type(error).__name__}",
                refused=isinstance(error, ConnectionRefusedError),
            ) from error
        finally:
            connection.close()
        if response.status >= 400:
            try:
                detail = json.loads(data.decode("utf-8")).get("detail")
            except (ValueError, UnicodeDecodeError, AttributeError):
                detail = None
            raise ServerAnswerError(detail or f"Job Server returned HTTP {response.status}", status=response.status)
        return json.loads(data.decode("utf-8"))

    def health(self) -> Any:
        return self.request("GET", "/health")

    def submit(self, job_type: str, parameters: dict[str, Any]) -> Any:
        return self.request("POST", "/jobs", {"job_type": str(job_type), "parameters": dict(parameters)})

    def resource(self, name: str) -> Any:
        return self.request("GET", f"/resources/{name}")

    def clear_resource(self, name: str) -> Any:
        return self.request("POST", f"/resources/{name}/clear")

    def preview_job_files(self) -> Any:
        return self.request("POST", "/job-files/preview", {}, timeout=JOB_FILES_SECONDS)

    def clear_job_files(self, jobs: list[str]) -> Any:
        return self.request("POST", "/job-files/clear", {"jobs": list(jobs)}, timeout=JOB_FILES_SECONDS)

    def _prove_server(self, connection: http.client.HTTPConnection) -> None:
        challenge = secrets.token_urlsafe(CHALLENGE_BYTES)
        connection.request(
            "GET", HANDSHAKE_PATH, headers={"Host": self.credentials.host_header, CHALLENGE_HEADER: challenge}
        )
        response = connection.getresponse()
        response.read()
        proof = response.getheader(PROOF_HEADER) or ""
        expected = self.credentials.proof(challenge)
        if response.status != 200 or response.will_close or not hmac.compare_digest(proof, expected):
            raise ServerIdentityError(
                f"The program listening on {self.credentials.host_header} could not prove it is ImageForge's job "
                "server, so nothing was sent to it; another program (perhaps another user's) holds that port."
            )
