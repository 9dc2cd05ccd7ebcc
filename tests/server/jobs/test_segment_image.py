"""segment-image in-process on the kit SAM 2 pair: masks from clicks, the kept embedding, bad input sentences."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image as PILImage

from imageforge.contract import JobId
from imageforge.contract.results import ResultName
from imageforge.contract.segment_click import SegmentResult
from tests.kit.onnx_models import SAM2_SCORES

from .geometry_kit import catalog_entry, jobs_fixture, use_catalog_fixture  # noqa: F401  (fixtures)
from .segment_kit import HEIGHT, WIDTH, expected_mask, kit_sam2_fixture, photo_fixture  # noqa: F401  (fixtures)

JOB = JobId.SEGMENT_IMAGE


def test_one_click_keeps_the_best_of_three_candidates(jobs, kit_sam2, photo):
    path, disc = photo
    outcome = jobs.run(JOB, {"input": str(path), "points": [[50, 60, 1]], "device": "cpu"})
    assert outcome.state == "succeeded", outcome.error
    assert set(outcome.result) == {ResultName.MASK, ResultName.SEGMENT, ResultName.PROVENANCE}
    mask = np.asarray(PILImage.open(outcome.file(ResultName.MASK)))
    assert mask.shape == (HEIGHT, WIDTH) and set(np.unique(mask)) == {0, 255}
    np.testing.assert_array_equal(mask > 0, expected_mask(path, (50, 60), token=2))  # candidate 2 scores 0.9
    assert abs(int((mask > 0).sum()) - int(disc.sum())) < 0.05 * disc.sum()  # the disc, up to its edge
    result = SegmentResult.from_json(json.loads(outcome.file(ResultName.SEGMENT).read_text()))
    assert result.multimask and result.scores == pytest.approx(SAM2_SCORES[1:]) and result.chosen == 1
    assert result.score == pytest.approx(0.9) and result.model == "KIT_SAM2" and result.device == "cpu"
    assert (
        result.selection.mask is not None and result.selection.mask.to_bytes() == (mask > 0).astype(np.uint8).tobytes()
    )


def test_more_clicks_give_one_mask_and_reuse_the_embedding(jobs, kit_sam2, photo):
    path, _ = photo
    first = jobs.run(JOB, {"input": str(path), "points": [[120, 50, 1]], "device": "cpu"})
    second = jobs.run(JOB, {"input": str(path), "points": [[120, 50, 1], [10, 10, 0]], "device": "cpu"})
    assert first.state == second.state == "succeeded", second.error
    log = (second.directory / "job.log").read_text()
    assert "Embedding of" in log and "Encoding" not in " ".join(second.messages)
    result = SegmentResult.from_json(json.loads(second.file(ResultName.SEGMENT).read_text()))
    assert not result.multimask and result.scores == pytest.approx(SAM2_SCORES[:1])  # token 0 is stable here
    mask = np.asarray(PILImage.open(second.file(ResultName.MASK))) > 0
    np.testing.assert_array_equal(mask, expected_mask(path, (120, 50), token=0))
    assert mask[30:70, 100:140].mean() > 0.9 and not mask[60, 50]  # the square, not the disc


def test_a_changed_image_is_encoded_again(jobs, kit_sam2, photo):
    path, _ = photo
    jobs.run(JOB, {"input": str(path), "points": [[50, 60, 1]], "device": "cpu"})
    pixels = np.asarray(PILImage.open(path)).copy()
    pixels[0, 0] = (0, 0, 0)
    PILImage.fromarray(pixels).save(path)
    again = jobs.run(JOB, {"input": str(path), "points": [[50, 60, 1]], "device": "cpu"})
    assert again.state == "succeeded" and "Embedding of" not in (again.directory / "job.log").read_text()


@pytest.mark.parametrize(
    ("parameters", "fragment"),
    [
        ({"points": [[200, 10, 1]]}, "The point (200, 10) lies outside the image (160×120 pixels); click on"),
        ({"points": [[-1, 10, 1]]}, "lies outside the image"),
        ({"points": [[10, 10, 0]]}, "Click at least once on the object (a positive point) or drag a box"),
        ({"points": []}, "Click at least once on the object"),
        ({"box": [170, 0, 200, 30]}, "The box lies outside the image"),
        ({"points": [[10, 10, 2]]}, "label 1 (object) or 0 (not the object)"),
        ({"points": [[10, 10, 1]], "model": "NOPE"}, "Unknown model 'NOPE'"),
    ],
)
def test_bad_prompts_are_one_sentence_and_write_nothing(jobs, kit_sam2, photo, parameters, fragment):
    path, _ = photo
    outcome = jobs.run(JOB, {"input": str(path), "device": "cpu", **parameters})
    assert outcome.state == "failed" and fragment in outcome.error
    assert not outcome.outputs()


def test_a_box_alone_segments_what_is_inside_it(jobs, kit_sam2, photo):
    path, _ = photo
    outcome = jobs.run(JOB, {"input": str(path), "box": [90, 20, 150, 80], "device": "cpu"})
    assert outcome.state == "succeeded", outcome.error
    mask = np.asarray(PILImage.open(outcome.file(ResultName.MASK))) > 0
    np.testing.assert_array_equal(mask, expected_mask(path, (90, 20), token=0))  # the kit reads the first corner


def test_without_a_segment_model_the_job_says_how_to_make_one(jobs, use_catalog, photo):
    path, _ = photo
    use_catalog([catalog_entry("KIT_LAMA", "inpaint", "lama")])
    outcome = jobs.run(JOB, {"input": str(path), "points": [[50, 60, 1]], "device": "cpu"})
    assert outcome.state == "failed"
    assert outcome.error == (
        "Click Select needs a SAM 2.1 model converted once on this machine: the Models panel's Prepare Click "
        "Select model… button, or 'imageforge models convert SAM2_TINY' (or SAM2_SMALL)."
    )
