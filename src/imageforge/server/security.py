"""BlendJob's JobServer behind a guard: only the client that started it, over loopback, may talk to it.

BlendJob's server answers any local process, and any web page that finds its port (no token, no Host check,
body-less POSTs accepted). The guard here sits in front of every route, `/health` and unknown paths included,
and leaves the BlendJob protocol otherwise unchanged:

- `Host` must be exactly `127.0.0.1:<port>` and no `Origin` may be present, else 403. A DNS-rebinding page
  sends its own host name; a cross-origin browser request always carries `Origin`; our clients send neither.
- `GET /imageforge/handshake` with a client challenge is answered before the token check: the server proves it
  holds the token (an HMAC of the challenge, in a header) so that the client sends its token and request only to
  the real server, on the same connection (openspec/0014). It reveals nothing a squatter could reuse: each
  challenge is fresh, and the answer is useless for any other one.
- `Authorization: Bearer <token>` must match the per-start token, compared in constant time, else 401 with an
  empty body (no hint about what was wrong).

The token and port come from the credentials file the client wrote just before starting this process
(contract.server_credentials); it is checked to belong to this start's instance id.
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING, Any

from blendjob import JobServer

from ..contract.server_clients import CLIENT_HEADER, CLIENTS_PATH, ClientKind, cancellation_path
from ..contract.server_credentials import (
    CHALLENGE_HEADER,
    CHALLENGE_LENGTHS,
    HANDSHAKE_PATH,
    PROOF_HEADER,
    CredentialsError,
    ServerCredentials,
    read_credentials,
)
from .click_route import add_click_route
from .clients import CURRENT_CLIENT, ClientRegistry, ServerClosingError

if TYPE_CHECKING:
    from fastapi import FastAPI

    from .connection_limits import ConnectionGuard

Scope = dict[str, Any]


class AuthenticatedJobServer(JobServer):  # type: ignore[misc]  # BlendJob ships no types: JobServer is Any
    """A JobServer whose app refuses requests without this start's token or with a foreign Host or an Origin."""

    def create_app(self, instance_id: str, storage_root: Any = None) -> Any:
        app = super().create_app(instance_id, storage_root)  # binds the storage root
        credentials = read_credentials(self.storage_root)
        if credentials.instance_id != instance_id:
            raise CredentialsError("The server credentials belong to another server start; start the server again.")
        registry = self.resources.get("clients")
        if isinstance(registry, ClientRegistry):
            add_client_routes(app, registry)
        add_click_route(app, self)  # Click Select's masks beside the queue (server/click_route.py)
        connections = getattr(self, "connection_guard", None)
        app.add_middleware(LoopbackGuard, credentials=credentials, clients=registry, connections=connections)
        return app

    def submit(self, job_type: str, parameters: dict[str, Any], *, job_id: str | None = None) -> Any:
        """BlendJob's submit, remembering which attached client asked (its jobs end with its lease)."""
        context = super().submit(job_type, parameters, job_id=job_id)
        registry = self.resources.get("clients")
        if isinstance(registry, ClientRegistry):
            registry.own(CURRENT_CLIENT.get(), context.job_id)
        return context

    def cancel(self, job_id: str) -> Any:
        """BlendJob's cancel, noting who asked when it is not the job's own client (it reads why at the end)."""
        registry = self.resources.get("clients")
        if not isinstance(registry, ClientRegistry):
            return super().cancel(job_id)
        noted = registry.cancelling(job_id, CURRENT_CLIENT.get())
        context = super().cancel(job_id)
        if context is None and noted:
            registry.forget_cancellation(job_id)
        return context


def add_client_routes(app: FastAPI, registry: ClientRegistry) -> None:
    """Attach, heartbeat and detach (contract.server_clients), behind the same guard as every route."""
    from fastapi import HTTPException

    @app.post(CLIENTS_PATH)
    def attach(payload: dict[str, Any]) -> dict[str, Any]:
        try:
            client = registry.attach(int(payload["pid"]), ClientKind(str(payload["kind"])))
        except ServerClosingError as error:  # the client waits for this process to end and starts a new one
            raise HTTPException(status_code=503, detail=str(error)) from error
        except (KeyError, TypeError, ValueError) as error:
            raise HTTPException(status_code=422, detail="Invalid client") from error
        return {"client_id": client.client_id, **registry.snapshot()}

    @app.post(CLIENTS_PATH + "/{client_id}/heartbeat")
    def heartbeat(client_id: str) -> dict[str, Any]:
        return {"known": registry.seen(client_id)}

    @app.delete(CLIENTS_PATH + "/{client_id}")
    def detach(client_id: str) -> dict[str, Any]:
        return {"detached": registry.detach(client_id)}

    @app.get(cancellation_path("{job_id}"))
    def cancellation(job_id: str) -> dict[str, Any]:
        return {"reason": registry.cancellation(job_id)}


class LoopbackGuard:
    """ASGI middleware: 403 for a foreign Host or any Origin, then 401 for a missing or wrong token."""

    def __init__(
        self,
        app: Any,
        *,
        credentials: ServerCredentials,
        clients: ClientRegistry | None = None,
        connections: ConnectionGuard | None = None,
    ) -> None:
        self.app = app
        self.credentials = credentials
        self.clients = clients
        self.connections = connections  # marks a connection proven once a request on it carries the token
        self.host = credentials.host_header.encode("latin-1")
        self.authorization = credentials.authorization.encode("latin-1")

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] not in {"http", "websocket"}:  # lifespan events pass through
            await self.app(scope, receive, send)
            return
        status = self.refusal(scope["headers"])
        if status == 401 and scope["type"] == "http" and scope["path"] == HANDSHAKE_PATH:
            status, headers = self.handshake(scope)
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        if status is None:
            if self.connections is not None:
                self.connections.proven(scope.get("client"))
            client_id = next((v for n, v in scope["headers"] if n == CLIENT_HEADER.lower().encode()), b"").decode()
            if client_id and self.clients is not None:
                self.clients.seen(client_id)  # every request of an attached client is a heartbeat
            CURRENT_CLIENT.set(client_id or None)  # copied into the route's worker thread with the context
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            headers = [(b"content-length", b"0")]
            if status == 401:
                headers.append((b"www-authenticate", b"Bearer"))
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": b""})

    def handshake(self, scope: Scope) -> tuple[int, list[tuple[bytes, bytes]]]:
        """Answer a client's challenge with the proof; the connection stays open for the client's request."""
        challenges = [value for name, value in scope["headers"] if name == CHALLENGE_HEADER.lower().encode()]
        headers = [(b"content-length", b"0")]
        if scope["method"] != "GET" or len(challenges) != 1 or len(challenges[0]) not in CHALLENGE_LENGTHS:
            return 400, headers
        try:
            challenge = challenges[0].decode("ascii")
        except UnicodeDecodeError:
            return 400, headers
        return 200, [*headers, (PROOF_HEADER.lower().encode(), self.credentials.proof(challenge).encode())]

    def refusal(self, headers: list[tuple[bytes, bytes]]) -> int | None:
        """The status to refuse with, or None to let the request through. Header names arrive lower-cased."""
        hosts = [value for name, value in headers if name == b"host"]
        if hosts != [self.host] or any(name == b"origin" for name, _value in headers):
            return 403
        tokens = [value for name, value in headers if name == b"authorization"]
        # compare_digest takes time independent of where the values differ (their length may still show).
        if len(tokens) != 1 or not hmac.compare_digest(tokens[0], self.authorization):
            return 401
        return None
