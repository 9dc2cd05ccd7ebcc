"""How the job server runs a module of its own code in a child Python process.

The child is the server environment's interpreter (`sys.executable`), which has exactly the shipped pins and
not BlendJob: the server process imports `blendjob` from the client's side (launcher.py), its children do not.
So a child must not run the package `__init__`s above its module (`server/inference/__init__.py` imports the
model manager, which imports BlendJob): the bootstrap below registers each parent package by its folder alone,
then imports the module and calls its `main(arguments)`. The module imports what it needs, nothing more; `-I`
keeps PYTHONPATH, the user's site-packages and the working folder out of it.

Every module run this way is listed in `CHILD_MODULES`; a test imports each one in the environment built from
server_environment.json (tests/kit/server_env.py), so a child that needs a module the pins lack fails there,
not on a user's machine (issue 28: the CPU copy's child needed `blendjob` and silently never ran).
"""

from __future__ import annotations

import sys
from pathlib import Path

PACKAGE_PARENT = Path(__file__).resolve().parents[2]  # the folder that holds the `imageforge` package

# Modules the server runs as children, each with a `main(arguments: list[str]) -> None`.
CHILD_MODULES = ("imageforge.server.cpu_copies.fp32_graph",)

BOOTSTRAP = """\
import importlib, os, sys, types
root, name, arguments = sys.argv[1], sys.argv[2], sys.argv[3:]
parts = name.split(".")
for depth in range(1, len(parts)):
    package = types.ModuleType(".".join(parts[:depth]))
    package.__path__ = [os.path.join(root, *parts[:depth])]
    sys.modules[package.__name__] = package
importlib.import_module(name).main(arguments)
"""


def child_command(module: str, arguments: list[str], *, python: str | None = None) -> list[str]:
    """The command line that runs `module.main(arguments)` in a child of this interpreter (or `python`)."""
    if module not in CHILD_MODULES:
        raise ValueError(f"{module} is not a registered child module")
    return [python or sys.executable, "-I", "-c", BOOTSTRAP, str(PACKAGE_PARENT), module, *arguments]
