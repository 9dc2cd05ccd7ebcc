"""A pid is the server only when proven: after `kill -9` and pid reuse, Stop and Restart never signal the process
that now has the pid, the stale record is forgotten at once, and a new server starts (client/process_identity.py,
openspec/0024). The unrelated process runs as another user (`nobody`) when the tests run as root."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from imageforge.client import retirement
from imageforge.client.job_runner import make_runtime
from imageforge.client.process_identity import ProcessIdentity, RecordedServerProcess, identity_of
from imageforge.contract.server_credentials import ServerCredentials, credentials_path, write_credentials
from tests.kit.other_user import other_user
from tests.kit.squatter import free_port

linux = pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads /proc")


def stranger() -> subprocess.Popen:
    """An unrelated long-running process (another user's when possible): what the reused pid now names."""
    user = other_user()
    options = {"user": user[0], "group": user[1], "extra_groups": []} if user else {}
    return subprocess.Popen(["sleep", "300"], cwd="/", **options)


@pytest.fixture
def unrelated():
    process = stranger()
    yield process
    process.kill()
    process.wait(timeout=10)


@linux
def test_a_recorded_process_is_followed_and_signalled_only_while_proven(unrelated):
    identity = identity_of(unrelated.pid)
    assert identity is not None and identity_of(os.getpid()) != identity
    reused = ProcessIdentity(unrelated.pid, identity.started + "0")  # the record of a process that had this pid
    assert RecordedServerProcess(reused).poll() == 0  # not proven: reads as ended, never waited on
    assert RecordedServerProcess(reused).terminate() is False
    assert RecordedServerProcess(reused).kill() is False
    time.sleep(0.2)
    assert unrelated.poll() is None
    proven = RecordedServerProcess(identity)
    assert proven.poll() is None
    assert proven.terminate() is True
    assert unrelated.wait(timeout=10) == -signal.SIGTERM


@linux
def test_a_zombie_has_exited():
    child = subprocess.Popen(["true"])
    deadline = time.monotonic() + 10
    while Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert identity_of(child.pid) is None  # a pid check by kill(pid, 0) would call it alive
    child.wait()


def leftover_of_a_killed_server(root: Path, pid: int) -> dict:
    """What `kill -9` of a server leaves: its record and credentials; the record's pid now names `pid`."""
    instance_id = uuid.uuid4().hex
    credentials = ServerCredentials.issue(free_port(), instance_id)
    write_credentials(root, credentials)
    record = {
        "root": str(root.resolve()),
        "pid": pid,
        "started": "the start time of the process that had this pid before",
        "parent_pid": 1,
        "port": credentials.port,
        "instance_id": instance_id,
    }
    (root / retirement.PROCESS_RECORD).write_text(json.dumps(record), encoding="utf-8")
    return record


@pytest.fixture
def runtime(server_storage):
    made = make_runtime(server_storage)
    yield made
    made.server.stop()
    assert retirement.wait_until_retired(server_storage.resolve(), timeout=30)


@pytest.mark.slow
def test_stop_after_kill_9_and_pid_reuse_signals_nothing_and_forgets_the_record(runtime, server_storage, unrelated):
    leftover_of_a_killed_server(server_storage, unrelated.pid)
    runtime.server.stop()
    assert retirement.wait_until_retired(server_storage.resolve(), timeout=30)  # its reaper had SIGTERMed the pid
    assert unrelated.poll() is None
    assert not (server_storage / retirement.PROCESS_RECORD).exists()
    assert not credentials_path(server_storage).exists()


@pytest.mark.slow
def test_restart_after_kill_9_and_pid_reuse_starts_a_server_and_leaves_the_stranger(runtime, server_storage, unrelated):
    record = leftover_of_a_killed_server(server_storage, unrelated.pid)
    runtime.server.restart()
    connection = runtime.server.ensure(timeout=120)
    assert connection.instance_id != record["instance_id"] and connection.pid != unrelated.pid
    assert unrelated.poll() is None


@pytest.mark.slow
def test_a_run_after_kill_9_and_pid_reuse_starts_a_new_server_at_once(runtime, server_storage, unrelated):
    """A real server is killed (-9) and its pid reused: the next client (a new CLI) starts a fresh server instead
    of waiting 120 s for the stranger to answer ("Server did not become ready")."""
    runtime.server.ensure(timeout=120)
    killed = runtime.server.process
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=10)
    record = json.loads((server_storage / retirement.PROCESS_RECORD).read_text(encoding="utf-8"))
    record["pid"] = unrelated.pid
    (server_storage / retirement.PROCESS_RECORD).write_text(json.dumps(record), encoding="utf-8")

    fresh = make_runtime(server_storage)
    try:
        started = time.monotonic()
        connection = fresh.server.ensure(timeout=60)
        waited = time.monotonic() - started
    finally:
        fresh.server.stop()
    assert connection.instance_id != record["instance_id"] and connection.pid != unrelated.pid
    assert retirement.wait_until_retired(server_storage.resolve(), timeout=30)
    assert unrelated.poll() is None
    print(f"\nnew server ready {waited:.1f} s after the stale record was found")


MAIN_THREAD_ENDS_FIRST = """
import ctypes, os, sys, threading, time
from blendjob.storage import StorageLock
lock = StorageLock()
lock.acquire(sys.argv[1])
threading.Thread(target=lambda: (time.sleep(float(sys.argv[2])), os._exit(0))).start()
print("holding", flush=True)
sys.stdin.readline()
ctypes.CDLL(None).pthread_exit(None)  # the main thread ends; the other thread, and the lock, live on
"""


def leader_state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@linux
def test_a_server_whose_main_thread_ended_lives_until_its_last_thread_and_its_lock_go(tmp_path):
    """What a server torn down thread by thread looks like (SIGKILL under load; seen in CI): the main thread shows Z
    while another thread still holds the storage lock. Before, that read as gone, the retirement ended at once and
    the next start met "a program (pid N) is using ..." with the lock still held."""
    from imageforge.client.server_launch import storage_locked

    root = tmp_path / "storage"
    root.mkdir()
    child = subprocess.Popen(
        [sys.executable, "-c", MAIN_THREAD_ENDS_FIRST, str(root), "1.5"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "holding"
        identity = identity_of(child.pid)
        assert identity is not None and child.stdin is not None
        child.stdin.write("end the main thread\n")
        child.stdin.flush()
        deadline = time.monotonic() + 10
        while leader_state(child.pid) != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert storage_locked(root)
        assert identity_of(child.pid) == identity  # still the server: one of its threads runs
        retired = retirement.retire(
            retirement.RetiringServer(root.resolve(), RecordedServerProcess(identity), None), wait=None
        )
        assert retired.exited()
        assert not storage_locked(root)  # the retirement ended only once the lock was free
        assert not retirement.is_retiring(root.resolve())
    finally:
        child.kill()
        child.wait(timeout=10)
