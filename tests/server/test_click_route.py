"""The click route beside the queue: a mask from the kept embedding, and every answer that is not one."""

from __future__ import annotations

import json

import numpy as np
import pytest

from imageforge.contract import JobId
from imageforge.contract.segment_click import ClickAnswer, ClickRequest, ClickState, SegmentResult
from imageforge.contract.segment_prompts import Clicks
from imageforge.server.click_route import answer_click
from tests.server.jobs.geometry_kit import jobs_fixture, use_catalog_fixture  # noqa: F401  (fixtures)
from tests.server.jobs.segment_kit import expected_mask, kit_sam2_fixture, photo_fixture  # noqa: F401  (fixtures)


def encoded(jobs, path) -> SegmentResult:
    outcome = jobs.run(JobId.SEGMENT_IMAGE, {"input": str(path), "points": [[50, 60, 1]], "device": "cpu"})
    assert outcome.state == "succeeded", outcome.error
    return SegmentResult.from_json(json.loads(outcome.file("segment").read_text()))


def click(jobs, result: SegmentResult, points, **changes) -> ClickAnswer:
    request = ClickRequest(result.image_sha256, result.model, result.device, Clicks())
    payload = {**request.to_json(), "points": points, **changes}
    return ClickAnswer.from_json(answer_click(jobs.server, payload).to_json())  # through JSON, as over HTTP


def test_a_click_on_the_kept_embedding_answers_the_mask_at_once(jobs, kit_sam2, photo):
    path, _ = photo
    result = encoded(jobs, path)
    answer = click(jobs, result, [[120, 50, 1], [10, 10, 0]])
    assert answer.state is ClickState.OK and answer.score == pytest.approx(0.95) and answer.decoder_seconds > 0
    mask = np.frombuffer(answer.selection.mask.to_bytes(), np.uint8).reshape(120, 160).astype(bool)
    np.testing.assert_array_equal(mask, expected_mask(path, (120, 50), token=0))
    one = click(jobs, result, [[50, 60, 1]])  # a single point: three candidates, the best kept
    assert one.state is ClickState.OK and one.scores == pytest.approx((0.6, 0.9, 0.7)) and one.chosen == 1


def test_a_changed_image_another_model_or_device_is_stale(jobs, kit_sam2, photo):
    path, _ = photo
    result = encoded(jobs, path)
    for change in ({"image_sha256": "0" * 64}, {"model": "OTHER"}, {"device": "cuda"}):
        answer = click(jobs, result, [[50, 60, 1]], **change)
        assert answer.state is ClickState.STALE and "encoded again" in answer.why
    jobs.server.resources["segment_embeddings"].clear()  # Unload Models
    assert click(jobs, result, [[50, 60, 1]]).state is ClickState.STALE


@pytest.mark.parametrize(
    ("points", "changes", "fragment"),
    [
        ([[500, 60, 1]], {}, "lies outside the image (160×120 pixels)"),
        ([[50, 60, 0]], {}, "Click at least once on the object"),
        ([[50, 60, 7]], {}, "label 1 (object) or 0"),
        ([[50, 60, 1]], {"multimask": "maybe"}, "multimask must be auto, on or off"),
        ([[50, 60, 1]], {"image_sha256": 5}, "image_sha256"),
    ],
)
def test_bad_clicks_are_one_sentence_and_the_next_click_still_works(jobs, kit_sam2, photo, points, changes, fragment):
    path, _ = photo
    result = encoded(jobs, path)
    answer = click(jobs, result, points, **changes)
    assert answer.state is ClickState.INVALID and fragment in answer.why
    assert click(jobs, result, [[50, 60, 1]]).state is ClickState.OK


def test_while_a_job_runs_a_click_waits_and_says_for_what(jobs, kit_sam2, photo):
    path, _ = photo
    result = encoded(jobs, path)
    server = jobs.server
    with server.lock:
        server.active_job_id = "busy-job"
        server.jobs["busy-job"] = type("Running", (), {"job_type": "upscale-image"})()
    try:
        answer = click(jobs, result, [[50, 60, 1]])
    finally:
        with server.lock:
            server.active_job_id = None
            server.jobs.pop("busy-job")
    assert answer.state is ClickState.BUSY and answer.why == "Waiting for Upscale Image to finish"
    assert click(jobs, result, [[50, 60, 1]]).state is ClickState.OK


def test_an_empty_mask_is_answered_without_a_selection(jobs, kit_sam2, photo):
    path, _ = photo
    result = encoded(jobs, path)
    kept = jobs.server.resources["segment_embeddings"]._kept  # the kit segments by colour: make every logit negative
    kept.embedding.features["high_res_feats_0"][:] = np.where(
        np.arange(256)[None, None, None, :] % 2 == 0, 100.0, -100.0
    )
    answer = click(jobs, result, [[1, 0, 1]])
    assert answer.state is ClickState.OK and answer.selection is None
