"""What can go wrong between a client and its job server, as types (never recognised by their text).

Each is a RuntimeError: BlendJob's operators and runtime report a RuntimeError's message to the user, so every
one of these reads as one sentence in Blender, and the client's own code tells them apart by type.
"""

from __future__ import annotations


class JobServerError(RuntimeError):
    """The job server could not be used for this request; the message says why in one sentence."""


class ServerNotRunningError(JobServerError):
    """This client has no server: never started, stopped, or gone (the message is the crash sentence then)."""


class ServerUnreachableError(JobServerError):
    """No answer from the server's port: nothing listens there (`refused`), or it did not answer in time."""

    def __init__(self, message: str, *, refused: bool) -> None:
        super().__init__(message)
        self.refused = refused


class ServerIdentityError(JobServerError):
    """The process answering on the server's port could not prove it is the server; nothing was sent to it."""


class ServerAnswerError(JobServerError):
    """The server answered the request with an HTTP error; the message is its `detail`."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


class ServerReplacedError(JobServerError):
    """The server that answers is another start than the one this client (or its job) was talking to."""


class ServerStartError(JobServerError):
    """A server could not be started or attached to (the folder is in use, its server cannot be verified)."""
