"""The process boundaries hold: the server never imports bpy, the contract imports only the standard library."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "imageforge"


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def python_files(folder: str) -> list[Path]:
    return sorted((PACKAGE / folder).rglob("*.py"))


@pytest.mark.parametrize("folder", ["server", "client", "contract", "cli"])
def test_no_bpy_outside_the_addon(folder):
    offenders = [str(path) for path in python_files(folder) if {"bpy", "bmesh", "mathutils"} & imported_modules(path)]
    assert offenders == []


def test_contract_is_standard_library_only():
    allowed = set(sys.stdlib_module_names) | {"imageforge"}
    for path in python_files("contract"):
        assert imported_modules(path) <= allowed, path


def test_package_init_does_not_import_bpy():
    assert "bpy" not in imported_modules(PACKAGE / "__init__.py")
