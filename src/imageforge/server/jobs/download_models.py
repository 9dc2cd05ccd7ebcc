"""download-model and download-required-models: make catalog models ready in the storage root."""

from __future__ import annotations

import json
from pathlib import Path

from blendjob.server import JobCancelled

from ...contract.catalog import load_catalog
from ...contract.jobs import DownloadModelParams, DownloadRequiredModelsParams
from ..downloads.fetch import DownloadCancelled
from ..downloads.install import ensure_models

MANIFEST = "manifest.json"


def run_download_model(context, params: DownloadModelParams) -> dict[str, str]:
    return _download(context, [params.model])


def run_download_required_models(context, params: DownloadRequiredModelsParams) -> dict[str, str]:
    return _download(context, params.models)


def _download(context, keys: list[str] | None) -> dict[str, str]:
    catalog = load_catalog()
    entries = [catalog.get(key) for key in keys] if keys is not None else list(catalog.defaults)
    context.progress(0.0, "Checking model files")
    try:
        outcome = ensure_models(
            Path(context.storage_root),
            entries,
            report=context.progress,
            cancelled=context._is_cancelled,
        )
    except DownloadCancelled:
        raise JobCancelled("Download cancelled; it will resume next time.") from None
    (Path(context.directory) / MANIFEST).write_text(json.dumps({"models": outcome}, indent=2), encoding="utf-8")
    return {"manifest": MANIFEST}
