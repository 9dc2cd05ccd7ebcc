"""The shared server of a storage root, with real processes: `imageforge` children, signals, a second client.

Run with -s to see the measured latencies (they are printed, never asserted as wall-clock limits).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from imageforge.client import retirement
from imageforge.client.job_runner import make_runtime, run_job
from imageforge.client.server_lease import stop_confirmation
from imageforge.contract.health import ClientLease
from imageforge.contract.results import ResultName
from imageforge.contract.server_clients import LEASE_SECONDS, LINGER_VARIABLE, ClientKind
from imageforge.server.inference.devices import default_intra_op_threads, physical_cores
from tests.client.shared_kit import children_of, make_shared_kit, process_gone

pytestmark = pytest.mark.slow

LINGER = 2.0  # tests/conftest.py sets it for every server the tests start


@pytest.fixture
def kit(hub, server_storage, tmp_path):
    made = make_shared_kit(hub, server_storage, tmp_path)
    yield made
    pid = made.server_pid()
    if pid is not None:  # whatever a test left lingers LINGER s; make sure it is gone before the next test
        process_gone(pid, LINGER + 30)


@pytest.fixture
def here(kit, monkeypatch):
    """The kit's hub and catalog for servers started by this test process too."""
    for name in ("HF_ENDPOINT", "IMAGEFORGE_MODEL_CATALOG"):
        monkeypatch.setenv(name, kit.env[name])
    return kit


def cancelled_after(kit, started: float, timeout: float = 60.0) -> float:
    """Seconds from `started` until the one job folder reads cancelled."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        folders = kit.job_folders()
        if folders and kit.job_state(folders[-1]) == "cancelled":
            return time.monotonic() - started
        time.sleep(0.02)
    states = [kit.job_state(folder) for folder in kit.job_folders()]
    raise AssertionError(f"the job was not cancelled: {states}")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_or_sighup_of_the_cli_cancels_its_job_and_the_unused_server_exits(kit, signum):
    cli = kit.start_cli("run", "download-model", "model=SLOW")
    kit.wait_for_slow_bytes()
    sent = time.monotonic()
    cli.send_signal(signum)
    _out, err = cli.communicate(timeout=60)
    latency = cancelled_after(kit, sent)
    print(f"\n{signal.Signals(signum).name}: job cancelled {latency:.2f} s after the signal")
    assert cli.returncode == 128 + signum, err
    assert f"cancelled the job: received {signal.Signals(signum).name}." in err
    assert not (kit.root / "models" / "slow" / "onnx" / "model.onnx").exists()
    server = kit.server_pid()
    assert server is not None and process_gone(server, LINGER + 15)  # no client, no job: it exits by itself


def test_sigterm_of_a_batch_cancels_the_running_input_and_starts_no_other(kit, tmp_path):
    """`imageforge batch` stops like `run`: the running input's job is cancelled, later inputs never start, and
    the exit status is the signal's, not the per-input failure count."""
    second = tmp_path / "second.png"
    second.write_bytes(kit.image.read_bytes())
    output = tmp_path / "out"
    cli = kit.start_cli(
        "batch", "remove-background", str(kit.image), str(second), "model=SLOW", "--output", str(output)
    )
    kit.wait_for_slow_bytes()  # the first input's job is downloading its model
    sent = time.monotonic()
    cli.send_signal(signal.SIGTERM)
    out, err = cli.communicate(timeout=60)
    cancelled_after(kit, sent)
    assert cli.returncode == 128 + signal.SIGTERM, err
    assert "cancelled the job: received SIGTERM." in err
    assert out == ""  # no input reported as done or failed
    assert len(kit.job_folders()) == 1  # the second input never became a job
    assert not output.exists() or not any(output.iterdir())


def test_sigkill_of_the_cli_cancels_its_job_on_the_server_and_the_orphan_server_exits(kit):
    cli = kit.start_cli("run", "download-model", "model=SLOW")
    kit.wait_for_slow_bytes()
    server = kit.server_pid()
    sent = time.monotonic()
    cli.kill()  # nothing runs in the CLI any more: the server must notice
    cli.wait(timeout=10)
    latency = cancelled_after(kit, sent)
    assert process_gone(server, LINGER + 15)
    gone = time.monotonic() - sent
    print(
        f"\nSIGKILL of the CLI: job cancelled after {latency:.2f} s, server gone after {gone:.2f} s (linger {LINGER} s)"
    )
    log = (kit.root / "server.log").read_text(encoding="utf-8")
    assert "left (process gone)" in log and "its client left (process gone)" in log


def test_sigkill_of_the_wrapper_that_started_the_cli_cancels_the_job(kit):
    """`uv run imageforge …` killed by SIGKILL (or `timeout -s KILL`): the CLI is orphaned, not signalled."""
    wrapper = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys; subprocess.run(sys.argv[1:])",
            *kit.command("run", "download-model", "model=SLOW"),
        ],
        env=kit.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    kit.wait_for_slow_bytes()
    (cli_pid,) = children_of(wrapper.pid)
    sent = time.monotonic()
    wrapper.kill()
    wrapper.wait(timeout=10)
    latency = cancelled_after(kit, sent)
    assert process_gone(cli_pid, 30)  # the orphaned CLI cancelled its job and ended
    print(f"\nSIGKILL of the CLI's parent: job cancelled after {latency:.2f} s")


def test_two_runs_in_a_row_share_one_server_and_its_loaded_session(here):
    kit = here  # the observer below has the runs' settings: a server with other settings would be replaced
    env = {**kit.env, LINGER_VARIABLE: "60"}
    timings, pids = [], []
    try:
        for _ in range(2):
            began = time.perf_counter()
            done = subprocess.run(
                kit.command("run", "remove-background", f"input={kit.image}"), env=env, capture_output=True, text=True
            )
            timings.append(time.perf_counter() - began)
            assert done.returncode == 0, done.stderr
            pids.append(kit.server_pid())
        observer = make_runtime(kit.root)  # a third client attaches to the same server
        observer.server.ensure(timeout=60)
        health = observer.server.health()
        assert health["instance_id"] == observer.server.connection.instance_id
    finally:
        observer.server.stop()  # stop for everyone
        assert retirement.wait_until_retired(kit.root.resolve(), timeout=30)
    assert pids[0] == pids[1] == observer.server.last_retired.process.pid
    (loaded,) = health["resources"]["models"]["loaded"]
    assert loaded["model"] == "KIT_BEN2" and loaded["runs"] == 2  # the second run used the first run's session
    print(f"\nimageforge run: first {timings[0]:.2f} s (server start + session), second {timings[1]:.2f} s")


def test_two_clients_attach_to_one_server_which_outlives_the_first_and_lingers_after_the_last(here):
    kit = here
    blender = make_runtime(kit.root)
    blender.server.kind = ClientKind.BLENDER
    cli = make_runtime(kit.root)
    first = blender.server.ensure(timeout=60)
    second = cli.server.ensure(timeout=60)
    assert (second.pid, second.instance_id) == (first.pid, first.instance_id)
    clients = cli.server.health()["resources"]["clients"]["clients"]
    assert sorted((c["kind"], c["pid"]) for c in clients) == [("blender", os.getpid()), ("cli", os.getpid())]
    assert [c.kind for c in cli.server.other_clients()] == ["blender"]

    blender.server.detach()  # Blender quits: the CLI's job goes on
    result = run_job(cli, "remove-background", {"input": str(kit.image)})
    assert (
        result.file(ResultName.FOREGROUND).is_file() and result.directory == kit.root.resolve() / "jobs" / result.job_id
    )
    cli.server.detach()
    assert process_gone(first.pid, LINGER + 15)
    log = (kit.root / "server.log").read_text(encoding="utf-8")
    assert "no client and no job for" in log


def test_a_status_poll_after_the_shared_server_died_says_so_and_starts_nothing(here):
    kit = here
    runtime = make_runtime(kit.root)
    runtime.server.ensure(timeout=60)
    job_id = runtime.server.submit("download-model", {"model": "SLOW"})["job_id"]
    kit.wait_for_slow_bytes()
    killed = runtime.server.connection.pid
    os.kill(killed, signal.SIGKILL)
    runtime.server.process.wait(timeout=10)
    for _ in range(3):  # the operator's modal timer polls again and again: the same sentence, no new server
        with pytest.raises(RuntimeError, match=r"^The job server stopped unexpectedly \(killed by SIGKILL\)"):
            runtime.server.status(job_id)
    assert runtime.server.process is None and runtime.server.connection is None
    assert kit.server_pid() == killed  # nothing new was started (the record still names the dead server)


def test_a_start_while_another_process_writes_the_folder_names_it_and_what_to_do(kit):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(kit.root)], env=kit.env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        runtime = make_runtime(kit.root)
        with pytest.raises(RuntimeError) as refused:
            runtime.server.ensure(timeout=30)
    finally:
        holder.kill()
        holder.wait(timeout=10)
    message = str(refused.value)
    assert message.startswith("Cannot start the job server: ") and f"(pid {holder.pid}) is using {kit.root}" in message
    assert message.endswith("wait for it to finish or stop it, then try again.")
    assert kit.server_pid() is None  # nothing was started


def test_job_file_cleanup_goes_through_the_running_shared_server(here):
    """Through the server, the command reports what the server really deleted: a folder holding a link is kept
    (BlendJob's clear skips it) and not counted as freed, and a job cancelled while queued, whose folder holds only
    BlendJob's job.log, is deleted like any finished one."""
    kit = here
    runtime = make_runtime(kit.root)
    try:
        old = run_job(runtime, "remove-background", {"input": str(kit.image)}).directory
        age_state(old, days=90)
        linked = run_job(runtime, "remove-background", {"input": str(kit.image)}).directory
        age_state(linked, days=90)
        os.symlink(kit.image, linked / "link-to-the-photo.png")
        runtime.server.submit("download-model", {"model": "SLOW"})
        kit.wait_for_slow_bytes()
        queued = runtime.server.submit("download-model", {"model": "SLOW"})["job_id"]
        runtime.server.cancel(queued)
        for folder in kit.job_folders():  # the running download, then the queued one: both end
            if kit.job_state(folder) == "running":
                runtime.server.cancel(folder.name)
        wait_until_idle(runtime)
        assert sorted(path.name for path in (kit.root / "jobs" / queued).iterdir()) == ["job.log"]
        done = subprocess.run(
            kit.command("job-files", "--max-age-days", "30", "--max-total-gb", "0"),
            env=kit.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        clients = runtime.server.health()["resources"]["clients"]["clients"]
    finally:
        runtime.server.stop()
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"deleted {old.name}" in out and not old.exists()
    assert f"deleted {queued}" in out and not (kit.root / "jobs" / queued).exists()
    assert f"kept {linked.name}: it is or holds a link, and links are never followed" in out and linked.exists()
    assert f"deleting {linked.name}" not in out and f"deleted {linked.name}" not in out
    assert len(clients) == 1  # the command attached, cleaned up through the server, and detached


def age_state(folder, *, days: float) -> None:
    state_file = folder / "job-state.json"
    state = json.loads(state_file.read_text(encoding="utf-8"))
    state_file.write_text(json.dumps({**state, "time": time.time() - days * 86400}), encoding="utf-8")


def wait_until_idle(runtime, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while runtime.server.health().get("active_job") or runtime.server.health().get("queued_jobs"):
        assert time.monotonic() < deadline, "the server did not become idle"
        time.sleep(0.05)


HOLD_LOCK = """
import sys, time
from blendjob.storage import StorageLock
lock = StorageLock()
lock.acquire(sys.argv[1])
print("held", flush=True)
time.sleep(120)
"""


def test_stop_asks_first_only_when_someone_else_uses_the_server():
    assert stop_confirmation([]) is None
    message = stop_confirmation([ClientLease("a" * 32, 41, "blender", 1.0), ClientLease("b" * 32, 42, "cli", 2.0)])
    assert message == (
        "The server is also used by Blender (pid 41), the imageforge command (pid 42); stopping it cancels their "
        "jobs too."
    )


def test_threads_by_who_is_there_every_core_when_headless_blenders_share_with_blender(here):
    kit = here
    cli = make_runtime(kit.root)
    blender = make_runtime(kit.root)
    blender.server.kind = ClientKind.BLENDER
    try:
        headless = run_job(cli, "remove-background", {"input": str(kit.image)})
        blender.server.ensure(timeout=60)  # a Blender attaches: it gets its share of the cores back
        shared = run_job(cli, "remove-background", {"input": str(kit.image)})
        blender.server.detach()
        alone_again = run_job(cli, "remove-background", {"input": str(kit.image)})
    finally:
        cli.server.stop()

    def threads(result) -> int:
        (model,) = json.loads(result.file(ResultName.PROVENANCE).read_text(encoding="utf-8"))["models"]
        return model["intra_op_threads"]

    assert physical_cores() != default_intra_op_threads()  # else this machine cannot show the rule
    assert threads(headless) == threads(alone_again) == physical_cores()
    assert threads(shared) == default_intra_op_threads()
    log = (shared.directory / "job.log").read_text(encoding="utf-8")
    assert f"{default_intra_op_threads()} intra-op threads" in log


def test_a_cli_whose_job_another_client_cancelled_says_who(here):
    """Another client's Cancel (Blender's Esc on a shared server, a second CLI): the CLI names it and its pid.
    Before: "The job was cancelled." whoever cancelled it, as if this CLI had."""
    kit = here
    cli = kit.start_cli("run", "download-model", "model=SLOW")
    kit.wait_for_slow_bytes()
    other = make_runtime(kit.root)
    other.server.kind = ClientKind.BLENDER
    try:
        other.server.ensure(timeout=60)
        job_id = kit.job_folders()[-1].name
        other.server.cancel(job_id)
        _out, err = cli.communicate(timeout=60)
    finally:
        other.server.detach()
    assert cli.returncode == 130, err
    assert err.strip().splitlines()[-1] == (
        f"imageforge: The job was cancelled: another client (blender, pid {os.getpid()}) cancelled it."
    )


def test_a_cli_whose_lease_lapsed_while_it_was_stopped_says_so(kit):
    """A CLI stopped (SIGSTOP, a debugger, a swapped-out machine) for longer than its lease loses its job; when
    it runs again it says why instead of "The job was cancelled."."""
    cli = kit.start_cli("run", "download-model", "model=SLOW")
    kit.wait_for_slow_bytes()
    cli.send_signal(signal.SIGSTOP)
    try:
        cancelled_after(kit, time.monotonic(), timeout=LEASE_SECONDS + 30)
    finally:
        cli.send_signal(signal.SIGCONT)
    _out, err = cli.communicate(timeout=60)
    assert cli.returncode == 130, err
    assert err.strip().splitlines()[-1] == (
        f"imageforge: The job was cancelled: the job server heard nothing from this client for {LEASE_SECONDS:.0f} s "
        "(a paused, stopped or overloaded process) and ended its lease."
    )


def test_a_lingering_server_with_other_settings_is_replaced_when_nobody_uses_it(here, monkeypatch):
    """The user points the next command at a mirror while the last command's server lingers: the new command
    gets a server with its own settings. Before: it attached to the old one, which still downloaded from the
    hub the old environment named."""
    kit = here
    monkeypatch.setenv(LINGER_VARIABLE, "60")
    first = make_runtime(kit.root)
    old = first.server.ensure(timeout=60).pid
    first.server.detach()  # the command ended: its server lingers, unused
    monkeypatch.setenv("IMAGEFORGE_MODEL_MIRROR", str(kit.root.parent / "studio-models"))
    second = make_runtime(kit.root)
    try:
        new = second.server.ensure(timeout=60).pid
        assert new != old and process_gone(old, 15)
        record = json.loads((kit.root / retirement.PROCESS_RECORD).read_text(encoding="utf-8"))
        mirror = os.environ["IMAGEFORGE_MODEL_MIRROR"]
        assert record["settings"]["IMAGEFORGE_MODEL_MIRROR"] == hashlib.sha256(mirror.encode()).hexdigest()
        assert {"HF_ENDPOINT", "IMAGEFORGE_MODEL_CATALOG"} <= set(record["settings"])
        assert str(kit.root.parent) not in json.dumps(record["settings"])  # digests only, never the values
        third = make_runtime(kit.root)  # the same settings again: the same server
        assert third.server.ensure(timeout=60).pid == new
        third.server.detach()
    finally:
        second.server.stop()


def test_a_server_in_use_with_other_settings_is_refused_naming_the_setting_and_its_user(here, monkeypatch):
    kit = here
    monkeypatch.setenv(LINGER_VARIABLE, "60")
    blender = make_runtime(kit.root)
    blender.server.kind = ClientKind.BLENDER
    server = blender.server.ensure(timeout=60).pid
    try:
        monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
        cli = make_runtime(kit.root)
        with pytest.raises(RuntimeError) as refused:
            cli.server.ensure(timeout=30)
        assert str(refused.value) == (
            f"The job server of {kit.root} was started with other settings (HF_ENDPOINT differ) and is in use by "
            f"blender (pid {os.getpid()}); wait until it is unused (it then stops by itself), or use the same "
            "settings, then try again."
        )
        assert blender.server.ensure(timeout=10).pid == server  # its user goes on undisturbed
        assert kit.server_pid() == server
    finally:
        blender.server.stop()
