"""The local wheelhouse the convert-model tests build the converter environment from (no network in tests).

`bash tests/sync` runs this once per machine (installing may use PyPI; tests may not): every pinned package of
contract/conversions.json but torch is downloaded as a Python 3.11 wheel for this platform into
`.cache/converter-wheels/` (git-ignored), and torch's CPU wheel is linked there from $IMAGEFORGE_TORCH_WHEELS
(default /opt/wheels, where the development and CI machines keep it). Present wheels are not fetched again.

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
    """The pins (torch included) without a wheel of that name and version in `folder`."""
    environment = load_conversions().environment
    present = {  # (name, version without a local label: torch's CPU wheel is 2.13.0+cpu)
        (_normalise(wheel.name.split("-")[0]), wheel.name.split("-")[1].split("+")[0])
        for wheel in folder.glob("*.whl")
        if wheel.exists()
    }
    wanted = [environment.torch, *environment.packages]
    return [pin for pin in wanted if (_normalise(pin.split("==")[0]), pin.split("==")[1]) not in present]


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
    pins = [pin for pin in missing(folder) if not pin.startswith("torch==")]
    if not pins:
        return
    python = subprocess.run(
        ["uv", "python", "find", "3.11"], capture_output=True, text=True, check=True, env={**os.environ}
    ).stdout.strip()
    subprocess.run(
        [python, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:", "-d", str(folder), *pins],
        check=True,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )


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
