"""A job's bar is computed from the stages it declares: their weights share 0 → WRITING_PROGRESS in order, writing
fills the rest, a download ends inside preparation, and a stage the job did not declare is a bug."""

from __future__ import annotations

import pytest

from imageforge.contract.job_state import WRITING_PROGRESS
from imageforge.server.job_steps.progress import PREPARING, READING, WRITING, JobProgress, JobStages, Stage


class Bar:
    """The two things JobProgress asks of a job's context: cancellation and a place to publish."""

    def __init__(self) -> None:
        self.published: list[tuple[float, str]] = []

    def check_cancelled(self) -> None:
        pass

    def progress(self, fraction: float, message: str) -> None:
        self.published.append((fraction, message))


RUNNING = Stage("Running", 85)


def test_weights_share_the_bar_before_writing_in_order():
    stages = JobStages(PREPARING, READING, RUNNING)
    assert stages.span(PREPARING) == pytest.approx((0.0, WRITING_PROGRESS * 8 / 95))
    assert stages.span(READING) == pytest.approx((WRITING_PROGRESS * 8 / 95, WRITING_PROGRESS * 10 / 95))
    assert stages.span(RUNNING)[1] == WRITING_PROGRESS  # exactly: the client polls faster from there
    assert stages.span(WRITING) == (WRITING_PROGRESS, 1.0)
    alone = JobStages(RUNNING)
    assert alone.span(RUNNING) == (0.0, WRITING_PROGRESS)


def test_reports_land_inside_their_stage():
    bar = Bar()
    progress = JobProgress(bar, JobStages(PREPARING, READING, RUNNING))  # type: ignore[arg-type]
    progress.enter(READING)
    progress.within(RUNNING, 0.5, "tile 1/2")
    progress.within(RUNNING, 7.0)  # clamped to the stage's end
    progress.writing("Writing depth")
    start, end = JobStages(PREPARING, READING, RUNNING).span(RUNNING)
    assert bar.published == [
        (pytest.approx(WRITING_PROGRESS * 8 / 95), "Reading input"),
        (pytest.approx((start + end) / 2), "tile 1/2"),
        (end, "Running"),
        (WRITING_PROGRESS, "Writing depth"),
    ]
    assert progress.download_end() == pytest.approx(WRITING_PROGRESS * 8 / 95 * 7 / 8)


@pytest.mark.parametrize(
    "stages",
    [(), (PREPARING, PREPARING), (Stage("Nothing", 0),), (RUNNING, WRITING)],
    ids=["none", "twice", "no weight", "writing declared"],
)
def test_malformed_stages_are_refused(stages):
    with pytest.raises(ValueError, match="distinct stages of positive weight"):
        JobStages(*stages)


def test_a_stage_the_job_did_not_declare_is_refused():
    progress = JobProgress(Bar(), JobStages(READING))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'Running' is not a stage of this job"):
        progress.enter(RUNNING)
