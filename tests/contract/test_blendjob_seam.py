"""BlendJob's private names stay behind one seam per process: client/blendjob_compat.py and
server/blendjob_compat.py (openspec/0017). A private is a single-underscore name BlendJob defines (a
module-level name, a method, or an attribute it sets on self); a module names one when it imports it, reads
or calls it on an object, passes it to getattr/setattr/hasattr, overrides it in a subclass of a BlendJob
class, or uses it through self in such a subclass without defining it itself.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "imageforge"
COMPAT_MODULES = {"client/blendjob_compat.py", "server/blendjob_compat.py"}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def blendjob_privates() -> set[str]:
    root = Path(importlib.util.find_spec("blendjob").origin).parent
    names: set[str] = set()
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
                if isinstance(node, ast.ClassDef):
                    names.update(item.name for item in node.body if isinstance(item, ast.FunctionDef))
            elif isinstance(node, ast.Assign):
                names.update(target.id for target in node.targets if isinstance(target, ast.Name))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _is_self(node.value):
                names.add(node.attr)
    return {name for name in names if _private(name)}


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def _modules() -> dict[str, ast.Module]:
    return {
        path.relative_to(PACKAGE).as_posix(): ast.parse(path.read_text(encoding="utf-8"))
        for path in PACKAGE.rglob("*.py")
    }


def _blendjob_subclasses(modules: dict[str, ast.Module]) -> set[str]:
    """Names imported from blendjob, and every class of ours deriving from one (by name, to a fixed point)."""
    derived = {
        alias.asname or alias.name
        for tree in modules.values()
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "blendjob"
        for alias in node.names
    }
    while True:
        more = {
            node.name
            for tree in modules.values()
            for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef)
            and node.name not in derived
            and any(ast.unparse(base).split(".")[-1] in derived for base in node.bases)
        }
        if not more:
            return derived
        derived |= more


def named_privates(tree: ast.Module, privates: set[str], derived: set[str]) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "blendjob":
            found.update(alias.name for alias in node.names if alias.name in privates)
        elif isinstance(node, ast.Attribute) and node.attr in privates and not _is_self(node.value):
            found.add(node.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) > 1:
            name = node.args[1]
            accessor = node.func.id in ("getattr", "setattr", "hasattr") and not _is_self(node.args[0])
            if accessor and isinstance(name, ast.Constant):
                found.update({name.value} & privates)
        if isinstance(node, ast.ClassDef) and any(ast.unparse(base).split(".")[-1] in derived for base in node.bases):
            own = {
                inner.attr
                for inner in ast.walk(node)
                if isinstance(inner, ast.Attribute) and isinstance(inner.ctx, ast.Store) and _is_self(inner.value)
            }
            methods = {item.name for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))}
            found.update(methods & privates)
            found.update(
                inner.attr
                for inner in ast.walk(node)
                if isinstance(inner, ast.Attribute) and _is_self(inner.value) and inner.attr in privates - own
            )
    return found


def test_only_the_compatibility_modules_name_blendjob_privates():
    privates = blendjob_privates()
    assert {"_from_status", "_snapshot", "_poll_server", "_recover_connection"} <= privates  # the scan works
    modules = _modules()
    derived = _blendjob_subclasses(modules)
    offenders = {}
    for name, tree in sorted(modules.items()):
        if name in COMPAT_MODULES:
            continue
        extra = named_privates(tree, privates, derived)
        if extra:
            offenders[name] = sorted(extra)
    assert offenders == {}, (
        "BlendJob privates outside client/blendjob_compat.py and server/blendjob_compat.py: put the use there "
        "(with a test in tests/client or tests/server/test_blendjob_compat.py), see openspec/0017"
    )


def test_the_scan_catches_each_way_of_naming_a_private():
    privates, derived = {"_snapshot", "_poll_server", "_recover_connection"}, {"ServerController", "Ours"}
    source = """
from blendjob.server import _snapshot
runtime._poll_server = runtime._poll_server
value = getattr(context, "_snapshot", None)
class Ours(ServerController):
    def _recover_connection(self): ...
class Child(Ours):
    def run(self):
        return self._poll_server()
class Unrelated:
    def __init__(self):
        self._snapshot = None
"""
    assert named_privates(ast.parse(source), privates, derived) == {"_snapshot", "_poll_server", "_recover_connection"}
    own = """
class Unrelated:
    def __init__(self):
        self._snapshot = 1
    def read(self):
        return self._snapshot, getattr(self, "_snapshot", None)
"""
    assert named_privates(ast.parse(own), privates, derived) == set()
