"""The BlendJob behaviour server/blendjob_compat.py relies on: fails loudly when a BlendJob release changes it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from blendjob.server import JobContext, watch_parent

from imageforge.server.blendjob_compat import job_status, process_exists, published_fraction


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


def test_the_liveness_check_tells_a_running_process_from_an_ended_one():
    assert "_process_exists" in watch_parent.__code__.co_names  # BlendJob's own use: it watches Blender with it
    assert process_exists(os.getpid()) is True
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # ended and reaped: its id names no process now
    assert process_exists(child.pid) is False
