"""The model catalog loader: the built-in catalog, overrides, and the entries it refuses."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from imageforge.contract import InputError, ModelUnavailableError
from imageforge.contract.catalog import BUILTIN_CATALOG, Family, load_catalog, local_overlay_path, parse_catalog

VALID = {
    "key": "TEST",
    "family": "background",
    "adapter": "ben2",
    "label": "Test",
    "license": "MIT",
    "repository": "kit/test",
    "directory": "test",
    "normalization": "imagenet",
    "files": [{"path": "onnx/model.onnx", "size": 10, "sha256": "AB" * 32}],
}


def parse(*entries: dict):
    return parse_catalog({"models": list(entries)}, Path("catalog.json"))


def variant(**changes) -> dict:
    raw = copy.deepcopy(VALID)
    raw.update(changes)
    return raw


def test_builtin_catalog_matches_the_published_facts():
    catalog = load_catalog()
    assert catalog.source == BUILTIN_CATALOG
    ben2 = catalog.get("BEN2_BASE")
    assert (ben2.repository, ben2.directory, ben2.files[0].path) == (
        "onnx-community/BEN2-ONNX",
        "BEN2-ONNX",
        "onnx/model_fp16.onnx",
    )
    assert ben2.files[0].size == 219121675 and ben2.files[0].streamable
    assert ben2.options == {"normalization": "imagenet", "final_activation": "sigmoid"}
    assert {entry.key for entry in catalog.defaults} == {"BEN2_BASE", "MOGE2_VITB_NORMAL", "REALESRGAN_GENERAL_X4V3"}
    assert not catalog.get("MOGE2_VITL_NORMAL").files[0].streamable  # fetched with huggingface_hub
    general = catalog.get("REALESRGAN_GENERAL_X4V3").files[0]
    assert general.size is None and general.sha256 is not None  # hash declared, size not
    keys = [family.key for family in catalog.families]
    assert keys[:6] == ["background", "geometry", "upscale", "multiview", "inpaint", "segment"]  # preferences' order
    for family in catalog.families:
        if family.key != "segment":  # SAM 2.1 is converted on the user's machine: the local overlay's
            assert catalog.default_for(family.key).family == family.key
    assert not catalog.has_family(Family("segment"))
    lama = catalog.resolve(None, Family("inpaint"))  # fetched on first use, like DA3: not part of setup
    assert (lama.key, lama.adapter, lama.license, lama.repository) == ("LAMA", "lama", "Apache-2.0", "g-ronimo/lama")
    assert [item.path for item in lama.files] == ["lama.onnx"] and not lama.files[0].streamable  # no published hash


def test_optional_fields_are_kept_as_options_and_hashes_are_normalised():
    (entry,) = parse(VALID).models
    assert entry.options == {"normalization": "imagenet"}
    assert entry.default is False
    assert entry.files[0].sha256 == "ab" * 32
    assert entry.declared_size == 10


def test_unknown_key_lists_the_valid_ones():
    catalog = parse(VALID, variant(key="OTHER"))
    with pytest.raises(ModelUnavailableError, match=r"^Unknown model 'NOPE'; valid models are: TEST, OTHER\.$"):
        catalog.get("NOPE")


def test_resolve_checks_the_family():
    catalog = parse(VALID)
    assert catalog.resolve(None, Family("background")).key == "TEST"
    with pytest.raises(InputError, match="'TEST' is a background model, not a"):
        catalog.resolve("TEST", Family("upscale"))


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"files": []}, "'files' must be a non-empty list of {path, size?, sha256?} objects"),
        ({"files": "model.onnx"}, "'files' must be a non-empty list"),
        ({"files": ["model.onnx"]}, "each of 'files' must be an object with a 'path' string"),
        ({"family": "audio"}, "family 'audio' is not one of background, geometry, upscale, multiview, inpaint"),
        ({"directory": "../outside"}, "directory '../outside' could leave the models folder"),
        ({"directory": "C:/models"}, "directory 'C:/models' could leave the models folder"),
        ({"files": [{"path": "/etc/passwd"}]}, "file path '/etc/passwd' could leave the models folder"),
        ({"files": [{"path": "a\\..\\..\\b"}]}, "file path 'a\\\\..\\\\..\\\\b' could leave the models folder"),
        ({"files": [{"path": "m.onnx", "size": "10"}]}, "size of 'm.onnx' must be a byte count"),
        ({"files": [{"path": "m.onnx", "size": -1}]}, "size of 'm.onnx' must be a byte count"),
        ({"files": [{"path": "m.onnx", "sha256": "abc"}]}, "sha256 of 'm.onnx' must be 64 hex digits"),
        ({"max_file_size": 0}, "max_file_size must be a positive byte count"),
    ],
)
def test_invalid_entries_are_refused_with_the_catalog_named_and_the_reason(changes, reason):
    with pytest.raises(
        ModelUnavailableError, match=r"^Model catalog catalog\.json: entry 'TEST' is invalid \("
    ) as raised:
        parse(variant(**changes))
    assert reason in str(raised.value) and str(raised.value).endswith(").")


def test_duplicate_keys_and_missing_fields_are_refused():
    with pytest.raises(ModelUnavailableError, match=r"entry 'TEST' is invalid \(the key 'TEST' appears twice\)\.$"):
        parse(VALID, VALID)
    incomplete = {name: value for name, value in VALID.items() if name != "repository"}
    with pytest.raises(ModelUnavailableError, match="an entry lacks 'repository'"):
        parse(incomplete)


def test_a_deeply_nested_catalog_is_refused_with_its_name(tmp_path: Path):
    nested = tmp_path / "nested.json"
    nested.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(
        ModelUnavailableError,
        match=rf"^Cannot read the model catalog {re.escape(str(nested))}: its JSON is nested too deeply to be a "
        r"catalog\.$",
    ):
        load_catalog(nested)


def test_a_file_without_a_declared_size_is_bounded_by_its_family_or_its_entry():
    background, upscale, own = parse(
        variant(), variant(key="U", family="upscale"), variant(key="O", max_file_size=5)
    ).models
    assert (background.max_file_size, upscale.max_file_size, own.max_file_size) == (2 * 1024**3, 1024**3, 5)
    assert own.options["max_file_size"] == 5


def test_the_environment_variable_overrides_the_builtin_catalog(tmp_path, monkeypatch):
    override = tmp_path / "catalog.json"
    override.write_text(json.dumps({"models": [VALID]}), encoding="utf-8")
    monkeypatch.setenv("IMAGEFORGE_MODEL_CATALOG", str(override))
    assert [entry.key for entry in load_catalog().models] == ["TEST"]
    override.write_text("{not json", encoding="utf-8")
    with pytest.raises(ModelUnavailableError, match=r"^Cannot read the model catalog .*catalog\.json"):
        load_catalog()


def test_the_local_overlay_replaces_adds_and_takes_the_default(tmp_path: Path, monkeypatch):
    base = tmp_path / "base.json"
    first, second = variant(key="A", default=True), variant(key="B")
    base.write_text(json.dumps({"models": [first, second, variant(key="G", family="geometry", default=True)]}))
    monkeypatch.setenv("IMAGEFORGE_MODEL_CATALOG", str(base))
    storage = tmp_path / "storage"
    assert [entry.key for entry in load_catalog(storage_root=storage).models] == ["A", "B", "G"]  # no overlay yet
    overlay = local_overlay_path(storage)
    overlay.parent.mkdir(parents=True)
    overlay.write_text(json.dumps({"models": [variant(key="B", label="B here"), variant(key="C", default=True)]}))
    catalog = load_catalog(storage_root=storage)
    assert [(entry.key, entry.label, entry.default) for entry in catalog.models] == [
        ("A", "Test", False),  # the family's default is now the overlay's
        ("B", "B here", False),
        ("G", "Test", True),  # another family keeps its own
        ("C", "Test", True),
    ]
    assert catalog.default_for(Family("background")).key == "C"
    assert [entry.key for entry in load_catalog().models] == ["A", "B", "G"]  # without a storage root: no overlay


def test_a_broken_overlay_is_named(tmp_path: Path):
    overlay = local_overlay_path(tmp_path)
    overlay.parent.mkdir(parents=True)
    overlay.write_text("{")
    with pytest.raises(ModelUnavailableError, match=f"Cannot read the model catalog {overlay}"):
        load_catalog(storage_root=tmp_path)


def test_a_catalog_declares_new_families_and_inherits_the_builtin_ones():
    relight = {"key": "relight", "label": "Relighting", "short_label": "Relight"}
    catalog = parse_catalog({"families": [relight], "models": [variant(family="relight")]}, Path("catalog.json"))
    keys = [family.key for family in catalog.families]
    assert keys[-1] == "relight" and set(keys[:-1]) == {family.key for family in load_catalog().families}
    assert catalog.families[-1].label == "Relighting"
    assert catalog.default_for(Family("relight")).key == "TEST"
    with pytest.raises(ModelUnavailableError, match="family 'relight' is not one of background, geometry"):
        parse(variant(family="relight"))  # not declared by this catalog nor the built-in one


@pytest.mark.parametrize(
    ("families", "reason"),
    [
        ("segment", "'families' must be a list"),
        ([{"key": "segment", "label": "Segmentation"}], "each family needs key, label, short_label"),
        ([{"key": "Seg-ment", "label": "S", "short_label": "S"}], "family key 'Seg-ment' is invalid"),
    ],
)
def test_malformed_families_are_refused(families, reason):
    with pytest.raises(ModelUnavailableError, match=reason):
        parse_catalog({"families": families, "models": [VALID]}, Path("catalog.json"))
