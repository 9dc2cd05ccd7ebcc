"""download-model and download-required-models: make catalog models ready in the storage root.

Every key is resolved before any byte is fetched, so a typo fails at once with the list of valid keys
instead of after the first model's download. The source choice (hub or mirror) lives in the server's
`downloads` resource so that it outlives the job; cancellation becomes BlendJob's `JobCancelled` and the
job ends `cancelled` with the `.part` files kept for the next attempt. On a machine where only the CPU runs
models, fp16 models get their fp32 CPU copy right after the download (first CPU use would do it otherwise).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from blendjob.server import JobCancelled

from ...contract import ImageForgeError
from ...contract.catalog import ModelEntry, load_catalog
from ...contract.jobs import DownloadModelParams, DownloadRequiredModelsParams
from ..downloads.failures import DownloadCancelled
from ..downloads.install import ensure_models
from ..downloads.sources import DownloadSources
from ..inference import current_fraction
from ..media import write_json

MANIFEST = "manifest.json"
RESOURCE = "downloads"


def run_download_model(context: Any, params: DownloadModelParams) -> dict[str, str]:
    return _download(context, [params.model])


def run_download_required_models(context: Any, params: DownloadRequiredModelsParams) -> dict[str, str]:
    return _download(context, params.models)


def _download(context: Any, keys: list[str] | None) -> dict[str, str]:
    catalog = load_catalog()
    entries = [catalog.get(key) for key in keys] if keys is not None else list(catalog.defaults)
    outcome = download_into_job(context, entries)
    prepare_for_cpu(context, entries)
    write_json(Path(context.directory) / MANIFEST, {"models": outcome})
    return {"manifest": MANIFEST}


def prepare_for_cpu(context: Any, entries: list[ModelEntry]) -> None:
    """On a CPU-only machine, derive the fp32 CPU copy of each fp16 model now (inference/cpu_copy.py): setup is
    where a wait is expected, the first job is not. A failure only moves that wait to the first job."""
    try:
        manager = context.resource("models")
    except KeyError:  # a server built without the resource: first CPU use prepares the copy
        return

    def progress(message: str) -> None:
        context.progress(current_fraction(context), message)

    for entry in entries:
        context.check_cancelled()
        try:
            manager.prepare_for_cpu(entry, progress=progress)
        except ImageForgeError as error:  # ONNX Runtime missing, a file gone: the job that needs it will say so
            context.log(f"No CPU copy of {entry.label} prepared: {error}")


def download_into_job(
    context: Any, entries: list[ModelEntry], *, within: tuple[float, float] = (0.0, 1.0)
) -> dict[str, dict[str, str]]:
    """Make `entries` ready inside any job (an image job fetching its missing model), with its progress.

    The download's own 0 → 1 fills `within` of the job's bar (an image job gives it the share before its
    model runs); the message (file, percentage, speed) is the download's own.
    """
    start, end = within

    def report(fraction: float, message: str) -> None:
        context.progress(start + (end - start) * fraction, message)

    try:
        sources: DownloadSources = context.resource(RESOURCE)
    except KeyError:  # a server built without the resource still downloads, from the hub first
        sources = DownloadSources()
    try:
        outcome = ensure_models(
            Path(context.storage_root),
            entries,
            sources=sources,
            report=report,
            cancelled=lambda: _cancel_requested(context),
            log=context.log,
        )
    except DownloadCancelled:
        raise JobCancelled("Download cancelled; it will resume next time.") from None
    return outcome


def _cancel_requested(context: Any) -> bool:
    """BlendJob's public cancellation check raises; the download loop wants a yes or no between chunks."""
    try:
        context.check_cancelled()
    except JobCancelled:
        return True
    return False
