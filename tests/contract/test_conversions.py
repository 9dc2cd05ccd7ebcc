"""contract/conversions.json: exact pins only, Apache-2.0 sources only, and the entry a conversion registers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from imageforge.contract import InputError
from imageforge.contract.catalog import ModelFile, parse_catalog
from imageforge.contract.conversions import CONVERSIONS_FILE, load_conversions


def test_every_converter_package_is_an_exact_pin_and_torch_comes_from_the_cpu_index():
    environment = load_conversions().environment
    assert environment.python == "3.11" and environment.torch == "torch==2.13.0"
    assert environment.torch_index == "https://download.pytorch.org/whl/cpu"
    names = [pin.split("==")[0] for pin in environment.packages]
    assert "torch" not in names and len(names) == len(set(names))
    assert {"depth-anything-3", "safetensors", "onnx", "onnxruntime", "hydra-core", "setuptools"} <= set(names)
    # Published only as sdists: built last, without isolation; hydra-core 1.3's grammar needs antlr 4.9 (omegaconf
    # 2.4 vendors its own antlr, so DA3's omegaconf and sam2's hydra share the environment).
    assert environment.source_packages == ("antlr4-python3-runtime==4.9.3", "iopath==0.1.10", "sam2==1.1.0")
    assert environment.build_environment == {"SAM2_BUILD_CUDA": "0"}
    sources = [pin.split("==")[0] for pin in environment.source_packages]
    assert not set(sources) & set(names) and "torch" not in sources


def test_a_range_is_refused(tmp_path: Path):
    data = json.loads(CONVERSIONS_FILE.read_text(encoding="utf-8"))
    data["environment"]["packages"].append("torchvision>=0.1")
    changed = tmp_path / "conversions.json"
    changed.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match="exact pins, not 'torchvision>=0.1'"):
        load_conversions(changed)


def test_a_source_package_range_is_refused(tmp_path: Path):
    data = json.loads(CONVERSIONS_FILE.read_text(encoding="utf-8"))
    data["environment"]["source_packages"].append("sam2")
    changed = tmp_path / "conversions.json"
    changed.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match="exact pins, not 'sam2'"):
        load_conversions(changed)


def test_a_file_exporter_must_make_one_file(tmp_path: Path):
    data = json.loads(CONVERSIONS_FILE.read_text(encoding="utf-8"))
    data["conversions"][0]["result"]["files"].append("second.onnx")
    changed = tmp_path / "conversions.json"
    changed.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match="DA3_SMALL's exporter writes one file"):
        load_conversions(changed)


def test_only_the_apache_licensed_sizes_are_offered():
    conversions = load_conversions()
    assert [item.key for item in conversions.conversions] == ["DA3_SMALL", "DA3_BASE", "SAM2_TINY", "SAM2_SMALL"]
    assert {item.repository: item.files[0].path for item in conversions.conversions} == {
        "depth-anything/DA3-SMALL": "model.safetensors",
        "depth-anything/DA3-BASE": "model.safetensors",
        "facebook/sam2.1-hiera-tiny": "sam2.1_hiera_tiny.pt",
        "facebook/sam2.1-hiera-small": "sam2.1_hiera_small.pt",
    }
    assert {item.license for item in conversions.conversions} == {"Apache-2.0"}
    with pytest.raises(
        InputError,
        match="'DA3_LARGE' cannot be converted; convertible models are: DA3_SMALL, DA3_BASE, SAM2_TINY, SAM2_SMALL",
    ):
        conversions.get("DA3_LARGE")
    scripts = {
        item.key: (item.exporter.script, item.exporter.model, item.exporter.output) for item in conversions.conversions
    }
    assert scripts == {
        "DA3_SMALL": ("da3_export.py", "da3-small", "file"),
        "DA3_BASE": ("da3_export.py", "da3-base", "file"),
        "SAM2_TINY": ("sam2_export.py", "tiny", "folder"),
        "SAM2_SMALL": ("sam2_export.py", "small", "folder"),
    }
    converter = CONVERSIONS_FILE.parents[1] / "converter"
    assert all((converter / script).is_file() for script, _, _ in scripts.values())


def test_the_registered_entry_is_a_valid_camera_catalog_entry():
    conversion = load_conversions().get("DA3_BASE")
    record = conversion.catalog_record([ModelFile("da3_base_cameras.onnx", 123, "ab" * 32)])
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


def test_the_sam2_entry_is_a_segment_catalog_entry_of_two_graphs_with_the_reported_options():
    conversion = load_conversions().get("SAM2_TINY")
    files = [ModelFile("encoder.onnx", 100, "ab" * 32), ModelFile("decoder.onnx", 10, "cd" * 32)]
    record = conversion.catalog_record(files, {"stability_delta": 0.05, "stability_threshold": 0.98})
    (entry,) = parse_catalog({"models": [record]}, Path("overlay.json")).models
    assert (entry.key, entry.family, entry.adapter, entry.default) == ("SAM2_TINY_ONNX", "segment", "sam2", True)
    assert entry.options == {
        "encoder": "encoder.onnx",
        "decoder": "decoder.onnx",
        "stability_delta": 0.05,
        "stability_threshold": 0.98,
        "converted_from": "SAM2_TINY",
    }
    assert [(item.path, item.size) for item in entry.files] == [("encoder.onnx", 100), ("decoder.onnx", 10)]
    assert (conversion.source.family, conversion.source.directory) == ("segment", "SAM2.1-hiera-tiny")
