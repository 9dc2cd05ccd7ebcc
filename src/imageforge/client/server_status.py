"""Status and polling: the server's health into the seat's snapshot, a job's status, a server that died.

A server that dies on its own (killed, crashed) shows ERROR with one readable sentence instead of being
restarted silently; Start or Restart brings it back, and the interrupted job reads as failed. A living server
may not answer for seconds while ONNX Runtime creates a session (it holds the GIL; openspec/0015): it reads as
busy, and a job's last status is kept with a waiting message until `STATUS_PATIENCE` runs out.
"""

from __future__ import annotations

import re
import signal
import time
from pathlib import Path
from typing import Any

from ..contract.job_state import JobState
from ..contract.server_clients import cancellation_path
from ..contract.server_state import ServerState
from .server_errors import JobServerError, ServerNotRunningError, ServerReplacedError, ServerUnreachableError
from .server_seat import ServerProcess, ServerSeat

STATUS_SECONDS = 1.0  # one job-status request; a server busy creating a session answers late
STATUS_PATIENCE = 120.0  # how long a living server may leave status unanswered before the job is given up
JOB_ID = re.compile(r"[0-9a-f]{32}")  # BlendJob's job ids (uuid4().hex)


def read_health(seat: ServerSeat, timeout: float) -> dict[str, Any]:
    """GET /health of the seat's server into its snapshot (READY or BUSY); raises a JobServerError otherwise."""
    connection = seat.connected()
    health: dict[str, Any] = connection.client.request("GET", "/health", timeout=timeout)
    if health.get("instance_id") != connection.instance_id:
        raise ServerReplacedError("Server instance does not match")
    busy = bool(health.get("busy"))
    seat.show(
        ServerState.BUSY if busy else ServerState.READY, "Busy" if busy else "Ready", **health, port=connection.port
    )
    return health


def notice_exit(seat: ServerSeat) -> None:
    """Forget a server process that has ended, keeping the sentence that says how (ERROR until Start)."""
    process = seat.process
    if process is not None and process.poll() is not None:
        seat.crash_message = crash_message(process, seat.log_path())
        seat.auto_start = False  # show ERROR; Start or Restart (or the next job) brings it back
        seat.close_process()
        seat.connection = None


def crash_message(process: ServerProcess, log_path: Path) -> str:
    """One sentence for an exit nobody asked for: how it ended and where its log is."""
    code = getattr(process, "returncode", None)
    if code is None:
        how = "its process ended"
    elif code < 0:
        try:
            how = f"killed by {signal.Signals(-code).name}"
        except ValueError:
            how = f"killed by signal {-code}"
    else:
        how = f"exit code {code}"
    return f"The job server stopped unexpectedly ({how}); start it again, and see {log_path} if it keeps stopping."


class JobStatuses:
    """The jobs this client submitted: which server start runs each, and the last status it gave."""

    def __init__(self, seat: ServerSeat) -> None:
        self.seat = seat
        self.servers: dict[str, str] = {}  # job id -> instance id of the server it was submitted to
        self.last_answer: dict[str, tuple[float, dict[str, Any]]] = {}  # job id -> (when, last status)
        self.cancels_sent: set[str] = set()  # jobs this client asked to cancel: it knows why they ended
        self.cancel_reasons: dict[str, str | None] = {}  # job id -> why the server cancelled it (asked once)

    def submitted(self, answer: dict[str, Any]) -> dict[str, Any]:
        job_id = answer.get("job_id")
        if not isinstance(job_id, str) or not JOB_ID.fullmatch(job_id):
            raise ServerReplacedError("The job server answered with an invalid job id; nothing was read from it.")
        self.servers[job_id] = self.seat.connected().instance_id
        return {**answer, "directory": str(self.directory(job_id))}

    def status(self, job_id: str) -> dict[str, Any]:
        """A job's status from the server that runs it, within about a second; never starts a server (one that
        does not know the job could only say "not found"). The job's folder is always `<storage>/jobs/<id>`."""
        self.require_running(job_id)
        try:
            answer = self.seat.connected().client.request("GET", f"/jobs/{job_id}", timeout=STATUS_SECONDS)
        except ServerUnreachableError as error:
            self.require_running(job_id)  # it died meanwhile: the crash sentence
            when, last = self.last_answer.setdefault(
                job_id, (time.monotonic(), {"state": JobState.RUNNING, "progress": 0.0})
            )
            if time.monotonic() - when > STATUS_PATIENCE:
                raise ServerUnreachableError(
                    f"The job server has not answered for {STATUS_PATIENCE:.0f} s; see {self.seat.log_path()}.",
                    refused=False,
                ) from error
            answer = {**last, "message": "Waiting for the job server (it may be loading a model)"}
        else:
            self.last_answer[job_id] = (time.monotonic(), answer)
            if answer.get("state") == JobState.CANCELLED and job_id not in self.cancels_sent:
                answer = {**answer, "cancelled_because": self.cancel_reason(job_id)}
        return {**answer, "job_id": job_id, "directory": str(self.directory(job_id))}

    def cancel_reason(self, job_id: str) -> str | None:
        """Why the server cancelled a job this client did not cancel (another client, its lease ended); asked
        once per job. None when the server cannot say (an older server, no answer in time)."""
        if job_id not in self.cancel_reasons:
            try:
                answer = self.seat.connected().client.request("GET", cancellation_path(job_id), timeout=STATUS_SECONDS)
            except JobServerError:
                answer = {}
            reason = answer.get("reason") if isinstance(answer, dict) else None
            self.cancel_reasons[job_id] = reason if isinstance(reason, str) else None
        return self.cancel_reasons[job_id]

    def cancel(self, job_id: str) -> dict[str, Any]:
        self.require_running(job_id)
        self.cancels_sent.add(job_id)
        answer: dict[str, Any] = self.seat.connected().client.request(
            "DELETE", f"/jobs/{job_id}", timeout=STATUS_SECONDS
        )
        return answer

    def directory(self, job_id: str) -> Path:
        if not JOB_ID.fullmatch(job_id):
            raise JobServerError(f"Not a job id: {job_id!r}.")
        return self.seat.root() / "jobs" / job_id

    def complete(self, job_id: str) -> None:
        self.servers.pop(job_id, None)
        self.last_answer.pop(job_id, None)
        self.cancels_sent.discard(job_id)
        self.cancel_reasons.pop(job_id, None)
        snapshot = self.seat.snapshot
        active = snapshot.get("active_job")
        if active and active.get("job_id") != job_id:
            return
        if snapshot.get("state") == ServerState.BUSY:  # the bar reads Ready at once, before the next poll
            self.seat.snapshot = {
                **snapshot,
                "busy": False,
                "active_job": None,
                "state": ServerState.READY,
                "message": "Ready",
            }

    def require_running(self, job_id: str) -> None:
        notice_exit(self.seat)
        if self.seat.process is None:
            raise ServerNotRunningError(
                self.seat.crash_message or "The job server was stopped before the job finished."
            )
        started_on = self.servers.get(job_id)
        if started_on is not None and started_on != self.seat.connected().instance_id:
            raise ServerReplacedError("The job server was restarted before the job finished.")
