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

import numpy as np

from ...contract.jobs import DEBUG_BEN2, DEBUG_UPSCALE, DebugParams
from ..job_context import JobContext, JobResults
from ..job_runners import runs
from ..job_steps.debug_report import RUNNING, start_debug, write_debug_outputs
from ..job_steps.matte import analysed_pixels
from ..media import fit_long_edge
from ..models.background import BackgroundAdapter
from ..models.display import display_pixels
from ..models.upscale import UpscaleAdapter


@runs(DEBUG_BEN2)
def run_debug_ben2(context: JobContext, params: DebugParams) -> JobResults:
    progress, adapter, image, timings = start_debug(context, params, BackgroundAdapter)
    pixels = display_pixels(image)
    progress.enter(RUNNING)
    started = time.perf_counter()
    analysed = analysed_pixels(adapter, pixels, params.max_input_size)
    feed = adapter.preprocess(analysed)
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
        "analysed_size": [analysed.shape[1], analysed.shape[0]],
        "normalization": adapter.normalization,
        "model_input_size": list(adapter.input_size),
    }
    return write_debug_outputs(context, progress, adapter, image, arrays, timings, extra)


@runs(DEBUG_UPSCALE)
def run_debug_upscale(context: JobContext, params: DebugParams) -> JobResults:
    progress, adapter, image, timings = start_debug(context, params, UpscaleAdapter)
    pixels = display_pixels(fit_long_edge(image, params.max_input_size))
    height, width = pixels.shape[:2]
    scale = adapter.model_scale
    plan = adapter.plan(height, width, scale=scale)
    tile_h, tile_w = plan.grid.rows[0].size, plan.grid.columns[0].size
    feed = np.ascontiguousarray(pixels[None, :tile_h, :tile_w, :3].transpose(0, 3, 1, 2), dtype=adapter.dtype)
    progress.enter(RUNNING, "Running model on the first tile")
    started = time.perf_counter()
    raw = adapter.run({adapter.input_name: feed}, last_run=False)
    timings["first_tile_run"] = time.perf_counter() - started
    frame = np.empty((height * scale, width * scale, pixels.shape[2]), dtype=np.float32)

    def sink(top: int, rows: np.ndarray) -> None:
        frame[top : top + rows.shape[0]] = rows

    def on_tile(done: int, total: int) -> None:
        progress.within(RUNNING, done / total, f"Upscaling tile {done}/{total}")

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
            "core": grid.core,
            "context": grid.context,
            "largest_run": list(grid.largest_run),
            "margin": grid.margin,
            "blend": grid.blend,
            "batch": plan.batch,
            "work_ratio": round(grid.work_ratio, 4),
        },
    }
    return write_debug_outputs(context, progress, adapter, image, arrays, timings, extra)
