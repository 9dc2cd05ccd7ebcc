"""debug-ben2 and debug-upscale: run one adapter on a still and keep everything, for diagnosing a model.

`raw` (NPZ) holds what went into the model, what came out before any post-processing, and the
post-processed frame; `summary` (JSON) holds tensor signatures, shapes, dtypes, value ranges, timings and
the provider that really ran. A misbehaving export (wrong normalisation, swapped channels, fp16 overflow,
an upscaler whose output runs far outside [0, 1]) shows up in the ranges without opening any image.

debug-upscale records the raw output of the first tile, then runs the whole tiled upscale at the model's
own scale; keep `max_input_size` small (the frame is stored as float32).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from ...contract.catalog import Family
from ...contract.jobs import DebugParams
from ..media import Image, open_input, write_json, write_npz
from ..models import Adapter
from ..models.ben2 import Ben2Adapter
from ..models.display import display_pixels
from ..models.upscale import UpscaleAdapter
from .image_job import JobProgress, log_model_time, prepare_adapter
from .remove_background import analysed_rgb


def run_debug_ben2(context: Any, params: DebugParams) -> dict[str, str]:
    progress, adapter, image, timings = _start(context, params, Family.BACKGROUND)
    assert isinstance(adapter, Ben2Adapter)
    pixels = display_pixels(image)
    progress.running(0.0, "Running model")
    started = time.perf_counter()
    rgb = analysed_rgb(adapter, pixels, params.max_input_size)
    feed = adapter.preprocess(rgb)
    timings["preprocess"] = time.perf_counter() - started
    started = time.perf_counter()
    raw = adapter.run({adapter.input_name: feed}, last_run=True)
    timings["run"] = time.perf_counter() - started
    started = time.perf_counter()
    source_alpha = pixels[..., 3] if pixels.shape[2] == 4 else None
    alpha = adapter.postprocess(raw[adapter.output_name], image.size, source_alpha)
    timings["postprocess"] = time.perf_counter() - started
    frame = np.concatenate([pixels[..., :3], alpha[..., None]], axis=2)
    arrays = {"input": feed, **{f"raw_{name}": value for name, value in raw.items()}, "frame": frame}
    extra = {
        "analysed_size": [rgb.shape[1], rgb.shape[0]],
        "normalization": adapter.normalization,
        "model_input_size": list(adapter.input_size),
    }
    return _finish(context, progress, adapter, image, arrays, timings, extra)


def run_debug_upscale(context: Any, params: DebugParams) -> dict[str, str]:
    progress, adapter, image, timings = _start(context, params, Family.UPSCALE)
    assert isinstance(adapter, UpscaleAdapter)
    pixels = display_pixels(image.fit_long_edge(params.max_input_size))
    height, width = pixels.shape[:2]
    scale = adapter.model_scale
    plan = adapter.plan(height, width, scale=scale)
    tile_h, tile_w = min(plan.grid.tile, height), min(plan.grid.tile, width)
    feed = np.ascontiguousarray(pixels[None, :tile_h, :tile_w, :3].transpose(0, 3, 1, 2), dtype=adapter.dtype)
    progress.running(0.0, "Running model on the first tile")
    started = time.perf_counter()
    raw = adapter.run({adapter.input_name: feed}, last_run=False)
    timings["first_tile_run"] = time.perf_counter() - started
    frame = np.empty((height * scale, width * scale, pixels.shape[2]), dtype=np.float32)

    def sink(top: int, rows: np.ndarray) -> None:
        frame[top : top + rows.shape[0]] = rows

    def on_tile(done: int, total: int) -> None:
        progress.running(done / total, f"Upscaling tile {done}/{total}")

    started = time.perf_counter()
    adapter.upscale(pixels, plan, sink=sink, on_tile=on_tile, last_frame=True)
    timings["tiled_upscale"] = time.perf_counter() - started
    arrays = {"input": feed, **{f"raw_{name}": value for name, value in raw.items()}, "frame": frame}
    grid = plan.grid
    extra = {
        "analysed_size": [width, height],
        "model_scale": scale,
        "tiles": {
            "count": grid.count,
            "tile": grid.tile,
            "margin": grid.margin,
            "blend": grid.blend,
            "batch": plan.batch,
            "work_ratio": round(grid.work_ratio, 4),
        },
    }
    return _finish(context, progress, adapter, image, arrays, timings, extra)


def _start(context: Any, params: DebugParams, family: Family) -> tuple[JobProgress, Adapter, Image, dict[str, float]]:
    progress = JobProgress(context)
    started = time.perf_counter()
    adapter = prepare_adapter(context, progress, params.model, family, params.device)
    timings = {"load": time.perf_counter() - started}
    progress.stage(0.08, "Reading input")
    started = time.perf_counter()
    image = open_input(params.input, still_only=True).read_still()
    timings["read"] = time.perf_counter() - started
    return progress, adapter, image, timings


def _finish(
    context: Any,
    progress: JobProgress,
    adapter: Adapter,
    image: Image,
    arrays: dict[str, np.ndarray],
    timings: dict[str, float],
    extra: dict[str, Any],
) -> dict[str, str]:
    progress.writing()
    directory = Path(context.directory)
    write_npz(directory / "raw.npz", arrays)
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
        "input": {
            "size": list(image.size),
            "sample_kind": image.sample_kind.value,
            "has_alpha": image.has_alpha,
        },
        "signature": {
            "inputs": [_tensor(item) for item in session.get_inputs()],
            "outputs": [_tensor(item) for item in session.get_outputs()],
        },
        "arrays": {name: describe(value) for name, value in arrays.items()},
        "timings_s": {name: round(value, 6) for name, value in timings.items()},
        "model_seconds": round(getattr(adapter, "model_seconds", 0.0), 6),
        "runs": getattr(adapter, "runs", 0),
        **extra,
    }
    write_json(directory / "summary.json", summary)
    log_model_time(context, progress, adapter)
    return {"raw": "raw.npz", "summary": "summary.json"}


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
