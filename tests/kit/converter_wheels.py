"""The local wheelhouse the convert-model tests build the converter environment from (no network in tests).

`bash tests/sync` runs this once per machine (installing may use PyPI; tests may not): every pinned package of
contract/conversions.json but torch is downloaded as a Python 3.11 wheel for this platform into
`.cache/converter-wheels/` (git-ignored), the `source_packages` (sam2, iopath, antlr4 4.9.3: published only
as sdists) as their sdists, and torch's CPU wheel is linked there from $IMAGEFORGE_TORCH_WHEELS (default
/opt/wheels, where the development and CI machines keep it). Present files are not fetched again. (pip
prepares an sdist's metadata when downloading it; sam2's build needs torch, which it then takes from this
wheelhouse, never from an index: a few minutes, once.)

    uv run --locked --no-sync python -m tests.kit.converter_wheels [--check]
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from imageforge.contract.conversions import load_conversions

ROOT = Path(__file__).resolve().parents[2]
WHEELHOUSE = ROOT / ".cache" / "converter-wheels"
TORCH_WHEELS_VARIABLE = "IMAGEFORGE_TORCH_WHEELS"


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def missing(folder: Path = WHEELHOUSE) -> list[str]:
    """The pins (torch included) without a wheel (an sdist, for the source packages) of that name and version in
    `folder`."""
    environment = load_conversions().environment
    wheels = {  # (name, version without a local label: torch's CPU wheel is 2.13.0+cpu)
        (_normalise(wheel.name.split("-")[0]), wheel.name.split("-")[1].split("+")[0])
        for wheel in folder.glob("*.whl")
        if wheel.exists()
    }
    sdists = {
        (_normalise(sdist.name[: -len(".tar.gz")].rpartition("-")[0]), sdist.name[: -len(".tar.gz")].rpartition("-")[2])
        for sdist in folder.glob("*.tar.gz")
    }

    def absent(pin: str, present: set[tuple[str, str]]) -> bool:
        return (_normalise(pin.split("==")[0]), pin.split("==")[1]) not in present

    return [pin for pin in [environment.torch, *environment.packages] if absent(pin, wheels)] + [
        pin for pin in environment.source_packages if absent(pin, sdists)
    ]


def link_torch(folder: Path) -> None:
    pin = load_conversions().environment.torch
    version = pin.split("==")[1]
    source = Path(os.environ.get(TORCH_WHEELS_VARIABLE, "/opt/wheels"))
    wheels = sorted(source.glob(f"torch-{version}*-cp311-*.whl"))
    if not wheels:
        raise SystemExit(f"No {pin} wheel for Python 3.11 in {source} (set {TORCH_WHEELS_VARIABLE}).")
    target = folder / wheels[-1].name
    if not target.exists():
        target.unlink(missing_ok=True)  # a dangling link
        target.symlink_to(wheels[-1])


def download(folder: Path) -> None:
    environment = load_conversions().environment
    left = missing(folder)
    sources = [pin for pin in left if pin in environment.source_packages]
    wheels = [pin for pin in left if not pin.startswith("torch==") and pin not in sources]
    python = subprocess.run(
        ["uv", "python", "find", "3.11"], capture_output=True, text=True, check=True, env={**os.environ}
    ).stdout.strip()
    pip = [python, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(folder)]
    variables = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    if wheels:
        subprocess.run([*pip, "--only-binary=:all:", *wheels], check=True, env=variables)
    if sources:
        names = ",".join(pin.split("==")[0] for pin in sources)  # only these as source: their build's torch is a wheel
        command = [*pip, f"--no-binary={names}", "--find-links", str(folder), *sources]
        subprocess.run(command, check=True, env={**variables, **environment.build_environment})


def main(argv: list[str]) -> int:
    WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    if "--check" not in argv:
        link_torch(WHEELHOUSE)
        download(WHEELHOUSE)
    left = missing(WHEELHOUSE)
    if left:
        print(f"converter wheelhouse {WHEELHOUSE} lacks: {', '.join(left)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
