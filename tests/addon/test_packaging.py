"""The extension zip: built by Blender's own CLI from a small vendor folder, validated, installed, enabled."""

from __future__ import annotations

import os
import sys
import tomllib
import zipfile
from pathlib import Path

import addon_utils
import bpy
import pytest
from tests.kit.extension import local_vendor

PROJECT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def vendor(tmp_path_factory) -> Path:
    """vendor/ as imageforge-vendor lays it out, without the network (tests/kit/extension.py)."""
    return local_vendor(tmp_path_factory.mktemp("vendor"))


@pytest.fixture(scope="module")
def built(vendor, tmp_path_factory) -> Path:
    from imageforge.cli.build import build

    return build("linux-x64", output_dir=tmp_path_factory.mktemp("dist"), vendor=vendor)


def test_the_zip_holds_the_add_on_server_and_contract_but_not_the_cli(built):
    assert built.name == "imageforge-0.1.0-linux-x64.zip"
    with zipfile.ZipFile(built) as archive:
        names = set(archive.namelist())
        manifest = tomllib.loads(archive.read("blender_manifest.toml").decode())
        uv = archive.getinfo("tools/uv")
    assert {
        "__init__.py",
        "addon/registration.py",
        "addon/operators/__init__.py",
        "server/__init__.py",
        "server/app.py",
        "contract/jobs.py",
    } <= names
    assert {"client/server_environment.json", "contract/models.json"} <= names
    assert "wheels/blendjob-0.1.24-py3-none-any.whl" in names
    assert not any(name.startswith("cli/") or "__pycache__" in name or name.endswith(".pyc") for name in names)
    assert manifest["platforms"] == ["linux-x64"]
    assert manifest["wheels"] == ["./wheels/blendjob-0.1.24-py3-none-any.whl"]
    assert manifest["blender_version_min"] == "4.5.0"
    assert set(manifest["permissions"]) == {"network", "files"}
    assert uv.external_attr >> 16 & 0o111  # executable where zip extraction keeps modes


def test_blenders_cli_validates_the_zip(built):
    from imageforge.cli.build import find_blender_ext, run_blender_ext

    assert "Success" in run_blender_ext(find_blender_ext(), "validate", str(built))


def test_the_repository_manifest_matches_the_project(tmp_path):
    manifest = tomllib.loads((PROJECT / "blender_manifest.toml").read_text(encoding="utf-8"))
    project = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert manifest["version"] == project["version"]
    assert tuple(int(part) for part in manifest["blender_version_min"].split(".")) <= bpy.app.version
    # Open-ended unless a release is known to break it, and never a ceiling below a release the matrix tests.
    if "blender_version_max" in manifest:
        assert bpy.app.version < tuple(int(part) for part in manifest["blender_version_max"].split("."))


def test_missing_vendor_files_are_a_clear_error(tmp_path):
    from imageforge.cli.build import BuildError, build

    with pytest.raises(BuildError, match="imageforge-vendor"):
        build("windows-x64", output_dir=tmp_path, vendor=tmp_path / "empty")


def test_the_built_zip_installs_and_enables_in_blender(built):
    module = "bl_ext.user_default.imageforge"
    assert bpy.ops.extensions.package_install_files(
        filepath=str(built), repo="user_default", enable_on_install=True
    ) == {"FINISHED"}
    try:
        installed = sys.modules[module]
        folder = Path(installed.__file__).parent
        assert folder.parent.name == "user_default"
        assert (folder / "server" / "__init__.py").is_file() and not (folder / "cli").exists()
        assert bpy.ops.imageforge.depth_plane.get_rna_type().bl_rna.identifier == "IMAGEFORGE_OT_depth_plane"
        assert (folder / "addon" / "operators" / "__init__.py").is_file()
        # Preferences are keyed by the extension's ROOT package, not by the addon/ subpackage that defines them:
        # saved preferences and keymaps from before the add-on moved into addon/ still load.
        preferences = sys.modules[f"{module}.addon.preferences"]
        assert preferences.addon_package() == module
        assert preferences.ImageForgePreferences.bl_idname == module
        assert bpy.context.preferences.addons[module].preferences.max_input_size == 2048
        assert preferences.get_preferences().max_input_size == 2048
        runtime = sys.modules[f"{module}.addon.blender_runtime"]
        assert f"{module}.client.model_setup" == runtime.DOWNLOADS_MODULE
        assert (runtime.BUNDLED_TOOLS / "uv").is_file()
        target = Path(os.environ["IMAGEFORGE_STORAGE_ROOT"]) / "seeded"
        target.mkdir(parents=True, exist_ok=True)
        seeded = runtime.seed_bundled_uv(target)
        assert seeded is not None and os.access(seeded, os.X_OK)  # extraction lost the bit; seeding restores it
    finally:
        addon_utils.disable(module, default_set=True)
    assert not hasattr(bpy.types, "IMAGEFORGE_PT_server")
