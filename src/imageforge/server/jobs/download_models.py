"""download-model and download-required-models: make catalog models ready in the storage root.

Every key is resolved before any byte is fetched, so a typo fails at once with the list of valid keys
instead of after the first model's download. The download itself is the one every job runs for a missing
model (downloads/job_download.py): cancelled, the job ends `cancelled` with the `.part` files kept. On a
machine where only the CPU runs models, fp16 models get their fp32 CPU copy right after the download (first
CPU use would do it otherwise).
"""

from __future__ import annotations

from pathlib import Path

from ...contract import ImageForgeError
from ...contract.catalog import ModelEntry, load_catalog
from ...contract.jobs import DOWNLOAD_MODEL, DOWNLOAD_REQUIRED_MODELS, DownloadModelParams, DownloadRequiredModelsParams
from ...contract.results import ResultName
from ..downloads.job_download import download_into_job
from ..inference import ModelManager, current_fraction
from ..job_context import JobContext, JobResults, resource_of
from ..job_runners import runs
from ..media import write_json

MANIFEST = "manifest.json"


@runs(DOWNLOAD_MODEL)
def run_download_model(context: JobContext, params: DownloadModelParams) -> JobResults:
    return _download(context, [params.model])


@runs(DOWNLOAD_REQUIRED_MODELS)
def run_download_required_models(context: JobContext, params: DownloadRequiredModelsParams) -> JobResults:
    return _download(context, params.models)


def _download(context: JobContext, keys: list[str] | None) -> dict[ResultName, str]:
    catalog = load_catalog(storage_root=context.storage_root)
    entries = [catalog.get(key) for key in keys] if keys is not None else list(catalog.defaults)
    outcome = download_into_job(context, entries)
    prepare_for_cpu(context, entries)
    write_json(Path(context.directory) / MANIFEST, {"models": outcome})
    return {ResultName.MANIFEST: MANIFEST}


def prepare_for_cpu(context: JobContext, entries: list[ModelEntry]) -> None:
    """On a CPU-only machine, derive the fp32 CPU copy of each fp16 model now (cpu_copies/cpu_copy.py): setup is
    where a wait is expected, the first job is not. A failure only moves that wait to the first job."""
    try:
        manager = resource_of(context, "models", ModelManager)
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
