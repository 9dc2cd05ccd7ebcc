"""A job's progress bar, computed from the stages the job declares, with a cancellation check before each report.

A job declares its stages in order, each with its share of the bar (`Stage(message, weight)`), and reports where
it is in one: `progress.enter(READING)`, `progress.within(UPSCALING, tiles_done / tiles)`. No job places a
fraction itself: the declared stages share 0 → WRITING_PROGRESS in proportion to their weights, and every job
ends with WRITING, WRITING_PROGRESS → 1 (contract/job_state.py: from there the client polls faster, since only
the results are left). A missing model's download fills the first 7/8 of PREPARING with its bytes and speed
(`download_end`). Every report checks cancellation first, so a cancelled job stops at the next tile or frame.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ...contract.job_state import WRITING_PROGRESS
from ..inference import current_fraction
from ..job_context import JobContext


@dataclass(frozen=True)
class Stage:
    """One stage of a job: the message its bar shows and its share of the bar before writing (a weight)."""

    message: str
    weight: float = 1.0


PREPARING = Stage("Preparing model", 8)  # the models a job needs: downloaded when missing, then loaded
READING = Stage("Reading input", 2)
WRITING = Stage("Writing result", 0)  # every job's last stage, never declared: WRITING_PROGRESS → 1
DOWNLOAD_SHARE = 7 / 8  # of PREPARING: a download ends there, before "Loading …" and the input is read


class JobStages:
    """A job's stages in order and the part of the bar each one fills."""

    def __init__(self, *stages: Stage) -> None:
        if not stages or WRITING in stages or len(set(stages)) != len(stages) or min(s.weight for s in stages) <= 0:
            raise ValueError("a job declares one or more distinct stages of positive weight, WRITING excepted")
        total = sum(stage.weight for stage in stages)
        self._spans: dict[Stage, tuple[float, float]] = {}
        done = 0.0
        for stage in stages:
            start, done = done, done + stage.weight
            self._spans[stage] = (WRITING_PROGRESS * (start / total), WRITING_PROGRESS * (done / total))
        self._spans[WRITING] = (WRITING_PROGRESS, 1.0)

    def span(self, stage: Stage) -> tuple[float, float]:
        try:
            return self._spans[stage]
        except KeyError:
            raise ValueError(f"'{stage.message}' is not a stage of this job") from None

    def __contains__(self, stage: Stage) -> bool:
        return stage in self._spans


class JobProgress:
    def __init__(self, context: JobContext, stages: JobStages) -> None:
        self.context = context
        self.stages = stages
        self.started = time.perf_counter()

    def enter(self, stage: Stage, message: str | None = None) -> None:
        """The stage begins (its message, or `message`)."""
        self.within(stage, 0.0, message)

    def within(self, stage: Stage, done: float, message: str | None = None) -> None:
        """`done` (0–1) of `stage` is finished."""
        start, end = self.stages.span(stage)
        self._report(start + (end - start) * min(max(done, 0.0), 1.0), message or stage.message)

    def writing(self, message: str | None = None, done: float = 0.0) -> None:
        """Results are being written (the last stage of every job)."""
        self.within(WRITING, done, message)

    def here(self, message: str) -> None:
        """A message that keeps the bar where it stands (a job's second model being prepared, a warning)."""
        self._report(current_fraction(self.context), message)

    def download_end(self) -> float:
        """Where a model downloaded inside the job ends: within PREPARING, or where the bar stands."""
        if PREPARING not in self.stages:
            return current_fraction(self.context)
        start, end = self.stages.span(PREPARING)
        return start + (end - start) * DOWNLOAD_SHARE

    def _report(self, fraction: float, message: str) -> None:
        self.context.check_cancelled()
        self.context.progress(fraction, message)
