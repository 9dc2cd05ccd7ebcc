"""The job-state marker has one definition, in the contract: the server writes it, the client reads it."""

from __future__ import annotations

import uuid

from imageforge.client import job_usage, retention
from imageforge.contract.job_state import FINISHED_STATES, STATE_FILE, JobState, read_state
from imageforge.server import job_folders


def test_server_and_client_share_one_reader_and_one_set_of_states():
    assert job_folders.read_state is read_state and retention.read_state is read_state
    assert job_usage.read_state is read_state and job_usage.FINISHED_STATES is FINISHED_STATES
    assert job_folders.JobState is JobState and job_folders.STATE_FILE == STATE_FILE == "job-state.json"
    assert set(JobState) - {JobState.RUNNING} == FINISHED_STATES


def test_what_the_server_writes_the_client_reads(tmp_path):
    jobs = tmp_path / "jobs"
    finished, running = (jobs / uuid.uuid4().hex for _ in range(2))
    for folder in (finished, running):
        folder.mkdir(parents=True)
    job_folders.write_state(finished, JobState.SUCCEEDED, result={"image": "image.png"})
    job_folders.write_state(running, JobState.RUNNING)

    assert read_state(finished)["state"] == "succeeded" and read_state(finished)["result"] == {"image": "image.png"}
    assert [folder.path for folder in retention.scan_job_folders(tmp_path)] == [finished]
    assert read_state(tmp_path / "missing") == {}
    (running / STATE_FILE).write_text("[1, 2]", encoding="utf-8")
    assert read_state(running) == {}
