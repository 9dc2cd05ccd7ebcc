"""BlendJob's HTTP client, presenting the server start's token on every request.

BlendJob's JobClient builds its `Request` inside `request()`, with no hook for headers, but sends every request
through its own urllib opener; the opener's default headers are where the token goes. urllib adds them as
unredirected headers, so a redirect could never carry the token elsewhere. The Host header urllib sends
(`127.0.0.1:<port>`) is the one the server's guard expects. The rest of the protocol is BlendJob's.
"""

from __future__ import annotations

from blendjob.client import JobClient

from ..contract.server_credentials import ServerCredentials


class AuthenticatedJobClient(JobClient):
    """A JobClient for one server start: its port and its token."""

    def __init__(self, credentials: ServerCredentials, *, host: str = "127.0.0.1", timeout: float = 2.0) -> None:
        super().__init__(host, credentials.port, timeout=timeout)
        self.credentials = credentials
        self.opener.addheaders = [
            *[(name, value) for name, value in self.opener.addheaders if name.lower() != "authorization"],
            ("Authorization", credentials.authorization),
        ]
