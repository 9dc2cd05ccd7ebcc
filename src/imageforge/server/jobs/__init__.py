"""One module per job, each with `run(context, params) -> {result name: file name}`.

JOB_RUNNERS maps job ids to runners. A job id without a runner is still registered by the server and
fails with a clear "not available yet" message.
"""

from __future__ import annotations

from ...contract import JobId
from . import download_models

JOB_RUNNERS = {
    JobId.DOWNLOAD_MODEL: download_models.run_download_model,
    JobId.DOWNLOAD_REQUIRED_MODELS: download_models.run_download_required_models,
}
