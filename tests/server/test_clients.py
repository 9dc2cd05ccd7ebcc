"""The server's client registry with a real BlendJob JobServer in this process: leases end on detach, on a
vanished process and on silence, and take their jobs with them; the server exits after its linger time."""

from __future__ import annotations

import threading

import pytest
from blendjob import JobServer

from imageforge.contract.server_clients import LEASE_SECONDS, LINGER_VARIABLE, ClientKind, linger_seconds
from imageforge.server.clients import FIRST_CLIENT_SECONDS, ClientRegistry, ServerClosingError


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def job_server(tmp_path):
    server = JobServer("test")
    release = threading.Event()

    @server.job("wait")
    def wait(context, _parameters):
        while not release.wait(0.01):
            context.check_cancelled()
        return {}

    server.bind(tmp_path)
    yield server
    release.set()
    server.close()


def registry(job_server, *, alive=lambda _pid: True, linger=20.0):
    clock = Clock()
    return ClientRegistry(job_server, linger=linger, alive=alive, clock=clock), clock


def wait_for(predicate, timeout=10.0):
    event = threading.Event()
    for _ in range(int(timeout / 0.01)):
        if predicate():
            return True
        event.wait(0.01)
    return predicate()


def test_a_client_whose_process_is_gone_loses_its_lease_and_its_job(job_server):
    alive = {1: True, 2: True}
    clients, _clock = registry(job_server, alive=lambda pid: alive[pid])
    cli, blender = clients.attach(1, ClientKind.CLI), clients.attach(2, ClientKind.BLENDER)
    job = job_server.submit("wait", {})
    clients.own(cli.client_id, job.job_id)
    assert wait_for(lambda: job._snapshot()["state"] == "running")

    alive[1] = False  # the CLI was killed (SIGKILL): no detach, no signal handler
    clients.tick()
    assert wait_for(lambda: job._snapshot()["state"] == "cancelled")
    assert clients.kinds() == {ClientKind.BLENDER}
    assert not clients.seen(cli.client_id) and clients.seen(blender.client_id)


def test_a_silent_client_loses_its_lease_after_the_lease_time(job_server):
    clients, clock = registry(job_server)
    quiet, talking = clients.attach(1, ClientKind.CLI), clients.attach(2, ClientKind.CLI)
    clock.now += LEASE_SECONDS - 1
    assert clients.seen(talking.client_id)
    clients.tick()
    assert {c["client_id"] for c in clients.snapshot()["clients"]} == {quiet.client_id, talking.client_id}
    clock.now += 2  # quiet: LEASE_SECONDS + 1 without a heartbeat (a stopped process, a hung one)
    clients.tick()
    assert [c["client_id"] for c in clients.snapshot()["clients"]] == [talking.client_id]


def test_the_server_exits_after_the_linger_time_with_no_client_and_no_job(job_server):
    clients, clock = registry(job_server, linger=20.0)
    client = clients.attach(1, ClientKind.CLI)
    for _ in range(10):  # a client that keeps its heartbeat keeps the server however long
        clock.now += 10
        clients.seen(client.client_id)
        clients.tick()
    assert not job_server.shutdown_event.is_set()

    job = job_server.submit("wait", {})  # a job nobody owns keeps the server up after the last client leaves
    clients.detach(client.client_id)
    clock.now += 60
    clients.tick()
    assert not job_server.shutdown_event.is_set()
    job_server.cancel(job.job_id)
    assert wait_for(lambda: not job_server.snapshot("")["busy"])
    clients.tick()  # idle from now
    clock.now += 19.9
    clients.tick()
    assert not job_server.shutdown_event.is_set()
    clock.now += 0.2
    clients.tick()
    assert job_server.shutdown_event.is_set()


def test_once_the_server_decided_to_exit_no_client_can_attach_to_it(job_server):
    """The race of a client attaching just as the linger time ends: it must not get a lease on a server that
    is exiting (its job would then fail with "stopped unexpectedly"); it is refused and starts a new server."""
    clients, clock = registry(job_server, linger=2.0)
    clients.detach(clients.attach(1, ClientKind.CLI).client_id)
    clock.now += 2.1
    clients.tick()
    assert job_server.shutdown_event.is_set()
    with pytest.raises(ServerClosingError, match="stopping"):
        clients.attach(2, ClientKind.CLI)
    assert clients.snapshot()["clients"] == []
    clients.tick()  # and it stays decided
    with pytest.raises(ServerClosingError):
        clients.attach(3, ClientKind.BLENDER)


def test_a_new_server_waits_for_its_first_client_longer_than_the_linger_time(job_server):
    clients, clock = registry(job_server, linger=2.0)
    clock.now += FIRST_CLIENT_SECONDS - 1  # a slow start on a busy machine: the starter has not attached yet
    clients.tick()
    assert not job_server.shutdown_event.is_set()
    clients.detach(clients.attach(1, ClientKind.CLI).client_id)
    clock.now += 2.1
    clients.tick()
    assert job_server.shutdown_event.is_set()


def test_detach_cancels_the_clients_jobs_and_only_those(job_server):
    clients, _clock = registry(job_server)
    first, second = clients.attach(1, ClientKind.CLI), clients.attach(2, ClientKind.CLI)
    running, queued = job_server.submit("wait", {}), job_server.submit("wait", {})
    clients.own(first.client_id, running.job_id)
    clients.own(second.client_id, queued.job_id)
    clients.detach(second.client_id)
    assert queued._snapshot()["state"] == "cancelled"
    assert running._snapshot()["state"] in {"queued", "running"}


@pytest.mark.parametrize(
    ("configured", "environment", "expected"),
    [
        (None, None, 20.0),
        (None, "3.5", 3.5),
        (7, "3.5", 7.0),
        (None, "soon", 20.0),
        (-4, None, 0.0),
        ("nan", None, 20.0),
    ],
)
def test_the_linger_time_comes_from_the_preference_then_the_environment(monkeypatch, configured, environment, expected):
    if environment is None:
        monkeypatch.delenv(LINGER_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(LINGER_VARIABLE, environment)
    assert linger_seconds(configured) == expected


def test_who_cancelled_a_job_is_noted_unless_it_was_its_own_client(job_server):
    clients, clock = registry(job_server)
    owner, other = clients.attach(1, ClientKind.CLI), clients.attach(2, ClientKind.BLENDER)
    first, second, third = (job_server.submit("wait", {}) for _ in range(3))
    for job in (first, second, third):
        clients.own(owner.client_id, job.job_id)

    assert not clients.cancelling(first.job_id, owner.client_id)  # its own client knows why
    job_server.cancel(first.job_id)
    assert clients.cancelling(second.job_id, other.client_id)
    job_server.cancel(second.job_id)
    assert wait_for(lambda: second._snapshot()["state"] == "cancelled")
    assert clients.cancellation(first.job_id) is None
    assert clients.cancellation(second.job_id) == "another client (blender, pid 2) cancelled it"

    clock.now += LEASE_SECONDS + 1  # the owner fell silent: the lease ends and takes the third job
    assert clients.seen(other.client_id)
    clients.tick()
    assert wait_for(lambda: third._snapshot()["state"] == "cancelled")
    assert clients.cancellation(third.job_id) == (
        f"the job server heard nothing from this client for {LEASE_SECONDS:.0f} s (a paused, stopped or "
        "overloaded process) and ended its lease"
    )
    assert clients.cancellation(second.job_id).startswith("another client")  # the first reason stays
