"""The click route (contract/segment_click.py `CLICK_PATH`): a mask per click beside the job queue (openspec/0026).

A click only runs SAM 2's decoder on the embedding segment-image kept (job_steps/segment_embeddings.py): tens of
milliseconds, where a queued job pays the queue's status polling (a quarter of a second at least) and a job
folder. It never enters the queue, so it never waits behind a job and a job never waits behind it; instead, while
a job runs or waits it answers `busy` with that job's name (the add-on shows why and asks again), so a click never
competes with a job for the CPU or the GPU. The decoder runs while no session may be loaded or released
(`ModelManager.hold`). The route sits behind the same token guard as every route (server/security.py).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from ..contract import ImageForgeError, InputError, job_spec
from ..contract.parameters import Selection
from ..contract.segment_click import CLICK_PATH, ClickAnswer, ClickRequest, ClickState
from ..contract.segment_prompts import prompt_problem, wants_multimask
from ..contract.selection_geometry import MaskRuns
from .job_steps.segment_embeddings import EmbeddingKey

log = logging.getLogger(__name__)
STALE = "The image is not encoded for this model and device, or it changed since; it is encoded again."


def add_click_route(app: Any, server: Any) -> None:
    @app.post(CLICK_PATH)  # type: ignore[untyped-decorator]  # FastAPI's decorator is typed loosely
    def click(payload: dict[str, Any]) -> dict[str, Any]:
        return answer_click(server, payload).to_json()


def answer_click(server: Any, payload: object) -> ClickAnswer:
    try:
        request = ClickRequest.from_json(payload)
    except InputError as error:
        return ClickAnswer(ClickState.INVALID, why=str(error))
    running = running_job(server)
    if running is not None:
        return ClickAnswer(ClickState.BUSY, why=f"Waiting for {running} to finish")
    store, models = server.resources["segment_embeddings"], server.resources["models"]
    started = time.perf_counter()
    with models.hold():
        kept = store.get(EmbeddingKey(request.image_sha256, request.model, request.device))
        if kept is None:
            return ClickAnswer(ClickState.STALE, why=STALE)
        size = kept.embedding.size
        problem = prompt_problem(request.points, request.box, *size)
        if problem is not None:
            return ClickAnswer(ClickState.INVALID, why=problem)
        multimask = wants_multimask(request.multimask, request.points, request.box)
        try:
            prediction = kept.adapter.predict(kept.embedding, request.points, request.box, multimask=multimask)
        except ImageForgeError as error:
            return ClickAnswer(ClickState.INVALID, why=str(error))
    mask = prediction.mask(size)
    runs = MaskRuns.encode(mask.astype("uint8").tobytes(), *size)
    seconds = time.perf_counter() - started
    log.info("Click: %d points, mask of %d pixels, score %.4f in %.3f s", len(request.points.points), runs.area,
             prediction.score, seconds)  # fmt: skip
    return ClickAnswer(
        ClickState.OK,
        score=prediction.score,
        scores=tuple(float(value) for value in prediction.scores),
        chosen=prediction.chosen,
        selection=Selection(mask=runs) if runs.area else None,
        decoder_seconds=seconds,
    )


def running_job(server: Any) -> str | None:
    """The label of the job `server` is running, else None (BlendJob's public `active_job_id` and `jobs`).

    A job submitted but not yet started is not seen: it starts within the worker's next step and the click
    before it contends for at most one decoder run."""
    with server.lock:
        active = server.jobs.get(server.active_job_id) if server.active_job_id else None
    if active is None:
        return None
    try:
        return job_spec(active.job_type).label
    except InputError:
        return str(active.job_type)
