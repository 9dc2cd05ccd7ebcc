"""How a CLI command is told to stop, turned into cancelling its job on the server.

Ctrl-C, SIGTERM and SIGHUP (what `timeout`, a closed terminal or a killed `uv run` send) ask the running job to
cancel and wait for the server to confirm; a second signal abandons the wait. If this process's parent dies
without a signal reaching it (uv killed by SIGKILL), the same happens. Killed outright, the command's lease ends
on the server, which cancels the job within a second (server/clients.py).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from types import FrameType, TracebackType

from ..client.job_runner import JobCancelledError


class TerminatedError(JobCancelledError):
    """The job was cancelled because this process was told to end (SIGTERM, SIGHUP, or its parent died)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"cancelled the job: received {signal.Signals(signum).name}.")
        self.signum = signum


class StopSignals:
    """While entered: the first stop signal is remembered (`requested()`), a second raises KeyboardInterrupt."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self.say = say
        self.received: list[int] = []
        self._previous: dict[int, object] = {}
        self._orphan_watch: threading.Event | None = None

    def requested(self) -> bool:
        return bool(self.received)

    def raise_if_terminated(self) -> None:
        """After a job ended cancelled: a SIGTERM or SIGHUP (not Ctrl-C) ends the command as that signal would."""
        if self.received and self.received[0] != signal.SIGINT:
            raise TerminatedError(self.received[0]) from None

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        if self.received:
            raise KeyboardInterrupt
        self.received.append(signum)
        self.say(f"\nCancelling… ({signal.Signals(signum).name}; again to abandon)")

    def __enter__(self) -> StopSignals:
        handled = [signal.SIGINT, signal.SIGTERM, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])]
        self._previous = {number: signal.signal(number, self._on_signal) for number in handled}
        self._orphan_watch = watch_parent(lambda: signal.raise_signal(signal.SIGTERM))
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._orphan_watch is not None:
            self._orphan_watch.set()
        for number, handler in self._previous.items():
            signal.signal(number, handler)  # type: ignore[arg-type]  # what signal.signal returned before


def watch_parent(on_orphaned: Callable[[], None], interval: float = 0.5) -> threading.Event:
    """Call `on_orphaned` once if this process is re-parented (its parent died); set the event to stop."""
    stop = threading.Event()
    parent = os.getppid()

    def watch() -> None:
        while not stop.wait(interval):
            if os.getppid() != parent:
                on_orphaned()
                return

    if parent > 1:
        threading.Thread(target=watch, name="ImageForgeParentWatch", daemon=True).start()
    return stop
