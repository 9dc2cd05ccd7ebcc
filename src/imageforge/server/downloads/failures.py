"""How a download can fail, sorted by what the caller should do next.

The kind decides the recovery, so it is carried by the type rather than parsed from a message:
- `SourceUnreachable`: the network path to this source is broken (no connection, a timeout, a 5xx). The
  `.part` is kept; the caller moves to the mirror and stays there.
- `TransferBroken` (a `SourceUnreachable`): the source answered, then the transfer broke or ended early, even
  inside the first chunk. The source is reachable: the caller resumes the `.part` from it with a Range
  request, a bounded number of times with backoff (install.py), before treating it as unreachable. A source
  that went silent for the whole idle timeout without sending anything is not retried (the wait was paid).
- `SourceRefused`: the source answered but will not serve this file (404, 403). Try the next source for
  this file only; the hub stays the first choice for the others.
- `FileRejected`: the bytes arrived but are wrong (size or SHA-256). The file is deleted; never retried
  silently, because a second copy of the same bad bytes would waste the user's bandwidth.
- `DownloadCancelled`: the job was cancelled between chunks; the `.part` is kept for the next attempt.
"""

from __future__ import annotations

from ...contract import ModelUnavailableError


class DownloadCancelled(Exception):
    """Raised between chunks when the job was cancelled; partial files are kept for resuming."""


class SourceUnreachable(ModelUnavailableError):
    """The source could not be contacted, or stopped answering mid-transfer."""


class TransferBroken(SourceUnreachable):
    """The source answered, then the transfer broke: resuming from the same source is worthwhile."""

    def __init__(self, message: str, *, progressed: bool = False, stalled: bool = False):
        super().__init__(message)
        self.progressed = progressed  # the `.part` grew before the break
        self.stalled = stalled  # it went silent for the whole idle timeout (rather than closing or resetting)

    @property
    def worth_retrying(self) -> bool:
        """A drop is retried; a source silent for the whole idle timeout is only when bytes were flowing."""
        return self.progressed or not self.stalled


class SourceRefused(ModelUnavailableError):
    """The source answered with an HTTP error for this one file."""

    def __init__(self, message: str, *, status: int):
        super().__init__(message)
        self.status = status


class FileRejected(ModelUnavailableError):
    """The downloaded bytes do not match the declared size or SHA-256; the file was deleted."""


def cannot_reach(host: str, name: str, error: BaseException) -> SourceUnreachable:
    return SourceUnreachable(f"Cannot reach {host} for {name} ({short_reason(error)}).")


def server_failed(host: str, name: str, status: int) -> SourceUnreachable:
    return SourceUnreachable(f"{host} failed to serve {name} (HTTP {status}).")


def broke_off(host: str, name: str, received: int, error: BaseException, *, progressed: bool) -> TransferBroken:
    reason = short_reason(error)
    return TransferBroken(
        f"{name}: the connection to {host} broke after {received} bytes ({reason})",
        progressed=progressed,
        stalled=reason == "timed out",
    )


def ended_early(host: str, name: str, received: int, *, progressed: bool) -> TransferBroken:
    return TransferBroken(f"{name}: {host} ended the transfer after {received} bytes", progressed=progressed)


def gave_up(error: TransferBroken, tries: int) -> TransferBroken:
    """The last break of `tries` in a row without progress: the job fails, the `.part` stays for the next one."""
    return TransferBroken(
        f"{str(error).rstrip('.')}, {tries} times in a row; the part downloaded so far is kept and the next "
        "download resumes it."
    )


MAX_REDIRECTS = 10  # the hub redirects a file once (to its CDN); more than this many is a loop


def redirect_loop(host: str, name: str, error: BaseException | None = None, *, status: int = 302) -> SourceRefused:
    """A source whose redirects never end: the next source is tried for this file."""
    response = getattr(error, "response", None)
    return SourceRefused(
        f"{name}: {host} redirected the download more than {MAX_REDIRECTS} times (a redirect loop); "
        "nothing was downloaded from it.",
        status=response.status_code if response is not None else status,
    )


def refused(host: str, name: str, status: int, hint: str = "") -> SourceRefused:
    return SourceRefused(f"{name} is not available from {host} (HTTP {status}){hint}.", status=status)


def short_reason(error: BaseException) -> str:
    """A short cause for a one-sentence message: 'timed out', 'connection refused', ..."""
    text = str(error).lower()
    for needle, reason in (
        ("timed out", "timed out"),
        ("timeout", "timed out"),
        ("refused", "connection refused"),
        ("name or service", "unknown host"),
        ("nodename", "unknown host"),
        ("getaddrinfo", "unknown host"),
        ("proxy", "proxy error"),
        ("reset", "connection reset"),
        ("incomplete", "connection closed early"),
        ("ssl", "TLS error"),
    ):
        if needle in text:
            return reason
    return type(error).__name__
