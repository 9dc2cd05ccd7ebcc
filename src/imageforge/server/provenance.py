"""What really ran in a job: every model it loaded, the device asked for, and the provider that ran.

Users complain most about silent CPU fallback, so the answer is part of every inference job's result
(`provenance` → provenance.json), not only a line in the log. Adapters are recorded as jobs load them
(models/base.py `load_adapter`); the handler writes the file once the job has succeeded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .media import write_json

FILE = "provenance.json"
_ATTRIBUTE = "_imageforge_adapters"  # kept on the job's BlendJob context for the job's lifetime


def record(context: Any, adapter: Any) -> None:
    adapters = getattr(context, _ATTRIBUTE, None)
    if adapters is None:
        adapters = []
        setattr(context, _ATTRIBUTE, adapters)
    adapters.append(adapter)


def write(context: Any, directory: Path) -> dict[str, str]:
    """Write provenance.json for the adapters the job loaded; {} when it loaded none (downloads, flat cutouts)."""
    adapters = getattr(context, _ATTRIBUTE, None) or []
    if not adapters:
        return {}
    models = [
        {
            "model": adapter.entry.key,
            "label": adapter.entry.label,
            "requested_device": adapter.handle.requested.value,
            "device": adapter.device.value,
            "provider": adapter.provider,
            "providers": list(adapter.handle.providers),
            "runs": adapter.runs,
            "model_seconds": round(adapter.model_seconds, 6),
        }
        for adapter in adapters
    ]
    write_json(directory / FILE, {"models": models})
    return {"provenance": FILE}
