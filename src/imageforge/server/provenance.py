"""What really ran in a job: every model it loaded, the device asked for, the provider that ran, and the device
warnings it raised.

Users complain most about silent CPU fallback, so the answer is part of every inference job's result
(`provenance` → provenance.json, contract/provenance.py), not only a line in the log or a progress message the
next step replaces. Adapters are recorded as jobs load them (models/base.py `load_adapter`), warnings as the
"models" resource raises them (inference/job_messages.py `job_warner`); the handler writes the file once the
job has succeeded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..contract.provenance import FILE, RESULT_KEY, ModelRun, Provenance
from .job_context import JobContext
from .media import write_json

_ADAPTERS = "_imageforge_adapters"  # kept on the job's BlendJob context for the job's lifetime
_WARNINGS = "_imageforge_device_warnings"
_INPUT_WARNINGS = "_imageforge_input_warnings"


def record(context: JobContext, adapter: Any) -> None:
    _list(context, _ADAPTERS).append(adapter)


def note_warning(context: JobContext, message: str) -> None:
    """Keep a device warning for the job's provenance (once, however often the job hears it)."""
    warnings = _list(context, _WARNINGS)
    if message not in warnings:
        warnings.append(message)


def note_input_warning(context: JobContext, message: str) -> None:
    """Keep a warning about what a model was given (once) for the job's provenance, and say it in the job's log."""
    warnings = _list(context, _INPUT_WARNINGS)
    if message not in warnings:
        warnings.append(message)
        context.log(message, level="WARNING")


def collect(context: JobContext) -> Provenance:
    adapters = getattr(context, _ADAPTERS, None) or []
    models = tuple(
        ModelRun(
            model=adapter.entry.key,
            label=adapter.entry.label,
            requested_device=adapter.handle.requested.value,
            device=adapter.device.value,
            provider=adapter.provider,
            providers=tuple(adapter.handle.providers),
            intra_op_threads=adapter.handle.threads,
            runs=adapter.runs,
            model_seconds=adapter.model_seconds,
        )
        for adapter in adapters
    )
    return Provenance(
        models, tuple(getattr(context, _WARNINGS, None) or ()), tuple(getattr(context, _INPUT_WARNINGS, None) or ())
    )


def write(context: JobContext, directory: Path) -> dict[str, str]:
    """Write provenance.json for the models the job loaded; {} when it loaded none (downloads, flat cutouts)."""
    provenance = collect(context)
    if not provenance.models and not provenance.warnings and not provenance.input_warnings:
        return {}
    write_json(directory / FILE, provenance.to_json())
    return {RESULT_KEY: FILE}


def _list(context: JobContext, name: str) -> list[Any]:
    values = getattr(context, name, None)
    if values is None:
        values = []
        setattr(context, name, values)
    return values
