"""The Blender test matrix has one home (pyproject.toml's `blender-*` groups), and the extension builds and
validates with the extension CLI of the oldest and the newest release in it."""

from __future__ import annotations

import tomllib
import zipfile
from pathlib import Path

import pytest

from imageforge.cli.blender_environments import EnvironmentListError, blender_environments
from imageforge.cli.blender_environments import main as list_main
from imageforge.cli.build import EXT_SCRIPT, build, find_blender_ext, run_blender_ext
from tests.kit.extension import local_vendor

PROJECT = Path(__file__).resolve().parents[2]


def test_the_matrix_is_45_lts_52_lts_and_53_oldest_first():
    found = [(environment.group, environment.bpy, environment.python) for environment in blender_environments()]
    assert found == [
        ("blender-4-5", "4.5.15", "3.11"),
        ("blender-5-2", "5.2.3", "3.13"),
        ("blender-5-3", "5.3.0", "3.13"),
    ]
    assert [environment.name for environment in blender_environments()] == ["4.5", "5.2", "5.3"]
    assert blender_environments()[0].interpreter == PROJECT / ".venv-blender-4-5" / "bin" / "python"


def test_the_shell_listing_is_one_line_per_environment(capsys):
    assert list_main([]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "blender-4-5 3.11 4.5.15",
        "blender-5-2 3.13 5.2.3",
        "blender-5-3 3.13 5.3.0",
    ]


def test_the_readme_states_every_release_of_the_matrix():
    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    for environment in blender_environments():
        assert f"| {environment.name}" in readme and f"bpy {environment.bpy}" in readme, environment.name
        assert f"Python {environment.python}" in readme


def fake_project(root: Path, groups: str, pythons: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "x"\n\n[dependency-groups]\n{groups}\n[tool.uv.dependency-groups]\n{pythons}\n',
        encoding="utf-8",
    )
    return root


def test_groups_are_sorted_by_release_and_other_groups_ignored(tmp_path):
    root = fake_project(
        tmp_path,
        'dev = ["pytest==9.2.0"]\nblender-5-10 = ["bpy==5.10.1"]\nblender-5-3 = ["pytest==9.2.0", "bpy==5.3.0"]\n',
        'blender-5-10 = { requires-python = ">=3.14,<3.15" }\nblender-5-3 = { requires-python = ">=3.13,<3.14" }\n',
    )
    found = blender_environments(root)
    assert [(environment.bpy, environment.python) for environment in found] == [("5.3.0", "3.13"), ("5.10.1", "3.14")]
    assert found[1].path == root / ".venv-blender-5-10"


def test_a_group_without_an_exact_bpy_pin_or_python_is_a_clear_error(tmp_path):
    python = 'blender-5-3 = { requires-python = ">=3.13" }'
    unpinned = fake_project(tmp_path / "a", 'blender-5-3 = ["bpy>=5.3"]\n', python)
    with pytest.raises(EnvironmentListError, match="blender-5-3 needs one exact `bpy==` pin"):
        blender_environments(unpinned)
    no_python = fake_project(tmp_path / "b", 'blender-5-3 = ["bpy==5.3.0"]\n', "")
    with pytest.raises(EnvironmentListError, match="requires-python lower bound"):
        blender_environments(no_python)


def test_the_build_uses_the_newest_synced_release_cli(tmp_path, monkeypatch):
    monkeypatch.delenv("IMAGEFORGE_BLENDER_EXT", raising=False)
    root = fake_project(
        tmp_path,
        'blender-4-5 = ["bpy==4.5.15"]\nblender-5-2 = ["bpy==5.2.3"]\nblender-5-3 = ["bpy==5.3.0"]\n',
        'blender-4-5 = { requires-python = ">=3.11" }\nblender-5-2 = { requires-python = ">=3.13" }\n'
        'blender-5-3 = { requires-python = ">=3.13" }\n',
    )
    scripts = {}
    for group, version in (("blender-4-5", "4.5"), ("blender-5-2", "5.2")):  # 5.3 is not synced here
        site = root / f".venv-{group}" / "lib" / "python3.x" / "site-packages"
        scripts[version] = site / "bpy" / version / Path(*EXT_SCRIPT)
        scripts[version].parent.mkdir(parents=True)
        scripts[version].write_text("# blender_ext.py\n", encoding="utf-8")
    assert find_blender_ext(project_root=root) == scripts["5.2"]


@pytest.fixture(scope="module")
def extension_clis() -> dict[str, Path]:
    """blender_ext.py of the oldest and the newest release in the matrix, from their synced environments."""
    oldest, newest = blender_environments()[0], blender_environments()[-1]
    found = {}
    for environment in (oldest, newest):
        scripts = sorted(environment.path.glob(f"lib/python3.*/site-packages/bpy/*/{Path(*EXT_SCRIPT).as_posix()}"))
        if not scripts:
            pytest.skip(f"{environment.path.name} is missing: tests/sync syncs it")
        found[environment.name] = scripts[0]
    return found


def test_each_release_cli_builds_a_zip_the_other_validates(extension_clis, tmp_path):
    vendor = local_vendor(tmp_path / "vendor")
    built = {
        name: build("linux-x64", output_dir=tmp_path / name, vendor=vendor, blender_ext=cli)
        for name, cli in extension_clis.items()
    }
    for name, archive in built.items():
        with zipfile.ZipFile(archive) as opened:
            manifest = tomllib.loads(opened.read("blender_manifest.toml").decode())
        assert manifest["blender_version_min"] == "4.5.0", name
        for validator, cli in extension_clis.items():
            assert "Success" in run_blender_ext(cli, "validate", str(archive)), (name, validator)
