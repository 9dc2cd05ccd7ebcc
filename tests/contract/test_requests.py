"""A client builds a job's parameter dataclass and serialises it once (`JobSpec.request`): the plain dict it sends
parses back to the same value on the server, and what the server would refuse is refused before sending."""

from __future__ import annotations

import dataclasses

import pytest

from imageforge.contract import JOB_SPECS, Device, InputError
from imageforge.contract.catalog import builtin_families
from imageforge.contract.jobs import (
    GENERATE_CUTOUT_ARTIFACTS,
    INPAINT_IMAGE,
    REMOVE_BACKGROUND,
    CutoutParams,
    InpaintImageParams,
    NormalMode,
    OutputKind,
    RemoveBackgroundParams,
)
from imageforge.contract.parameters import (
    Selection,
    field_docs,
    model_parameters,
    path_parameters,
    setting_parameters,
    to_plain,
)
from imageforge.contract.selection_geometry import MaskRuns


def required_only(spec) -> dict:
    """The job's required parameters, each with a value of its type (a path, a box, a catalog key)."""
    paths = path_parameters(spec.parameters)
    values = {"Selection": {"box": [0, 0, 1, 1]}, "str": "BEN2_BASE"}
    return {
        field["name"]: "x.png" if field["name"] in paths else values[field["type"]]
        for field in field_docs(spec.parameters)
        if field["required"]
    }


@pytest.mark.parametrize("job_id", list(JOB_SPECS), ids=str)
def test_every_job_s_request_parses_back_to_the_same_parameters(job_id):
    spec = JOB_SPECS[job_id]
    parameters = spec.parse(required_only(spec))
    plain = spec.request(parameters)
    assert set(plain) == {field.name for field in dataclasses.fields(spec.parameters)}  # every field, once
    assert spec.parse(plain) == parameters


@pytest.mark.parametrize(
    "selection",
    [
        Selection(box=(1.0, 2.0, 30.0, 40.5)),
        Selection(lasso=((0.0, 0.0), (10.0, 0.0), (5.0, 8.0))),
        Selection(mask=MaskRuns(4, 2, (2, 3, 3))),
        Selection(mask_file="/tmp/mask.png"),
    ],
    ids=["box", "lasso", "mask", "mask_file"],
)
def test_enums_and_selections_travel_as_their_json_shape(selection):
    parameters = CutoutParams(input="/tmp/x.png", selection=selection, normal_mode=NormalMode.OBJECT)
    plain = GENERATE_CUTOUT_ARTIFACTS.request(parameters)
    assert plain["normal_mode"] == "object" and plain["device"] == "auto"
    assert plain["selection"] == selection.to_dict()
    assert GENERATE_CUTOUT_ARTIFACTS.parse(plain) == parameters


def test_a_value_the_server_would_refuse_is_refused_before_sending():
    with pytest.raises(InputError, match=r"^'max_input_size' must be between 1 and 8192; got 0\.$"):
        REMOVE_BACKGROUND.request(RemoveBackgroundParams(input="x.png", max_input_size=0))
    with pytest.raises(InputError, match="'output_kind' must be one of foreground, alpha"):
        REMOVE_BACKGROUND.request(RemoveBackgroundParams(input="x.png", output_kind="matte"))  # type: ignore[arg-type]
    plain = to_plain(RemoveBackgroundParams(input="x.png", output_kind=OutputKind.ALPHA, device=Device.CPU))
    assert (plain["output_kind"], plain["device"], plain["model"]) == ("alpha", "cpu", None)


def test_the_fields_a_client_fills_from_its_settings_and_its_model_choices():
    assert setting_parameters(CutoutParams) == {
        "resolution_level": "resolution_level",
        "device": "device",
        "max_input_size": "max_input_size",
    }
    assert model_parameters(CutoutParams) == {
        "geometry_model": "geometry",
        "background_model": "background",
        "inpaint_model": "inpaint",
    }
    assert "max_input_size" not in setting_parameters(InpaintImageParams)  # LaMa's own default, not the preference
    assert INPAINT_IMAGE.parameters is InpaintImageParams
    families = {family.key for family in builtin_families()}
    for spec in JOB_SPECS.values():
        assert set(model_parameters(spec.parameters).values()) <= families, spec.id
        assert set(setting_parameters(spec.parameters).values()) <= {"device", "max_input_size", "resolution_level"}
