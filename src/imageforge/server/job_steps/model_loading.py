"""Loading a job's model and saying in the job log what really ran where and how long the model itself took.

A missing model is downloaded inside the job first; its bytes and speed fill the bar up to `progress.download_end()`
(progress.py), below the stage at which jobs read their input.
"""

from __future__ import annotations

import time
from typing import TypeVar

from ...contract import Device, ModelUnavailableError
from ...contract.catalog import load_catalog
from ..cpu_copies.cpu_copy import copy_note, is_copy
from ..job_context import JobContext
from ..models import Adapter, load_adapter
from .progress import JobProgress

A = TypeVar("A", bound=Adapter)


def prepare_adapter(
    context: JobContext, progress: JobProgress, model: str | None, device: Device, expect: type[A]
) -> A:
    """Resolve the catalog entry of `expect`'s family (null: the family default), fetch it if missing, and load
    its adapter, which must be an `expect` (a custom catalog can name any adapter of the family)."""
    progress.here("Preparing model")  # a job's second model keeps the bar where it is
    family = expect.family
    entry = load_catalog(storage_root=context.storage_root).resolve(model, family)
    adapter = load_adapter(context, entry, device, download_until=progress.download_end())
    if not isinstance(adapter, expect):
        raise ModelUnavailableError(
            f"{entry.label} ({entry.adapter}) cannot run this job; choose another {family} model."
        )
    graph = adapter.handle.graph
    copy = f" from its fp32 CPU copy {graph.name}" if is_copy(graph) else ""
    if not copy and adapter.device is Device.CPU and graph is not None:
        note = copy_note(graph)
        copy = f" ({note})" if note else ""
    session = "session reused from an earlier job" if adapter.handle.reused else "session loaded"
    context.log(
        f"{entry.label} ({entry.key}) loaded for device {device.value}: "
        f"runs on {adapter.device.value} ({adapter.provider}){copy}, {adapter.handle.threads} intra-op threads; "
        f"{session}"
    )
    return adapter


def log_model_time(context: JobContext, progress: JobProgress, adapter: Adapter) -> None:
    """The job log's last word on inference: provider that ran (after any fallback), runs, model vs job time."""
    model_seconds = getattr(adapter, "model_seconds", 0.0)
    runs = getattr(adapter, "runs", 0)
    total = time.perf_counter() - progress.started
    context.log(
        f"Model ran {runs} time(s) on {adapter.provider} ({adapter.device.value}): "
        f"model {model_seconds:.3f} s of {total:.3f} s job time"
    )
