"""contract/conversions.json: exact pins only, Apache-2.0 sources only, and the entry a conversion registers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from imageforge.contract import InputError
from imageforge.contract.catalog import parse_catalog
from imageforge.contract.conversions import CONVERSIONS_FILE, load_conversions


def test_every_converter_package_is_an_exact_pin_and_torch_comes_from_the_cpu_index():
    environment = load_conversions().environment
    assert environment.python == "3.11" and environment.torch == "torch==2.13.0"
    assert environment.torch_index == "https://download.pytorch.org/whl/cpu"
    names = [pin.split("==")[0] for pin in environment.packages]
    assert "torch" not in names and len(names) == len(set(names))
    assert {"depth-anything-3", "safetensors", "onnx", "onnxruntime"} <= set(names)


def test_a_range_is_refused(tmp_path: Path):
    data = json.loads(CONVERSIONS_FILE.read_text(encoding="utf-8"))
    data["environment"]["packages"].append("torchvision>=0.1")
    changed = tmp_path / "conversions.json"
    changed.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match="exact pins, not 'torchvision>=0.1'"):
        load_conversions(changed)


def test_only_the_apache_licensed_sizes_are_offered():
    conversions = load_conversions()
    assert [item.key for item in conversions.conversions] == ["DA3_SMALL", "DA3_BASE"]
    assert {item.repository for item in conversions.conversions} == {
        "depth-anything/DA3-SMALL",
        "depth-anything/DA3-BASE",
    }
    assert {item.license for item in conversions.conversions} == {"Apache-2.0"}
    with pytest.raises(
        InputError, match="'DA3_LARGE' cannot be converted; convertible models are: DA3_SMALL, DA3_BASE"
    ):
        conversions.get("DA3_LARGE")


def test_the_registered_entry_is_a_valid_camera_catalog_entry():
    conversion = load_conversions().get("DA3_BASE")
    record = conversion.catalog_record(123, "ab" * 32)
    (entry,) = parse_catalog({"models": [record]}, Path("overlay.json")).models
    assert (entry.key, entry.family, entry.adapter, entry.default) == (
        "DA3_BASE_CAMERAS",
        "multiview",
        "da3",
        True,
    )
    assert entry.options == {"attention_heads": 12, "converted_from": "DA3_BASE"}
    assert entry.files[0].size == 123 and entry.files[0].sha256 == "ab" * 32
    source = conversion.source
    assert (source.repository, source.directory, source.files[0].path) == (
        "depth-anything/DA3-BASE",
        "DA3-BASE",
        "model.safetensors",
    )
