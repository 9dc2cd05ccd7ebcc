"""A job's progress bar: stages with a cancellation check before each report.

Progress runs 0 → 0.1 while the model is prepared (a missing model's download fills 0 → `DOWNLOAD_END`
with its bytes and speed, below the 0.08 at which jobs read their input), 0.1 → 0.95 while the model runs
(tiles, frames), then to 1 while the result is written. Every report checks cancellation first, so a
cancelled job stops at the next tile or frame.
"""

from __future__ import annotations

import time

from ...contract.job_state import WRITING_PROGRESS
from ..job_context import JobContext

RUN_START, RUN_END, WRITING = 0.1, 0.95, WRITING_PROGRESS
DOWNLOAD_END = 0.07  # where an in-job model download ends: before "Reading input" (0.08) and RUN_START


class JobProgress:
    def __init__(self, context: JobContext):
        self.context = context
        self.started = time.perf_counter()

    def stage(self, fraction: float, message: str) -> None:
        self.context.check_cancelled()
        self.context.progress(fraction, message)

    def running(self, done: float, message: str) -> None:
        """Progress inside the model stage; `done` is the fraction of model work finished (0–1)."""
        self.stage(RUN_START + (RUN_END - RUN_START) * min(max(done, 0.0), 1.0), message)

    def writing(self) -> None:
        self.stage(WRITING, "Writing result")
