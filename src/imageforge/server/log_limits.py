"""server.log says each thing a few times, not thousands: repeated log lines are held back and counted.

A flood of connections (or any fault that repeats in a loop) made the server write the same warning or traceback
for every event: 130–190 MB of server.log in the issue's test. `RepeatLimit` lets the first `burst` records of each
message (its logger, level, template and exception type, not its arguments) through per `window` seconds, counts
the rest, and once a window a line per message says how many were held back. The server's handlers all carry one
(`limit_repeats`, called by the launcher once uvicorn has configured logging).
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

BURST = 5
WINDOW_SECONDS = 60.0
MAX_MESSAGES = 512  # distinct messages remembered (the oldest forgotten first)
Key = tuple[str, int, str, str]


@dataclass
class _Seen:
    since: float
    count: int = 1
    held: int = 0


class RepeatLimit(logging.Filter):
    def __init__(
        self, *, burst: int = BURST, window: float = WINDOW_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.burst = burst
        self.window = window
        self.clock = clock
        self._seen: dict[Key, _Seen] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[0].__name__ if record.exc_info and record.exc_info[0] else ""
        key = (record.name, record.levelno, str(record.msg), error)
        now = self.clock()
        with self._lock:
            seen = self._seen.get(key)
            if seen is None or now - seen.since >= self.window:
                self._seen.pop(key, None)
                self._seen[key] = _Seen(now, held=seen.held if seen is not None else 0)
                while len(self._seen) > MAX_MESSAGES:
                    del self._seen[next(iter(self._seen))]
                return True
            seen.count += 1
            if seen.count <= self.burst:
                return True
            seen.held += 1
            return False

    def drain(self) -> list[tuple[str, int]]:
        """The messages held back since the last drain, with how many of each (their counts reset)."""
        with self._lock:
            held = [(key[2], seen.held) for key, seen in self._seen.items() if seen.held]
            for seen in self._seen.values():
                seen.held = 0
        return held


def report_held(handler: logging.Handler, limit: RepeatLimit, window: float) -> None:
    """Write through `handler` how many of each message `limit` held back in the last window (one line each)."""
    for message, count in limit.drain():
        line = f"[{count} more like this in {window:.0f} s were not logged] {message}"
        handler.handle(logging.LogRecord("imageforge.log_limits", logging.WARNING, __file__, 0, line, None, None))


def limit_repeats(*, burst: int = BURST, window: float = WINDOW_SECONDS) -> None:
    """Give the root logger a plain stderr handler (what Python's last-resort handler printed: the message only)
    and put a RepeatLimit on it and on every handler uvicorn configured."""
    root = logging.getLogger()
    if not root.handlers:
        plain = logging.StreamHandler(sys.stderr)
        plain.setFormatter(logging.Formatter("%(message)s"))
        plain.setLevel(logging.WARNING)
        root.addHandler(plain)
    limited: list[tuple[logging.Handler, RepeatLimit]] = []
    for name in ("", "uvicorn", "uvicorn.error", "uvicorn.access", "asyncio"):
        for handler in logging.getLogger(name).handlers:
            if not any(isinstance(each, RepeatLimit) for each in handler.filters):
                limit = RepeatLimit(burst=burst, window=window)
                handler.addFilter(limit)
                limited.append((handler, limit))

    def report_every_window() -> None:
        while True:
            time.sleep(window)
            for handler, limit in limited:
                report_held(handler, limit, window)

    threading.Thread(target=report_every_window, name="ImageForgeLogLimits", daemon=True).start()
