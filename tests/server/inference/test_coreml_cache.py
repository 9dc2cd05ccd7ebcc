"""The CoreML compile cache: keyed on everything that shapes a compilation, one folder per model."""

from __future__ import annotations

from pathlib import Path

from imageforge.server.inference.coreml_cache import CoreMLCache, cache_key


def test_key_changes_with_files_options_dimensions_and_version(tmp_path: Path):
    model = tmp_path / "model.onnx"
    model.write_bytes(b"weights v1")
    base = cache_key([model], {"RequireStaticInputShapes": "1"}, {"batch": 1}, "1.23.2")
    assert base == cache_key([model], {"RequireStaticInputShapes": "1"}, {"batch": 1}, "1.23.2")
    assert base != cache_key([model], {"RequireStaticInputShapes": "0"}, {"batch": 1}, "1.23.2")
    assert base != cache_key([model], {"RequireStaticInputShapes": "1"}, {"batch": 2}, "1.23.2")
    assert base != cache_key([model], {"RequireStaticInputShapes": "1"}, {"batch": 1}, "1.24.0")
    model.write_bytes(b"weights v2")  # same path, new download
    assert base != cache_key([model], {"RequireStaticInputShapes": "1"}, {"batch": 1}, "1.23.2")


def test_a_changed_key_prunes_the_stale_folder_but_not_other_models(tmp_path: Path):
    model = tmp_path / "model.onnx"
    model.write_bytes(b"weights v1")
    cache = CoreMLCache(tmp_path / "storage")
    old = cache.folder_for("MOGE2", [model], {}, {}, "1.23.2")
    other = cache.folder_for("MOGE2_VITL", [model], {}, {}, "1.23.2")
    assert old.parent == tmp_path / "storage" / "cache" / "coreml" and old.is_dir() and other.is_dir()
    assert cache.folder_for("MOGE2", [model], {}, {}, "1.23.2") == old  # same key: reused, kept
    new = cache.folder_for("MOGE2", [model], {}, {}, "1.24.0")
    assert new != old and new.is_dir()
    assert not old.exists()
    assert other.is_dir()


def test_clear_removes_one_folder_only_inside_the_cache(tmp_path: Path):
    model = tmp_path / "model.onnx"
    model.write_bytes(b"weights")
    cache = CoreMLCache(tmp_path / "storage")
    folder = cache.folder_for("BEN2", [model], {}, {}, "1.23.2")
    cache.clear(tmp_path)  # not a cache folder: left alone
    assert model.exists()
    cache.clear(folder)
    assert not folder.exists()
