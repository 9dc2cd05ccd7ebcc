"""Result names and when each job returns them: one enum, declared per job, exact per parameter set."""

from __future__ import annotations

import pytest

from imageforge.contract import JOB_SPECS, JobId
from imageforge.contract.results import BACKGROUND_GEOMETRY, SUBJECT_GEOMETRY, ResultName

R = ResultName


def test_every_result_is_keyed_by_the_enum_and_every_member_is_some_jobs_result():
    declared = set()
    for spec in JOB_SPECS.values():
        assert all(type(name) is ResultName for name in spec.results), spec.id
        declared |= set(spec.results)
    assert declared == set(ResultName)  # no member without a job


def test_a_member_is_its_string_on_the_wire():
    assert R.DEPTH_METADATA == "depth_metadata" and f"{R.BACKGROUND_NORMAL}.png" == "background_normal.png"
    assert {R.FOREGROUND: "foreground.png"} == {"foreground": "foreground.png"}
    assert [str(name) for name in BACKGROUND_GEOMETRY.__dict__.values()] == [
        "background_depth",
        "background_depth_metadata",
        "background_normal",
    ]
    assert set(SUBJECT_GEOMETRY.__dict__.values()) == {R.DEPTH, R.DEPTH_METADATA, R.NORMAL}


def test_provenance_is_declared_by_every_model_job_and_comes_from_the_handler():
    for job_id, spec in JOB_SPECS.items():
        downloads = job_id in (  # no session
            JobId.DOWNLOAD_MODEL,
            JobId.DOWNLOAD_REQUIRED_MODELS,
            JobId.CONVERT_MODEL,
            JobId.INSPECT_INPUT,
            JobId.ASSEMBLE_FRAMES,
        )
        assert (R.PROVENANCE in spec.results) is not downloads, job_id
        if not downloads:
            assert spec.results[R.PROVENANCE].by_handler and spec.results[R.PROVENANCE].optional
            assert R.PROVENANCE not in spec.expected_results(spec.parse(minimal(job_id)))


def minimal(job_id: JobId) -> dict:
    if job_id is JobId.DOWNLOAD_MODEL:
        return {"model": "BEN2_BASE"}
    if job_id is JobId.CONVERT_MODEL:
        return {"model": "DA3_SMALL"}
    if job_id is JobId.REFINE_IMAGE_SELECTION:
        return {"input": "x.png", "selection": {"box": [0, 0, 1, 1]}}
    return {} if job_id is JobId.DOWNLOAD_REQUIRED_MODELS else {"input": "x.png"}


@pytest.mark.parametrize(
    ("job_id", "parameters", "expected"),
    [
        (JobId.DOWNLOAD_REQUIRED_MODELS, {}, {R.MANIFEST}),
        (JobId.REMOVE_BACKGROUND, {}, {R.FOREGROUND}),
        (JobId.REMOVE_BACKGROUND, {"output_kind": "alpha"}, {R.ALPHA}),
        (JobId.UPSCALE_IMAGE, {}, {R.UPSCALE}),
        (JobId.REFINE_IMAGE_SELECTION, {}, {R.ALPHA, R.CUTOUT}),
        (JobId.GENERATE_DEPTH_PLANE_GEOMETRY, {}, {R.DEPTH, R.DEPTH_METADATA, R.NORMAL}),
        (JobId.GENERATE_CUTOUT_ARTIFACTS, {}, {R.CUTOUT, R.SELECTION_ALPHA}),
        (
            JobId.GENERATE_CUTOUT_ARTIFACTS,
            {"generate_depth": True},
            {R.CUTOUT, R.SELECTION_ALPHA, R.DEPTH, R.DEPTH_METADATA},
        ),  # fmt: skip
        (JobId.GENERATE_CUTOUT_ARTIFACTS, {"normal_mode": "tangent"}, {R.CUTOUT, R.SELECTION_ALPHA, R.NORMAL}),
        (JobId.GENERATE_CUTOUT_ARTIFACTS, {"fill_behind": True}, {R.CUTOUT, R.SELECTION_ALPHA, R.BACKGROUND}),
        (
            JobId.GENERATE_CUTOUT_ARTIFACTS,
            {"fill_behind": True, "normal_mode": "object"},
            {
                R.CUTOUT,
                R.SELECTION_ALPHA,
                R.NORMAL,
                R.BACKGROUND,
                R.BACKGROUND_DEPTH,
                R.BACKGROUND_DEPTH_METADATA,
                R.BACKGROUND_NORMAL,
            },
        ),  # fmt: skip
        (JobId.INPAINT_IMAGE, {}, {R.INPAINT}),
        (JobId.GENERATE_MULTIVIEW_CAMERAS, {}, {R.CAMERAS, R.DEPTH}),
        (JobId.DEBUG_DA3, {}, {R.RAW, R.SUMMARY}),
    ],
)
def test_expected_results_follow_the_parameters(job_id, parameters, expected):
    spec = JOB_SPECS[job_id]
    assert spec.expected_results(spec.parse({**minimal(job_id), **parameters})) == expected


def test_an_optional_result_says_when_in_its_description():
    for spec in JOB_SPECS.values():
        for name, result in spec.results.items():
            if result.when is not None:
                assert result.description.startswith("With "), f"{spec.id}: {name}"
            else:
                assert not result.description.startswith("With "), f"{spec.id}: {name}"
