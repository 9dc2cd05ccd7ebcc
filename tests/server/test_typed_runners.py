"""A runner registered for a job must take that job's parameter class: mypy refuses the wrong one.

The check is mypy's own, run on a small module that pairs the remove-background spec with a runner of the
upscale parameters (once through `@runs`, once through `make_handler`), beside the same module paired right.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

MODULE = """
from imageforge.contract.jobs import REMOVE_BACKGROUND, {params}
from imageforge.server.handler import make_handler
from imageforge.server.job_context import JobContext, JobResults
from imageforge.server.job_runners import runs


@runs(REMOVE_BACKGROUND)
def run_remove_background(context: JobContext, params: {params}) -> JobResults:
    return {{}}


def run_undecorated(context: JobContext, params: {params}) -> JobResults:
    return {{}}


make_handler(REMOVE_BACKGROUND, run_undecorated)
"""


def mypy(tmp_path: Path, params: str) -> subprocess.CompletedProcess[str]:
    module = tmp_path / f"pairing_{params.lower()}.py"
    module.write_text(MODULE.format(params=params), encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", str(module)],
        cwd=ROOT,
        env={**os.environ, "MYPYPATH": str(ROOT / "src")},  # the source tree, as tests/run checks it
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_runner_of_the_wrong_parameter_class_fails_mypy(tmp_path):
    right = mypy(tmp_path, "RemoveBackgroundParams")
    assert right.returncode == 0, right.stdout
    wrong = mypy(tmp_path, "UpscaleImageParams")
    assert wrong.returncode == 1
    errors = [line for line in wrong.stdout.splitlines() if "error:" in line]
    assert len(errors) == 2 and all("[arg-type]" in line for line in errors), wrong.stdout
    assert all('expected "Callable[[JobContext, RemoveBackgroundParams]' in line for line in errors)
