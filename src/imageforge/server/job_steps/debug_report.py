"""What every debug-* job writes: the arrays as NPZ and a JSON summary a person can read without NumPy.

The summary names the model, the provider that really ran (after any fallback), the session's tensor
signature, each array's shape, dtype and value range, and the timings of each stage.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ...contract import ResourceExhaustedError
from ...contract.jobs import DebugParams
from ...contract.results import ResultName
from ..job_context import JobContext
from ..media import Image, open_input, write_json, write_npz
from ..models import Adapter
from .model_loading import log_model_time, prepare_adapter
from .progress import PREPARING, READING, JobProgress, JobStages, Stage

A = TypeVar("A", bound=Adapter)
# Debug arrays (the input, raw outputs and the full-size frame, then their NPZ) cost about 40 bytes a pixel:
# 16 megapixels stay near 1 GiB, where the 268 megapixel limit of the other jobs would need about 10 GiB.
DEBUG_MAX_PIXELS = 4096 * 4096

RUNNING = Stage("Running model", 85)  # a still-image debug job: the model's one run (or its tiles)
DEBUG_STAGES = JobStages(PREPARING, READING, RUNNING)


def start_debug(
    context: JobContext, params: DebugParams, expect: type[A]
) -> tuple[JobProgress, A, Image, dict[str, float]]:
    """The start every still-image debug job shares: check the input, load the model, read the image, time it."""
    progress = JobProgress(context, DEBUG_STAGES)
    source = open_input(params.input, still_only=True)  # headers only: a bad file fails before any download
    check_debug_size(source.path.name, source.width, source.height)
    started = time.perf_counter()
    adapter = prepare_adapter(context, progress, params.model, params.device, expect)
    timings = {"load": time.perf_counter() - started}
    progress.enter(READING)
    started = time.perf_counter()
    image = source.read_still()
    timings["read"] = time.perf_counter() - started
    return progress, adapter, image, timings


def check_debug_size(name: str, width: int, height: int) -> None:
    """Refuse, before any model loads, images whose full-size debug arrays would not fit the memory budget."""
    if width * height > DEBUG_MAX_PIXELS:
        raise ResourceExhaustedError(
            f"Debug jobs keep every intermediate array at full size, so they take images of at most "
            f"{DEBUG_MAX_PIXELS // 1_000_000} megapixels (4096 × 4096); '{name}' is {width} × {height}, "
            "so scale it down first."
        )


def write_debug_outputs(
    context: JobContext,
    progress: JobProgress,
    adapter: Adapter,
    image: Image,
    arrays: dict[str, np.ndarray],
    timings: dict[str, float],
    extra: dict[str, Any],
) -> dict[ResultName, str]:
    """Write `raw` (NPZ) and `summary` (JSON); both or neither."""
    progress.writing()
    session = adapter.handle.session
    timings["total"] = time.perf_counter() - progress.started
    summary = {
        "model": adapter.entry.key,
        "label": adapter.entry.label,
        "adapter": adapter.name,
        "provider": adapter.provider,
        "providers": list(adapter.handle.providers),
        "device": adapter.device.value,
        "requested_device": adapter.handle.requested.value,
        "input": {"size": list(image.size), "sample_kind": image.sample_kind.value, "has_alpha": image.has_alpha},
        "signature": {
            "inputs": [_tensor(item) for item in session.get_inputs()],
            "outputs": [_tensor(item) for item in session.get_outputs()],
        },
        "arrays": {name: describe(value) for name, value in arrays.items()},
        "timings_s": {name: round(value, 6) for name, value in timings.items()},
        "model_seconds": round(adapter.model_seconds, 6),
        "runs": adapter.runs,
        **extra,
    }
    directory = Path(context.directory)
    write_npz(directory / "raw.npz", arrays)
    progress.writing("Writing summary")
    write_json(directory / "summary.json", summary)
    log_model_time(context, progress, adapter)
    return {ResultName.RAW: "raw.npz", ResultName.SUMMARY: "summary.json"}


def describe(array: np.ndarray) -> dict[str, Any]:
    """Shape, dtype and value range of an array (NaN and infinity counted, not propagated)."""
    values = np.asarray(array)
    finite = values[np.isfinite(values)] if values.dtype.kind == "f" else values
    stats: dict[str, Any] = {"shape": list(values.shape), "dtype": str(values.dtype)}
    if finite.size:
        stats.update(
            min=float(finite.min()),
            max=float(finite.max()),
            mean=float(finite.astype(np.float64).mean()),
        )
    if values.dtype.kind == "f":
        stats["non_finite"] = int(values.size - finite.size)
    return stats


def _tensor(item: Any) -> dict[str, Any]:
    return {
        "name": item.name,
        "shape": [dim if isinstance(dim, int) else str(dim) for dim in item.shape],
        "type": item.type,
    }
