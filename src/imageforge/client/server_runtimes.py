"""Which ONNX Runtime build the server environment installs: the platform's own, or Intel's OpenVINO build.

`default` is the platform's package of server_environment.json (onnxruntime-gpu on Linux, onnxruntime-directml
on Windows, onnxruntime on macOS). `openvino` installs `onnxruntime-openvino` instead, a full ONNX Runtime
with the OpenVINO execution provider (the same `onnxruntime` module: the two are never installed together),
from the pins of server_environment.json's `runtimes.openvino`; it exists only for x86-64 Linux and Windows.

The choice is the storage root's: `imageforge setup --runtime openvino` (or the add-on's Server Runtime
preference) records it in `<root>/server-runtime.json`, and every later check of the environment (the CLI,
the add-on, BlendJob's readiness rule) builds its pins from that record, so a changed choice changes the
environment's digest and the next setup rebuilds it; a command without `--runtime` keeps the recorded one.
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
from pathlib import Path

from .environment import ServerEnvironment, server_environment

DEFAULT = "default"
OPENVINO = "openvino"
RUNTIMES = (DEFAULT, OPENVINO)
RECORD = "server-runtime.json"
LABELS = {DEFAULT: "Platform default", OPENVINO: "Intel OpenVINO"}


class RuntimeChoiceError(RuntimeError):
    """A runtime this machine cannot have; the message is the one sentence to show."""


def environment_of(runtime: str) -> ServerEnvironment:
    """The pins of `runtime`: the platform packages of server_environment.json with the runtime's replacing
    them on each platform it exists for (the others keep theirs, and `check_runtime` refuses it there)."""
    base = server_environment()
    if runtime == DEFAULT:
        return base
    variants = base.get("runtimes", {})
    if runtime not in variants:
        raise RuntimeChoiceError(f"Unknown server runtime '{runtime}'; use one of {', '.join(RUNTIMES)}.")
    platforms = {**base["platform_packages"], **variants[runtime]}
    return ServerEnvironment(python=base["python"], packages=list(base["packages"]), platform_packages=platforms)


def check_runtime(runtime: str, *, system: str | None = None, machine: str | None = None) -> None:
    """Refuse, in one sentence, a runtime that has no build for this platform."""
    if runtime not in RUNTIMES:
        raise RuntimeChoiceError(f"Unknown server runtime '{runtime}'; use one of {', '.join(RUNTIMES)}.")
    if runtime != OPENVINO:
        return
    system = system or platform.system()
    machine = (machine or platform.machine()).lower()
    if system not in ("Linux", "Windows") or machine not in ("x86_64", "amd64"):
        where = "macOS" if system == "Darwin" else f"{system} on {machine}"
        raise RuntimeChoiceError(
            f"Intel OpenVINO has no ONNX Runtime build for {where} (only x86-64 Linux and Windows); "
            "keep the platform default runtime."
        )


def chosen_runtime(root: Path) -> str:
    """The runtime recorded in `root`, `default` when none is (or the record is unreadable)."""
    try:
        recorded = json.loads((Path(root) / RECORD).read_text(encoding="utf-8")).get("runtime")
    except (OSError, ValueError, AttributeError):
        return DEFAULT
    return recorded if recorded in RUNTIMES else DEFAULT


def record_runtime(root: Path, runtime: str) -> None:
    check_runtime(runtime)
    path = Path(root) / RECORD
    if runtime == DEFAULT:
        path.unlink(missing_ok=True)
    else:
        # Written beside and renamed over: a torn record would read as `default` and silently rebuild the other
        # runtime, and a link left at the record's name is replaced, never written through.
        handle, partial = tempfile.mkstemp(prefix=f".{RECORD}.", dir=root)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                stream.write(json.dumps({"runtime": runtime}) + "\n")
            os.replace(partial, path)
        except BaseException:
            Path(partial).unlink(missing_ok=True)
            raise


def environment_for(root: Path) -> ServerEnvironment:
    """The environment `root` is built with: its recorded runtime's pins."""
    return environment_of(chosen_runtime(root))
