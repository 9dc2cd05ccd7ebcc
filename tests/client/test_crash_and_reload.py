"""A server killed mid-job, and a server found running after an add-on reload: both through the real controller."""

from __future__ import annotations

import os
import signal

import pytest

from imageforge.client import retirement
from imageforge.client.authenticated import AuthenticatedJobClient
from imageforge.client.job_runner import make_runtime, run_job
from imageforge.client.process_identity import RecordedServerProcess
from imageforge.contract.server_credentials import ServerCredentials, read_credentials, write_credentials
from tests.client.job_in_flight import FAST_BYTES, SLOW_BYTES, start_slow_download

pytestmark = pytest.mark.slow


def test_a_killed_server_shows_error_then_start_brings_it_back_and_marks_the_job_failed(imageforge_runtime, hub_models):
    controller = imageforge_runtime.server
    run_job(imageforge_runtime, "download-model", {"model": "FAST"})
    fast_model = hub_models.model_file("fast")
    assert fast_model.read_bytes() == FAST_BYTES
    job_id = start_slow_download(imageforge_runtime, hub_models)
    killed = controller.process

    os.kill(killed.pid, signal.SIGKILL)
    killed.wait(timeout=10)

    # The job's own poll learns what happened, in one sentence; no new server is started behind its back.
    with pytest.raises(RuntimeError) as failure:
        controller.status(job_id)
    message = str(failure.value)
    assert message.startswith("The job server stopped unexpectedly (killed by SIGKILL); start it again")
    assert message.count(". ") == 0 and "\n" not in message and "Traceback" not in message
    for _ in range(2):  # the panel's poll timer: ERROR, and it stays ERROR
        controller.poll(available=True)
        assert controller.snapshot == {"state": "ERROR", "message": message}
        assert controller.process is None

    controller.enable()  # the Start button
    controller.ensure(timeout=60)
    assert controller.snapshot["state"] == "READY"
    assert controller.resource("job_folders") == {"interrupted_jobs": [job_id]}
    state = hub_models.job_state(job_id)
    assert state["state"] == "failed" and state["error"] == "The server stopped while this job was running."
    assert sorted(path.name for path in (hub_models.root / "jobs" / job_id).iterdir()) == ["job-state.json", "job.log"]
    assert fast_model.read_bytes() == FAST_BYTES  # model files intact
    assert not hub_models.model_file("slow").exists()  # nothing half-written was installed

    # The interrupted download finishes on the new server (resumed or restarted) and verifies.
    hub_models.hub.faults.clear()
    run_job(imageforge_runtime, "download-model", {"model": "SLOW"})
    assert hub_models.model_file("slow").read_bytes() == SLOW_BYTES


def test_restart_after_a_kill_brings_it_back_too(imageforge_runtime, hub_models):
    controller = imageforge_runtime.server
    first = controller.ensure(timeout=60)
    os.kill(first.pid, signal.SIGKILL)
    controller.process.wait(timeout=10)
    controller.poll(available=True)
    assert controller.snapshot["state"] == "ERROR"

    controller.restart()  # the Restart button
    second = controller.ensure(timeout=60)
    assert second.instance_id != first.instance_id and controller.snapshot["state"] == "READY"


def test_a_reloaded_add_on_recovers_its_running_server_with_the_token(hub_models):
    before = make_runtime(hub_models.root)
    running = before.server.ensure(timeout=60)
    # An add-on reload drops the old runtime without stopping its server (its lock goes with it).
    before.directory_lock.release()
    del before

    after = make_runtime(hub_models.root)
    recovered = after.server.start()
    try:
        assert (recovered.port, recovered.pid, recovered.instance_id) == (
            running.port,
            running.pid,
            running.instance_id,
        )
        assert isinstance(after.server.process, RecordedServerProcess)
        assert isinstance(recovered.client, AuthenticatedJobClient)
        assert after.server.health()["instance_id"] == running.instance_id
    finally:
        after.server.stop()
    assert retirement.wait_until_retired(hub_models.root.resolve(), timeout=20)
    assert after.server.last_retired.exit_seen_after is not None  # it really exited
    assert not (hub_models.root / "server-process.json").exists()


def test_a_reload_cannot_take_over_a_server_whose_token_it_cannot_read(hub_models):
    before = make_runtime(hub_models.root)
    running = before.server.ensure(timeout=60)
    genuine = read_credentials(hub_models.root)
    before.directory_lock.release()
    write_credentials(hub_models.root, ServerCredentials.issue(running.port, running.instance_id))  # a wrong token

    after = make_runtime(hub_models.root)
    try:
        with pytest.raises(RuntimeError, match="could not prove it is ImageForge's job server"):
            after.server.ensure(timeout=10)  # the first request finds that the token it read is not the server's
    finally:
        write_credentials(hub_models.root, genuine)
        after.server.stop()
    assert retirement.wait_until_retired(hub_models.root.resolve(), timeout=20)
    assert after.server.last_retired.exit_seen_after is not None
