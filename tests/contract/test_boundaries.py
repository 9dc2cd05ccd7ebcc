"""The process boundaries hold: the server never imports bpy, the contract imports only the standard library, and
the add-on and the CLI never import the server package. Relative imports count: each is resolved to the module
it names before it is checked."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "imageforge"
ADDON = "addon"  # the Blender add-on; the package root itself holds only register()/unregister()


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(path: Path) -> set[str]:
    """Every module the file imports, relative imports resolved to absolute dotted names."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)  # `from .. import server`
    return names


def imported_modules(path: Path) -> set[str]:
    return {name.split(".")[0] for name in imported_names(path)}


def python_files(folder: str) -> list[Path]:
    return sorted((PACKAGE / folder).rglob("*.py"))


def addon_and_cli_files() -> list[Path]:
    files = sorted(PACKAGE.glob("*.py"))
    for folder in [ADDON, "cli", "client"]:
        files += python_files(folder)
    return files


@pytest.mark.parametrize("folder", ["server", "client", "contract", "cli"])
def test_no_bpy_outside_the_addon(folder):
    offenders = [str(path) for path in python_files(folder) if {"bpy", "bmesh", "mathutils"} & imported_modules(path)]
    assert offenders == []


def test_contract_is_standard_library_only():
    for path in python_files("contract"):
        ours = {name for name in imported_names(path) if name.split(".")[0] == "imageforge"}
        assert imported_modules(path) <= set(sys.stdlib_module_names) | {"imageforge"}, path
        assert all(name.startswith("imageforge.contract") for name in ours), (path, ours)


def test_farm_descriptions_are_standard_library_only():
    """farm/ (OpenJD bundles, the Flamenco job type) is written by the CLI and by Blender's Send to Farm alike."""
    for path in python_files("farm"):
        ours = {name for name in imported_names(path) if name.split(".")[0] == "imageforge"}
        assert imported_modules(path) <= set(sys.stdlib_module_names) | {"imageforge"}, path
        assert all(name.split(".")[1] in ("contract", "farm") for name in ours if "." in name), (path, ours)


def test_the_addon_and_the_cli_never_import_the_server():
    offenders = {}
    for path in addon_and_cli_files():
        relative = path.relative_to(PACKAGE).as_posix()
        server = {name for name in imported_names(path) if name.split(".")[:2] == ["imageforge", "server"]}
        if server:
            offenders[relative] = sorted(server)
    assert offenders == {}


def test_relative_imports_are_resolved_before_they_are_checked(tmp_path, monkeypatch):
    folder = tmp_path / "imageforge" / "contract"
    folder.mkdir(parents=True)
    module = folder / "sneaky.py"
    module.write_text("from ..server.media import write_png\nfrom .. import server\nfrom . import errors\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "imageforge")
    assert imported_names(module) == {
        "imageforge.server.media",
        "imageforge.server.media.write_png",
        "imageforge",
        "imageforge.server",
        "imageforge.contract",
        "imageforge.contract.errors",
    }


def test_package_init_does_not_import_bpy():
    assert "bpy" not in imported_modules(PACKAGE / "__init__.py")


def test_the_package_root_holds_only_the_extension_entry_point():
    assert [path.name for path in PACKAGE.glob("*.py")] == ["__init__.py"]
    assert {"addon", "cli", "client", "contract", "server"} <= {path.name for path in PACKAGE.iterdir()}


def import_cycles(package: Path) -> list[list[str]]:
    """Groups of modules that import each other, directly or around a loop (function-level imports count).

    Imports of a package's __init__ are left out: server/__init__.py is BlendJob's entrypoint and imports the
    app by design, and an __init__ that re-exports its submodules is not a loop between two concerns."""
    files = {_module_name(path): path for path in package.rglob("*.py")}
    graph = {
        module: {name for name in imported_names(path) if name in files and files[name].name != "__init__.py"}
        for module, path in files.items()
    }
    cycles, done = [], set()
    for start in sorted(graph):
        reachable = _reachable(graph, start)
        if start in reachable and start not in done:
            group = sorted(name for name in reachable if start in _reachable(graph, name))
            done.update(group)
            cycles.append(group)
    return cycles


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, frontier = set(), [start]
    while frontier:
        for name in graph[frontier.pop()] - seen:
            seen.add(name)
            frontier.append(name)
    return seen


def test_no_module_imports_itself_around_a_loop():
    assert import_cycles(PACKAGE) == []


def test_a_cycle_hidden_in_a_function_is_still_a_cycle(tmp_path, monkeypatch):
    folder = tmp_path / "imageforge" / "media"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    (folder / "image.py").write_text("def resized():\n    from .resample import resize_image\n")
    (folder / "resample.py").write_text("from .image import Image\n")
    (folder / "writers.py").write_text("from .image import Image\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "imageforge")
    assert import_cycles(tmp_path / "imageforge") == [["imageforge.media.image", "imageforge.media.resample"]]


# The server's layers, top to bottom: the app registers the jobs; a job composes steps; steps use the models,
# inference, media, geometry and downloads; everything uses the contract. What two jobs share is a step.
JOBS = "server/jobs"
JOB_STEPS = "server/job_steps"
BELOW_THE_STEPS = ["server/models", "server/inference", "server/cpu_copies", "server/media", "server/geometry",
                   "server/downloads", "server/upscaling", "server/matting"]  # fmt: skip
JOBS_IMPORTED_BY = {"server/app.py"}  # JOB_RUNNERS, for the server's handlers


def _imports_of(path: Path, folder: str) -> list[str]:
    """What `path` imports from `folder` (a package of imageforge), the package itself included."""
    target = "imageforge." + folder.replace("/", ".")
    return sorted(name for name in imported_names(path) if name == target or name.startswith(target + "."))


def jobs_importing_jobs(package: Path) -> dict[str, list[str]]:
    """Each module of server/jobs/ (its __init__, the registry, aside) with the job modules it imports."""
    offenders = {}
    for path in sorted((package / JOBS).glob("*.py")):
        if path.name != "__init__.py" and (names := _imports_of(path, JOBS)):
            offenders[path.name] = names
    return offenders


def test_a_job_never_imports_another_job():
    assert jobs_importing_jobs(PACKAGE) == {}


def test_a_job_importing_a_job_is_caught(tmp_path, monkeypatch):
    folder = tmp_path / "imageforge" / "server" / "jobs"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("from . import cutout, depth_plane\n")
    (folder / "depth_plane.py").write_text("from ..job_steps.region import Region\n")
    (folder / "cutout.py").write_text("def run():\n    from .depth_plane import Region\n")
    (folder / "inpaint.py").write_text("from imageforge.server.jobs import cutout\n")
    (folder / "refine.py").write_text("from .. import jobs\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "imageforge")
    assert jobs_importing_jobs(tmp_path / "imageforge") == {
        "cutout.py": ["imageforge.server.jobs.depth_plane", "imageforge.server.jobs.depth_plane.Region"],
        "inpaint.py": ["imageforge.server.jobs", "imageforge.server.jobs.cutout"],
        "refine.py": ["imageforge.server.jobs"],
    }


def test_only_the_app_imports_the_jobs():
    importers = {
        path.relative_to(PACKAGE).as_posix()
        for path in python_files("")
        if not path.is_relative_to(PACKAGE / JOBS) and _imports_of(path, JOBS)
    }
    assert importers == JOBS_IMPORTED_BY


@pytest.mark.parametrize("folder", BELOW_THE_STEPS)
def test_the_layers_below_the_steps_import_neither_steps_nor_jobs(folder):
    offenders = {
        path.relative_to(PACKAGE).as_posix(): _imports_of(path, JOB_STEPS) + _imports_of(path, JOBS)
        for path in python_files(folder)
    }
    assert {name: names for name, names in offenders.items() if names} == {}
