"""The BlendJob behaviour server/blendjob_compat.py relies on: fails loudly when a BlendJob release changes it."""

from __future__ import annotations

from pathlib import Path

from blendjob.server import JobContext

from imageforge.server.blendjob_compat import job_status, published_fraction


def test_a_real_job_context_reads_back_what_it_published(tmp_path: Path):
    context = JobContext("job", "debug-ben2", {}, {}, tmp_path, tmp_path)
    assert published_fraction(context) == 0.0
    context.progress(0.375, "Running model")
    assert published_fraction(context) == 0.375
    status = job_status(context)
    assert (status["progress"], status["message"]) == (0.375, "Running model")
    status["progress"] = 0.9  # a copy: the job's own status is untouched
    assert published_fraction(context) == 0.375


def test_a_context_without_blendjobs_status_reads_as_nothing_published():
    assert job_status(object()) == {}
    assert published_fraction(object()) == 0.0
