"""Batch job operators: one operator run submits one job per item, one after another, on the warm server.

The server keeps the model loaded between jobs (ModelManager), so a batch of N textures or strips pays one
model load. Each item is prepared just before its job is submitted and landed as soon as its job succeeds; an
item whose preparation, job or landing fails is recorded and the batch goes on. At the end, one undo step
covers every item that landed, and one report sums it up: "12 done, 1 failed: Rock — the file is missing".
Esc cancels the running item and ends the batch; what landed before stays, in that one undo step.

BlendJob runs one job per operator invocation. Batches reuse its invocation state (JobOperatorState) for
the next job by overriding the end-of-job hooks `finish_success`, `finish_failure`, `close_job` and the
progress hook `update_from_job_status`, which client/blendjob_compat.JobOperatorHooks forwards from BlendJob's
private ones (openspec/0017).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import bpy
from blendjob import JobResult
from blendjob.operator import JobOperatorState

from ...client.blendjob_compat import result_from_status
from ...contract import ImageForgeError, InputError, job_spec
from .base import ImageForgeJobOperator


@dataclass
class BatchOutcome:
    done: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (item name, one-sentence reason)

    def summary(self, *, cancelled: bool = False) -> str:
        text = f"{len(self.done)} done"
        if self.failed:
            reasons = "; ".join(f"{name} — {reason.rstrip('.')}" for name, reason in self.failed)
            text += f", {len(self.failed)} failed: {reasons}"
        return text + (" (cancelled)" if cancelled else "")


class BatchJobOperator(ImageForgeJobOperator):
    """Subclasses give `batch_items(context)` (names), `item_parameters(context, index)` and
    `land_item(context, index, result)`; `item_noun` names an item in progress messages."""

    item_noun = "Item"

    def batch_items(self, context: bpy.types.Context) -> list[str]:
        raise NotImplementedError

    def item_parameters(self, context: bpy.types.Context, index: int) -> Any:
        """The item's parameter dataclass (serialised by `_next_parameters`)."""
        raise NotImplementedError

    def land_item(self, context: bpy.types.Context, index: int, result: JobResult) -> None:
        raise NotImplementedError

    # -- the first item goes through ImageForgeJobOperator.execute ----------------------------------------------

    def job_request(self, context: bpy.types.Context) -> dict[str, Any]:
        self._items = self.batch_items(context)
        self._outcome = BatchOutcome()
        self._index = -1
        self._undo_pushed = False
        parameters = self._next_parameters(context)
        if parameters is None:
            raise InputError(f"Nothing could be sent: {self._outcome.summary()}.")
        return parameters

    def _next_parameters(self, context: bpy.types.Context) -> dict[str, Any] | None:
        """Parameters of the next item that can be prepared (failures recorded), None when none is left."""
        while self._index + 1 < len(self._items):
            self._index += 1
            try:
                return job_spec(self.job_id.value).request(self.item_parameters(context, self._index))
            except (ImageForgeError, OSError) as error:
                self._outcome.failed.append((self._items[self._index], str(error)))
        return None

    # -- the end-of-job hooks (client/blendjob_compat.JobOperatorHooks) --------------------------------------

    def finish_success(self, context: Any, job: JobOperatorState, status: dict[str, Any]) -> set[str]:
        result = result_from_status({"job_id": job.job_id, "directory": str(job.directory), **status})
        try:
            self.land_item(context, self._index, result)
        except (ImageForgeError, OSError, RuntimeError, ValueError) as error:
            self._outcome.failed.append((self._items[self._index], str(error)))
        else:
            self._outcome.done.append(self._items[self._index])
        return self._continue(context, job)

    def finish_failure(self, context: Any, job: JobOperatorState, error: Any) -> set[str]:
        self._outcome.failed.append((self._items[self._index], str(error)))
        return self._continue(context, job)

    def _continue(self, context: Any, job: JobOperatorState) -> set[str]:
        parameters = self._next_parameters(context)
        if parameters is None:  # close_job → JobRuntime.finish_job marks the last job complete
            return self.close_job(context, job, self._outcome.summary(), cancelled=not self._outcome.done)
        job.controller.mark_job_complete(job.job_id)  # what JobRuntime.finish_job does for a single job
        job.job_id, job.directory, job.started, job.start_error = "", None, False, ""
        job.start_thread = threading.Thread(
            target=self.submit_job, args=(job, parameters), name="BlendJobSubmit", daemon=True
        )
        job.start_thread.start()
        return {"RUNNING_MODAL"}

    def close_job(self, context: Any, job: JobOperatorState, message: str, *, cancelled: bool) -> set[str]:
        outcome = getattr(self, "_outcome", None)
        if outcome is not None and not self._undo_pushed:
            self._undo_pushed = True
            if outcome.done:
                bpy.ops.ed.undo_push(message=self.bl_label)
            stopped = cancelled and job.cancelled
            message = outcome.summary(cancelled=stopped)
            level = "WARNING" if outcome.failed or stopped else "INFO"
            self.report({level}, message)
        return super().close_job(context, job, message, cancelled=cancelled)

    def update_from_job_status(self, context: Any, job: JobOperatorState, status: dict[str, Any]) -> None:
        count = max(len(self._items), 1)
        share = min(max(float(status.get("progress", 0.0)), 0.0), 1.0)
        job.progress = (self._index + share) / count
        detail = str(status.get("message") or self.starting_message).strip()
        message = f"{self.item_noun} {self._index + 1}/{count} · {self._items[self._index]} · {detail}"
        job.runtime.update_ui(context, job.progress, message)
