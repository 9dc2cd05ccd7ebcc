"""A stand-in for the job server's controller while the real server jobs are being written.

It speaks the controller's protocol (submit, status, cancel, mark_job_complete) to the real BlendJob operator
machinery, and runs a test-supplied producer that writes the documented result files into a real job folder.
The end-to-end suite replaces it with the installed extension's real server.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import bpy

from imageforge.contract.parameters import field_docs

Producer = Callable[[dict[str, Any], Path], dict[str, str]]


class CancelledBy(str):
    """A producer's way to say the server cancelled the job for a reason of its own (the clause the real
    client's status carries as `cancelled_because`)."""


def chosen(job_type: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """The submitted fields whose value is not the contract's default: what the operator (or a preference) chose.
    Operators send every field (JobSpec.request); the dict must parse as the server will parse it."""
    from imageforge.contract import job_spec
    from imageforge.contract.parameters import to_plain

    spec = job_spec(job_type)
    assert spec.parse(parameters) is not None and set(parameters) == set(to_plain(spec.parse(parameters)))
    defaults = {field["name"]: field["default"] for field in field_docs(spec.parameters) if not field["required"]}
    return {name: value for name, value in parameters.items() if name not in defaults or defaults[name] != value}


class RecordingJobServer:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.producers: dict[str, Producer] = {}
        self.submitted: list[tuple[str, dict[str, Any]]] = []
        self.results: dict[str, dict[str, Any]] = {}
        self.completed: list[str] = []
        self.cleared: list[str] = []
        self.snapshot = {"state": "READY", "message": "Ready", "resources": {}}

    def submit(self, job_type: str, parameters: dict[str, Any]) -> dict[str, str]:
        job_id = uuid.uuid4().hex
        directory = self.root / job_id
        directory.mkdir(parents=True)
        self.submitted.append((job_type, parameters))
        self.results[job_id] = {"directory": directory, "job_type": job_type, "parameters": parameters}
        return {"job_id": job_id, "directory": str(directory)}

    def status(self, job_id: str) -> dict[str, Any]:
        job = self.results[job_id]
        if "result" not in job:
            # Produced on the main thread: writers use bpy, which the operator's submit thread must not call.
            job["result"] = self.producers[job["job_type"]](job["parameters"], job["directory"])
            return {"state": "running", "progress": 0.5, "message": "Running model"}
        if isinstance(job["result"], CancelledBy):
            return {
                "state": "cancelled",
                "progress": 0.5,
                "message": "Task cancelled",
                "cancelled_because": job["result"],
            }
        if job["result"] is None or isinstance(job["result"], str):  # the producer's way to say the job failed
            error = job["result"] or "The model ran out of memory."
            return {"state": "failed", "progress": 0.5, "message": "Failed", "error": error}
        return {"state": "succeeded", "progress": 1.0, "message": "Done", "result": job["result"]}

    def cancel(self, job_id: str) -> None:
        self.results[job_id]["cancelled"] = True

    def mark_job_complete(self, job_id: str) -> None:
        self.completed.append(job_id)

    def clear_resource(self, name: str) -> dict[str, str]:
        self.cleared.append(name)
        return {"resource": name, "state": "cleared"}

    # What BlendJob's runtime calls on its controller during unregister and polling.
    def detach(self) -> None: ...

    def stop(self, *_args: Any, **_kwargs: Any) -> None: ...

    def poll(self, **_kwargs: Any) -> float:
        return 5.0


def run_job_operator(call: Callable[..., set[str]], **properties: Any) -> set[str]:
    """Run a job operator as Blender would, driving its modal timer by hand (modal never fires headless)."""
    from imageforge.addon import blender_runtime

    started = call("EXEC_DEFAULT", **properties)
    if started != {"RUNNING_MODAL"}:
        return started
    job = blender_runtime.get_runtime().active_job
    operator = job.operator
    for _ in range(500):
        if job.start_thread is not None:
            job.start_thread.join(timeout=5.0)
        outcome = operator.modal(bpy.context, SimpleNamespace(type="TIMER"))
        if outcome != {"RUNNING_MODAL"}:
            return outcome
    raise AssertionError("The job operator never finished")
