"""The limits the add-on's preferences offer are the ones the server enforces (one home: contract/jobs.py)."""

from __future__ import annotations

import dataclasses

import pytest

from imageforge.addon import choices
from imageforge.contract import JOB_SPECS, InputError, JobId


def _fields(name: str) -> list[dataclasses.Field]:
    return [field for spec in JOB_SPECS.values() for field in dataclasses.fields(spec.parameters) if field.name == name]


def test_every_job_caps_the_input_size_where_the_preference_does():
    assert _fields("max_input_size")
    for field in _fields("max_input_size"):
        assert field.metadata["maximum"] == choices.chosen_max_input_size(10**9)
        assert field.metadata["minimum"] <= choices.MAX_INPUT_SIZE_MIN


def test_the_largest_size_the_preference_offers_is_accepted_and_one_more_is_refused():
    spec = JOB_SPECS[JobId.REMOVE_BACKGROUND]
    largest = choices.chosen_max_input_size(10**9)
    assert spec.parse({"input": "x.png", "max_input_size": largest}).max_input_size == largest
    with pytest.raises(InputError, match="'max_input_size' must be between"):
        spec.parse({"input": "x.png", "max_input_size": largest + 1})


def test_the_resolution_level_preference_matches_moge_jobs():
    for field in _fields("resolution_level"):
        assert field.default == choices.valid_resolution_level(None)
        assert field.metadata["maximum"] == choices.valid_resolution_level(field.metadata["maximum"])
        assert choices.valid_resolution_level(field.metadata["maximum"] + 1) == field.default
    spec = JOB_SPECS[JobId.GENERATE_DEPTH_PLANE_GEOMETRY]
    with pytest.raises(InputError, match="'resolution_level' must be between"):
        spec.parse({"input": "x.png", "resolution_level": choices.RESOLUTION_LEVEL_MAX + 1})
