"""Download the default models right after the server environment is installed (BlendJob's `post_setup`).

BlendJob's setup worker calls `post_setup(setup)` with the server of the new folder running, then stops it
and saves the folder's location. Running `download-required-models` there means a fresh install ends with
models on disk, so the first click on Remove Background does not start a 200 MB download.

A failed download does not fail the setup: the environment is good, the models can be fetched later from
the panel, and failing here would throw away the saved server location (an offline user could never finish
setup). Cancelling does cancel the setup, as the user asked; the `.part` files stay for the next attempt.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..contract import ImageForgeError, InputError, JobId
from ..contract.health import DownloadsHealth, DownloadSource
from ..contract.results import ResultName
from .job_runner import JobCancelledError, run_job

PROGRESS_START = 0.5  # the share of the setup bar the downloads fill: after installing, before saving
PROGRESS_END = 0.9


@dataclass(frozen=True)
class ModelSetupResult:
    models: dict[str, dict[str, str]]  # {key: {file path: "downloaded" | "ready"}}; empty when it failed
    source: DownloadSource | None  # where this server ended up downloading from; None when not reported
    error: str | None = None  # the one-sentence reason when the downloads failed


@dataclass(frozen=True)
class _ServerOf:
    """`run_job` takes a runtime and uses its `.server`; setup hands us the controller of the new folder."""

    server: Any


def download_required_models(setup: Any, *, models: list[str] | None = None) -> ModelSetupResult:
    """Run `download-required-models` (the catalog's defaults unless `models` names keys) on setup's server."""

    def on_progress(status: dict[str, Any]) -> None:
        fraction = float(status.get("progress") or 0.0)
        setup.progress(PROGRESS_START + (PROGRESS_END - PROGRESS_START) * fraction, str(status.get("message") or ""))

    try:
        result = run_job(
            _ServerOf(setup.server),
            JobId.DOWNLOAD_REQUIRED_MODELS.value,
            {"models": models},
            on_progress=on_progress,
            cancel_requested=lambda: _cancel_requested(setup),
        )
        manifest = json.loads(result.file(ResultName.MANIFEST).read_text(encoding="utf-8"))
        downloaded = manifest["models"]
    except JobCancelledError as error:
        raise RuntimeError("Model download cancelled; it resumes next time.") from error
    except (ImageForgeError, RuntimeError, OSError, ValueError, KeyError, TypeError) as error:
        # ImageForgeError: the job failed. RuntimeError: BlendJob's client (the server died or answered an
        # HTTP error) or JobResult.file (a result outside the job folder). The rest: an unreadable manifest.
        reason = str(error) if not isinstance(error, KeyError) else f"the manifest has no {error} entry"
        setup.progress(PROGRESS_END, f"Models not downloaded: {reason}")
        return ModelSetupResult({}, _source(setup), reason)
    return ModelSetupResult(downloaded, _source(setup))


def _cancel_requested(setup: Any) -> bool:
    try:
        setup.check_cancelled()
    except RuntimeError:
        return True
    return False


def _source(setup: Any) -> DownloadSource | None:
    try:
        raw = setup.server.resource("downloads")
    except (OSError, RuntimeError, KeyError, AttributeError, ValueError):
        return None
    try:
        return DownloadsHealth.from_json(raw).source
    except InputError:
        return None
