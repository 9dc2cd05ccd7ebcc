"""Click Select's session with the server, on a thread of its own (no bpy): Blender never waits for a mask.

The modal operator (operators/click_select.py) gives the session the prompts as they change (`ClickPrompts`:
points and a box in image pixels, Ctrl+Z takes the last one back) and reads `state()` on each timer tick. The
thread sends only the newest prompts (clicks made while a mask is computed are folded into the next request):

- the first time, a segment-image job (it encodes the image, seconds on a CPU, and answers the first mask;
  the server keeps the embedding: openspec/0026);
- then each change as a click beside the queue (`controller.click`, tens of milliseconds): `busy` while another
  job runs (the overlay says for what, and the click is sent again shortly), `stale` when the embedding is gone
  (a new encoding), `invalid` with its sentence.

Prompts are checked here first with the contract's rule (contract/segment_prompts.py), as the server does.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from ..contract.errors import ImageForgeError
from ..contract.segment_click import ClickAnswer, ClickRequest, ClickState, SegmentResult
from ..contract.segment_prompts import Click, Clicks, PromptBox, prompt_problem
from ..contract.selection_geometry import MaskRuns

BUSY_RETRY_SECONDS = 0.3


@dataclass(frozen=True)
class ClickPrompts:
    """What the user has given so far, in order (for Ctrl+Z): points, and at most one box (the last one drawn)."""

    steps: tuple[Click | PromptBox, ...] = ()

    def with_point(self, x: float, y: float, *, positive: bool) -> ClickPrompts:
        return ClickPrompts((*self.steps, Click(x, y, positive)))

    def with_box(self, box: PromptBox) -> ClickPrompts:
        return ClickPrompts((*(step for step in self.steps if not isinstance(step, PromptBox)), box))

    def undone(self) -> ClickPrompts:
        return ClickPrompts(self.steps[:-1])

    @property
    def points(self) -> Clicks:
        return Clicks(tuple(step for step in self.steps if isinstance(step, Click)))

    @property
    def box(self) -> PromptBox | None:
        boxes = [step for step in self.steps if isinstance(step, PromptBox)]
        return boxes[-1] if boxes else None

    def problem(self, width: int, height: int) -> str | None:
        return prompt_problem(self.points, self.box, width, height) if self.steps else None


class Transport(Protocol):
    """The two calls a session makes (the add-on's runtime in Blender; a stand-in in tests)."""

    def encode(self, parameters: dict[str, Any], cancelled: Callable[[], bool]) -> SegmentResult: ...

    def click(self, request: ClickRequest) -> ClickAnswer: ...


@dataclass(frozen=True)
class SessionState:
    """What the overlay draws and the status bar says."""

    mask: MaskRuns | None = None  # the mask of `prompts`, or of the prompts before them while a newer one is out
    prompts: ClickPrompts = field(default_factory=ClickPrompts)  # the prompts `mask` answers
    score: float = 0.0
    message: str = "Click on the object"
    waiting: bool = False  # a request is out (the overlay says `message`)
    error: str | None = None  # the last refusal, one sentence


class ClickSession:
    def __init__(self, transport: Transport, image_path: Path, size: tuple[int, int], options: dict[str, Any]):
        self.transport = transport
        self.image_path = image_path
        self.size = size
        self.options = options  # model and device, as every job of the add-on sends them
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._wanted: ClickPrompts | None = None
        self._state = SessionState()
        self._result: SegmentResult | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._work, name="ImageForgeClickSelect", daemon=True)
        self._thread.start()

    def ask(self, prompts: ClickPrompts) -> None:
        """Ask for the mask of `prompts` (replacing any request not yet sent)."""
        problem = prompts.problem(*self.size)
        with self._lock:
            if not prompts.steps:
                self._wanted = None
                self._state = SessionState(message="Click on the object")
            elif problem is not None:
                self._wanted = None
                self._state = replace(self._state, error=problem, message=problem)
            else:
                self._wanted = prompts
                self._state = replace(self._state, waiting=True, error=None)
            self._wake.notify()

    def state(self) -> SessionState:
        with self._lock:
            return self._state

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._wake.notify()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    # -- the thread -------------------------------------------------------------------------------------------
    def _work(self) -> None:
        while True:
            with self._lock:
                while self._wanted is None and not self._closed:
                    self._wake.wait()
                if self._closed:
                    return
                prompts, self._wanted = self._wanted, None
            assert prompts is not None
            try:
                self._answer(prompts)
            except (ImageForgeError, RuntimeError, OSError, ValueError) as error:
                self._set(error=str(error).rstrip(".") + ".", message=str(error), waiting=False)

    def _answer(self, prompts: ClickPrompts) -> None:
        if self._result is None:
            self._set(message="Encoding the image (once per image)…", waiting=True)
            self._encode(prompts)
            return
        result = self._result
        request = ClickRequest(result.image_sha256, result.model, result.device, prompts.points, prompts.box)
        answer = self.transport.click(request)
        if answer.state is ClickState.BUSY:
            self._set(message=f"{answer.why}…", waiting=True)
            time.sleep(BUSY_RETRY_SECONDS)
            with self._lock:
                if self._wanted is None:  # nothing newer: ask again
                    self._wanted = prompts
            return
        if answer.state is ClickState.STALE:
            self._result = None
            self._answer(prompts)
            return
        if answer.state is ClickState.INVALID:
            self._set(error=answer.why, message=answer.why, waiting=False)
            return
        mask = answer.selection.mask if answer.selection is not None else None
        self._done(prompts, mask, answer.score)

    def _encode(self, prompts: ClickPrompts) -> None:
        parameters = {
            "input": str(self.image_path),
            "points": prompts.points.to_list(),
            "box": None if prompts.box is None else prompts.box.to_list(),
            **self.options,
        }
        result = self.transport.encode(parameters, lambda: self._closed)
        self._result = result
        self._done(prompts, result.selection.mask, result.score)

    def _done(self, prompts: ClickPrompts, mask: MaskRuns | None, score: float) -> None:
        with self._lock:
            pending = self._wanted is not None
            message = "Empty mask: click on the object" if mask is None else f"Score {score:.2f}"
            self._state = SessionState(mask, prompts, score, message, waiting=pending)

    def _set(self, **changes: Any) -> None:
        with self._lock:
            self._state = replace(self._state, **changes)


class RuntimeTransport:
    """The add-on's transport: the segment-image job through the BlendJob runtime, clicks through its controller."""

    def __init__(self, runtime: Any):
        self.runtime = runtime

    def encode(self, parameters: dict[str, Any], cancelled: Callable[[], bool]) -> SegmentResult:
        from ..client.job_runner import run_job

        result = run_job(self.runtime, "segment-image", parameters, cancel_requested=cancelled)
        return SegmentResult.from_json(json.loads(Path(result.file("segment")).read_text(encoding="utf-8")))

    def click(self, request: ClickRequest) -> ClickAnswer:
        answer: ClickAnswer = self.runtime.server.click(request)
        return answer
