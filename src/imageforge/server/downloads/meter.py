"""Turn byte counts into job progress: "Downloading BEN2 Base 38% · 12.4 MB/s", a few times a second.

Why a class of its own: the numbers users read must stay honest across resumes and restarts. The fraction
counts bytes already on disk (a resumed file starts where it left off), but the speed counts only bytes
that crossed the network in the last few seconds, so a resume does not show an absurd rate and a stall
shows the rate falling. Updates are throttled because each one takes the job's lock and is polled by the
add-on; the fraction never goes backwards, even when a server ignores Range and a file starts over.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

Report = Callable[[float, str], None]  # (fraction 0..1, message)
PROGRESS_INTERVAL = 0.25  # seconds between two progress messages
SPEED_WINDOW = 3.0  # seconds of history behind the speed shown


def format_rate(bytes_per_second: float) -> str:
    if bytes_per_second >= 1e6:
        return f"{bytes_per_second / 1e6:.1f} MB/s"
    return f"{bytes_per_second / 1e3:.0f} kB/s"


class TransferMeter:
    def __init__(
        self,
        report: Report,
        *,
        total_bytes: int,
        interval: float = PROGRESS_INTERVAL,
        window: float = SPEED_WINDOW,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._report = report
        self._total = max(total_bytes, 0)
        self._interval = interval
        self._window = window
        self._clock = clock
        self._done = 0  # bytes of the files already finished
        self._label = ""
        self._received = 0  # bytes of the current file on disk
        self._baseline: int | None = None  # the current file's size on disk before this transfer's first chunk
        self._size_counted = True  # whether the current file's size is already part of the total
        self._fresh = 0  # bytes over the network since the meter started
        self._samples: deque[tuple[float, int]] = deque()
        self._last_report = float("-inf")
        self._last_fraction = 0.0
        self.reports = 0

    def start_file(self, label: str, size: int | None) -> None:
        """A new file; `size` None means unknown until the server says (it then joins the total)."""
        self._label = label
        self._received = 0
        self._baseline = None
        self._size_counted = size is not None

    def file_progress(self, received: int, size: int | None) -> None:
        """Bytes of the current file on disk so far, and its size if known by now."""
        if not self._size_counted and size is not None:
            self._total += size
            self._size_counted = True
        if self._baseline is None or received < self._received:
            self._baseline = received  # first call of a transfer, or a restart from zero
        else:
            self._fresh += received - self._received
        self._received = received
        now = self._clock()
        self._samples.append((now, self._fresh))
        while len(self._samples) > 2 and now - self._samples[1][0] >= self._window:
            self._samples.popleft()
        if now - self._last_report >= self._interval:
            self._emit(now)

    def finish_file(self, size: int) -> None:
        if not self._size_counted:
            self._total += size
        self._done += size
        self._received = 0
        self._baseline = None
        self._size_counted = True

    def speed(self) -> float | None:
        """Bytes per second over the recent window, or None before there is enough history."""
        if len(self._samples) < 2:
            return None
        (start, first), (end, last) = self._samples[0], self._samples[-1]
        return (last - first) / (end - start) if end - start >= 0.2 else None

    def fraction(self) -> float:
        if self._total <= 0:
            return self._last_fraction
        current = min((self._done + self._received) / self._total, 1.0)
        self._last_fraction = max(self._last_fraction, current)
        return self._last_fraction

    def message(self) -> str:
        text = f"Downloading {self._label} {self.fraction():.0%}"
        speed = self.speed()
        return f"{text} · {format_rate(speed)}" if speed is not None else text

    def _emit(self, now: float) -> None:
        self._last_report = now
        self.reports += 1
        self._report(self.fraction(), self.message())
