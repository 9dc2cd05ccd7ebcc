"""convert-model: make a model that has no official ONNX file that fits (DA3 with its camera decoder, SAM 2.1 as
an encoder and a decoder graph) on this machine.

Stages (progress):
1. 0.00–0.30 the converter environment (server/conversion/environment.py): reused when ready for the pins of
   contract/conversions.json, else built with uv (Python 3.11, torch CPU, depth-anything-3, sam2, onnx, …);
2. 0.30–0.50 the official weights through the verified, resumable download code (`<storage>/models/<directory>/`);
3. 0.50–0.95 the conversion's exporter as a child process (server/conversion/exporter.py), its progress
   streamed, killed on cancel; it checks the ONNX files against torch and keeps nothing that fails;
4. the checked files are moved into `<storage>/models/<directory>/` with their SHA-256 remembered and
   registered in the local catalog overlay as their family's default, so the family's jobs
   (generate-multiview-cameras, segment-image) find and prefer them.

Work happens in `<storage>/models/.staging/convert-<KEY>/`, deleted whatever the outcome: a cancelled or failed
conversion leaves no file that could be taken for a model (the downloaded weights and a ready environment stay
for the next try). The result `conversion.json` names the model key, its path (the file, or the folder of
several), the first file's size and SHA-256, every file's, the checks and the timings.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from blendjob.server import JobCancelled

from ...contract import ResourceExhaustedError
from ...contract.catalog import ModelFile
from ...contract.conversions import Conversion, ConverterEnvironment, load_conversions
from ...contract.jobs import CONVERT_MODEL, ConvertModelParams
from ...contract.model_files import models_root, remember_hash
from ...contract.results import ResultName
from ..conversion.environment import ensure_environment, ready_python, uv_step
from ..conversion.exporter import export_model
from ..conversion.local_catalog import register
from ..conversion.process import ProcessCancelled
from ..downloads.job_download import cancel_requested, download_into_job
from ..job_context import JobContext, JobResults
from ..job_runners import runs
from ..job_steps.progress import JobProgress, JobStages, Stage
from ..media import write_json

RESULT = "conversion.json"
ENVIRONMENT = Stage("Preparing the converter", 30)  # the throwaway converter environment, built once
DOWNLOADING = Stage("Downloading the weights", 20)
EXPORTING = Stage("Converting", 45)
STAGES = JobStages(ENVIRONMENT, DOWNLOADING, EXPORTING)
ENVIRONMENT_STEPS = 5  # the messages ensure_environment reports (Python, torch, wheels, source packages, ready)
MARGIN_BYTES = 500 * 1000**2


@runs(CONVERT_MODEL)
def run_convert_model(context: JobContext, params: ConvertModelParams) -> JobResults:
    progress = JobProgress(context, STAGES)
    conversions = load_conversions()
    conversion = conversions.get(params.model)
    storage = Path(context.storage_root)
    check_free_space(storage, conversions.environment, conversion)
    scratch = models_root(storage) / ".staging" / f"convert-{conversion.key}"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    cancelled = lambda: cancel_requested(context)  # noqa: E731
    timings: dict[str, float] = {}
    try:
        started = time.perf_counter()
        steps = iter(range(ENVIRONMENT_STEPS))
        python = ensure_environment(
            storage,
            conversions.environment,
            uv_step(scratch / "uv.log", cancelled),
            report=lambda message: progress.within(
                ENVIRONMENT, next(steps, ENVIRONMENT_STEPS) / ENVIRONMENT_STEPS, message
            ),
        )
        timings["environment_seconds"] = round(time.perf_counter() - started, 1)
        started = time.perf_counter()
        source = conversion.source
        download_into_job(context, [source], within=STAGES.span(DOWNLOADING))
        timings["download_seconds"] = round(time.perf_counter() - started, 1)
        weights = models_root(storage) / source.directory / source.files[0].path
        single = conversion.exporter.output == "file"
        exported = export_model(
            python,
            conversion,
            weights,
            scratch / (conversion.result.files[0] if single else conversion.result.directory),
            log=scratch / "exporter.log",
            cancelled=cancelled,
            report=lambda fraction, message: progress.within(EXPORTING, fraction, message),
            job_log=context.log,
        )
        timings["export_seconds"] = exported.seconds
        context.check_cancelled()
        progress.writing(f"Storing {conversion.result.label}")
        folder = models_root(storage) / conversion.result.directory
        folder.mkdir(parents=True, exist_ok=True)
        stored = []
        for item in exported.files:
            destination = folder / item.path.name
            os.replace(item.path, destination)
            remember_hash(storage, destination, item.sha256)
            stored.append((destination, item))
        files = [ModelFile(item.path.name, item.size, item.sha256) for item in exported.files]
        overlay = register(storage, conversion.catalog_record(files, exported.options))
    except ProcessCancelled:
        raise JobCancelled("Conversion cancelled; the downloaded weights are kept for the next try.") from None
    except OSError as error:
        if error.errno == 28:  # ENOSPC
            raise ResourceExhaustedError(f"The disk is full: could not convert {conversion.label}.") from error
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    described = ", ".join(f"{path} ({item.size} bytes, sha256 {item.sha256})" for path, item in stored)
    context.log(f"{conversion.result.key}: {described}; checks against torch {exported.checks}; {timings}")
    first_path, first = stored[0]
    write_json(
        Path(context.directory) / RESULT,
        {
            "model": conversion.result.key,
            "converted_from": conversion.key,
            "path": str(first_path if single else folder),
            "bytes": first.size,
            "sha256": first.sha256,
            "files": [{"path": str(path), "bytes": item.size, "sha256": item.sha256} for path, item in stored],
            **exported.checks,
            "local_catalog": str(overlay),
            **timings,
        },
    )
    return {ResultName.CONVERSION: RESULT}


def check_free_space(storage: Path, environment: ConverterEnvironment, conversion: Conversion) -> None:
    """Refuse before any work when the disk cannot hold the environment, the weights and the export."""
    needed = 2 * conversion.approximate_download_bytes + MARGIN_BYTES
    if ready_python(storage, environment) is None:
        needed += environment.approximate_bytes
    storage.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(storage).free
    if free < needed:
        raise ResourceExhaustedError(
            f"Converting {conversion.label} needs about {needed / 1e9:.1f} GB free in {storage}, "
            f"but only {free / 1e9:.1f} GB are; free some space and retry."
        )
