"""Flamenco: the job type `imageforge.js` (shipped beside this module) and the settings a submission carries.

Flamenco runs a Manager and workers; custom job types are JavaScript files in the `scripts/` folder next to the
`flamenco-manager` executable, compiled by the Manager into tasks of commands. `write_job_type` copies ours there;
`job_settings` gives the `settings` of a submission (`POST /api/v3/jobs` with `"type": "imageforge"`, or the
Manager's web form), the same steps as the OpenJD bundle (farm/openjd.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from .farm_job import COMMAND, FarmJob

JOB_TYPE_FILE = Path(__file__).resolve().parent / "flamenco" / "imageforge.js"
JOB_TYPE_NAME = "imageforge"


def write_job_type(directory: Path) -> Path:
    """Copy `imageforge.js` into `directory` (created); returns the written file."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / JOB_TYPE_FILE.name
    shutil.copyfile(JOB_TYPE_FILE, target)
    return target


def job_settings(job: FarmJob) -> dict[str, Any]:
    """The job type's settings for this submission."""
    parameters = {key: value for key, value in job.settings.items() if key != "model"}
    return {
        "imageforge_job": job.job,
        "input": job.input,
        "frames": job.frame_range,
        "chunk_size": job.chunk_size,
        "frames_folder": job.frames_folder,
        "output_folder": job.output_folder if job.video else "",
        "model": job.settings.get("model") or "",
        "parameters": json.dumps(parameters, sort_keys=True),
        "imageforge": COMMAND,
    }


__all__ = ["JOB_TYPE_FILE", "JOB_TYPE_NAME", "job_settings", "write_job_type"]
