"""Set Up Server's installer: the process BlendJob's setup runs, made ImageForge's own (client/setup.py).

BlendJob's SetupController runs `runtime.install_command(source, root=…)` as a child of Blender and follows
its `install-status.json`. Its own installer fetches uv and Python from GitHub and packages from PyPI or one
fixed mirror, without hashes. The add-on replaces that command (addon/blender_runtime.py) with this file,
run by path with Blender's Python, so the button installs exactly as `imageforge setup` does: the Package
Index preference first, then the rest of the order (client/package_indexes.py), every file checked against
its pinned hash, a wheelhouse when the preferences name one. BlendJob's "mirror" source puts the Tsinghua
index first. The child finds our package and BlendJob through `--sys-path` (Blender's own path setup for
extensions does not happen in it).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PACKAGE_FOLDER = Path(__file__).resolve().parents[1]  # the extension's root package (`imageforge`)


@dataclass(frozen=True)
class SetupChoices:
    """What the preferences say about where the server's packages come from."""

    index: str = ""  # a KNOWN_INDEXES key or URL(s), tried before the rest; "" for the default order
    wheelhouse: str = ""  # a folder of wheels: install from it alone
    runtime: str = ""  # the ONNX Runtime build (client/server_runtimes.py); "" keeps the storage root's


def install_command(
    source: str = "official", *, root: Path, choices: Callable[[], SetupChoices] = SetupChoices
) -> list[str]:
    """The command Set Up Server runs (BlendJob's `install_command` signature)."""
    import blendjob

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    chosen = choices()
    index = chosen.index or ("tsinghua" if source == "mirror" else "")
    paths = [str(PACKAGE_FOLDER.parent), str(Path(blendjob.__file__).resolve().parents[1])]
    command = [sys.executable, str(Path(__file__).resolve()), "--storage-root", str(root),
               "--status", str(root / "install-status.json"), *(f"--sys-path={path}" for path in paths)]  # fmt: skip
    if chosen.runtime:
        command += ["--runtime", chosen.runtime]
    if index:
        command += ["--index", index]
    if chosen.wheelhouse:
        command += ["--wheelhouse", chosen.wheelhouse]
    return command


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="imageforge-setup")
    parser.add_argument("--storage-root", required=True)
    parser.add_argument("--status", required=True)
    parser.add_argument("--sys-path", action="append", default=[])
    parser.add_argument("--index")
    parser.add_argument("--wheelhouse")
    parser.add_argument("--runtime")
    args = parser.parse_args(argv)
    for entry in reversed(args.sys_path):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    setup: Any = importlib.import_module(f"{PACKAGE_FOLDER.name}.client.setup")
    from blendjob.environment import write_status

    steps = {"Creating": 0.15, "Downloading Python": 0.15, "Installing": 0.3, "Server environment is ready": 1.0}
    progress = [0.0]

    def report(message: str) -> None:
        print(message, flush=True)  # install.log
        progress[0] = next((value for word, value in steps.items() if message.startswith(word)), progress[0])
        write_status(args.status, progress[0], message)

    try:
        setup.prepare_environment(
            Path(args.storage_root), report=report, force=True, index=args.index,
            wheelhouse=Path(args.wheelhouse) if args.wheelhouse else None, runtime=args.runtime,
        )  # fmt: skip
    except (RuntimeError, OSError) as error:  # one sentence for install.log and the status; BlendJob reports it
        print(f"imageforge setup: {error}", file=sys.stderr, flush=True)
        write_status(args.status, progress[0], str(error), error=str(error))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
