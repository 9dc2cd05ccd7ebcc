"""Job parameters are parsed into typed, frozen values; every bad value is a one-sentence InputError."""

from __future__ import annotations

import dataclasses
import math

import pytest

from imageforge.contract import Device, InputError, JobId, job_spec
from imageforge.contract.jobs import OutputKind, RemoveBackgroundParams, UpscaleImageParams
from imageforge.contract.parameters import Selection, field_docs, parse_parameters


def test_defaults_and_types_are_applied():
    params = job_spec("remove-background").parse({"input": "/tmp/a.png"})
    assert params == RemoveBackgroundParams(input="/tmp/a.png")
    assert params.output_kind is OutputKind.FOREGROUND and params.device is Device.AUTO
    assert params.max_input_size == 2048
    with pytest.raises(dataclasses.FrozenInstanceError):
        params.input = "other"  # type: ignore[misc]


def test_values_are_converted_and_enums_case_insensitive():
    params = parse_parameters(UpscaleImageParams, {"input": "x", "scale": 2.0, "device": "CPU", "tile_size": 256})
    assert (params.scale, params.device, params.tile_size) == (2, Device.CPU, 256)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({}, "Missing required parameter 'input'."),
        ({"input": 5}, "'input' must be text, not int."),
        ({"input": "x", "scale": 3}, "'scale' must be one of 2, 4; got 3."),
        ({"input": "x", "scale": True}, "'scale' must be a whole number, not True."),
        ({"input": "x", "scale": "4"}, "'scale' must be a whole number, not '4'."),
        ({"input": "x", "max_input_size": 0}, "'max_input_size' must be between 1 and 8192; got 0."),
        ({"input": "x", "max_input_size": 10**12}, "'max_input_size' must be between 1 and 8192; got 1000000000000."),
        (
            {"input": "x", "device": "mps"},
            "'device' must be one of auto, cpu, cuda, directml, coreml, openvino; got 'mps'.",
        ),
        ({"input": "x", "device": None}, "'device' must not be null."),
        ({"input": "x", "colour": "red"}, "Unknown parameter 'colour'"),
        ({"input": "x\x00y"}, "'input' is too long or contains a NUL character."),
        ({"input": "x" * 5000}, "'input' is too long or contains a NUL character."),
    ],
)
def test_bad_values_are_one_sentence_input_errors(raw, message):
    with pytest.raises(InputError) as caught:
        job_spec("upscale-image").parse(raw)
    assert str(caught.value).startswith(message)
    assert str(caught.value).count(". ") == 0 or "valid parameters" in str(caught.value)


def test_non_dict_parameters_and_unknown_jobs():
    with pytest.raises(InputError, match="must be a JSON object"):
        job_spec("download-model").parse(["BEN2_BASE"])
    with pytest.raises(InputError, match="Unknown job 'nope'; valid jobs are: download-model, "):
        job_spec("nope")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"box": [1, 2, 30, 40]}, Selection(box=(1.0, 2.0, 30.0, 40.0))),
        ({"lasso": [[0, 0], [10, 0], [10, 10]]}, Selection(lasso=((0.0, 0.0), (10.0, 0.0), (10.0, 10.0)))),
    ],
)
def test_selections_parse(raw, expected):
    params = job_spec("refine-image-selection").parse({"input": "x", "selection": raw})
    assert params.selection == expected
    assert Selection.parse("s", expected.to_dict()) == expected


def test_selection_bounds():
    assert Selection(lasso=((5, 1), (9, 7), (2, 4))).bounds == (2, 1, 9, 7)


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ({"box": [10, 10, 5, 20]}, "box is empty"),
        ({"box": [0, 0, math.nan, 5]}, "must be a finite number"),
        ({"box": [0, 0, 5]}, "box must be four numbers"),
        ({"lasso": [[0, 0], [1, 1], [2, 2]]}, "enclosing an area"),
        ({"lasso": [[0, 0], [1, 1]]}, "enclosing an area"),
        ({"lasso": [[0, 0, 1], [1, 1], [2, 0]]}, "points must each be [x, y]"),
        ({"circle": 3}, 'must be {"box"'),
        ({"box": [0, 0, 1, 1], "lasso": []}, 'must be {"box"'),
        ("box", 'must be {"box"'),
    ],
)
def test_bad_selections(raw, fragment):
    with pytest.raises(InputError) as caught:
        job_spec("refine-image-selection").parse({"input": "x", "selection": raw})
    assert fragment in str(caught.value)


def test_every_job_documents_every_parameter():
    for job_id in JobId:
        spec = job_spec(job_id.value)
        for field in field_docs(spec.parameters):
            assert field["doc"], f"{job_id}: {field['name']} has no doc"
        assert spec.results


def test_selection_overlaps_the_image_only_when_its_bounds_meet_it():
    assert Selection(box=(-5, -5, 1, 1)).overlaps(10, 10)
    assert not Selection(box=(10, 0, 20, 5)).overlaps(10, 10)
    assert not Selection(lasso=((-9, -9), (-1, -9), (-1, -1))).overlaps(10, 10)
