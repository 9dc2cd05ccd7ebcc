"""The jobs: each is a function `run_<job id>(context, params) -> {result name: file name}` (dashes become
underscores: `run_upscale_image` runs `upscale-image`), one module per job or per family of debug jobs, each
registered with `@runs(<its contract constant>)` (server/job_runners.py).
A job module reads top to bottom and imports only the layers below it (job_steps/, models/, inference/,
media/, geometry/, downloads/, contract/), never another job module: what two jobs share is a step.

Every module of this package is imported here, so a new job module needs no entry in a list. JOB_RUNNERS maps
every job id of the contract to its runner (tests/server/test_handler.py checks that none is missing, so the
server registers every job the add-on and the CLI can submit, and that each runner carries its job's name,
handler.runner_name()).
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from ...contract import JobId
from ..job_context import Runner
from ..job_runners import registered_runners

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

JOB_RUNNERS: dict[JobId, Runner[Any]] = {job_id: job.run for job_id, job in registered_runners().items()}
