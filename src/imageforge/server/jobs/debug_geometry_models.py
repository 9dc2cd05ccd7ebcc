"""debug-moge and debug-da3: run one geometry adapter and keep everything, for diagnosing a model export.

`raw` (NPZ) holds what went into the model (`input_*`), what came out before any post-processing (`raw_*`) and
the post-processed frame (`frame_*`); `summary` (JSON) holds the session's tensor signature, each array's
shape, dtype and value range, timings, and the provider that really ran. The tell-tale signs of a bad export
show in the summary alone: a mask that is never above 0.5, a metric scale of 1, normals that are not unit
length, DA3 cameras that are all identity, depth of the wrong sign.

debug-da3 reads a frame folder, a video or a single still (one view), runs all views in one model run (the
attention-memory guard applies with its default budget) and keeps depth at the source size.
"""

from __future__ import annotations

import time

import numpy as np

from ...contract import ResourceExhaustedError
from ...contract.jobs import DEBUG_DA3, DEBUG_MOGE, MEMORY_BUDGET_GIB_DEFAULT, DebugParams
from .. import provenance
from ..geometry.attention import GIB
from ..job_context import JobContext, JobResults
from ..job_runners import runs
from ..job_steps.debug_report import RUNNING, start_debug, write_debug_outputs
from ..job_steps.model_loading import prepare_adapter
from ..job_steps.progress import PREPARING, JobProgress, JobStages, Stage
from ..media import open_input
from ..models.da3 import DepthAnything3Adapter
from ..models.display import display_pixels, over_black
from ..models.moge2 import MoGe2Adapter

DEBUG_RESOLUTION_LEVEL = 9


READING_FRAMES = Stage("Reading frames", 2)
DA3_STAGES = JobStages(PREPARING, READING_FRAMES, RUNNING)


@runs(DEBUG_MOGE)
def run_debug_moge(context: JobContext, params: DebugParams) -> JobResults:
    progress, adapter, image, timings = start_debug(context, params, MoGe2Adapter)
    rgb = over_black(display_pixels(image))
    progress.enter(RUNNING)
    started = time.perf_counter()
    feeds = adapter.prepare(rgb, max_input_size=params.max_input_size, resolution_level=DEBUG_RESOLUTION_LEVEL)
    timings["preprocess"] = time.perf_counter() - started
    started = time.perf_counter()
    raw = adapter.run(feeds, last_run=True)
    timings["run"] = time.perf_counter() - started
    started = time.perf_counter()
    frame = adapter.frame(raw)
    timings["postprocess"] = time.perf_counter() - started
    intrinsics = frame.intrinsics
    arrays = {
        **{f"input_{name}": value for name, value in feeds.items()},
        **{f"raw_{name}": value for name, value in raw.items()},
        "frame_depth": frame.depth,
        "frame_points": frame.points,
        "frame_normal": frame.normal,
        "frame_valid": frame.valid,
        "frame_intrinsics": np.array([[intrinsics.fx, 0, intrinsics.cx], [0, intrinsics.fy, intrinsics.cy], [0, 0, 1]]),
    }
    extra = {
        "analysed_size": list(frame.size),
        "resolution_level": DEBUG_RESOLUTION_LEVEL,
        "num_tokens": int(np.asarray(feeds[adapter.tokens_input])) if adapter.tokens_input else None,
        "normal_head": "normal" in raw,
        "valid_fraction": round(float(frame.valid.mean()), 6),
        "intrinsics_px": intrinsics.in_pixels(*image.size),
        "reference_depth": frame.reference_depth() if frame.valid.any() else None,
    }
    return write_debug_outputs(context, progress, adapter, image, arrays, timings, extra)


@runs(DEBUG_DA3)
def run_debug_da3(context: JobContext, params: DebugParams) -> JobResults:
    source = open_input(params.input)
    progress = JobProgress(context, DA3_STAGES)
    started = time.perf_counter()
    adapter = prepare_adapter(context, progress, params.model, params.device, DepthAnything3Adapter)
    timings = {"load": time.perf_counter() - started}
    estimate = adapter.attention(source.frame_count)
    if estimate.bytes > MEMORY_BUDGET_GIB_DEFAULT * GIB:
        raise ResourceExhaustedError(
            f"{source.frame_count} frames at {adapter.size} px need about {estimate.bytes / GIB:.1f} GiB of attention "
            f"memory; debug at most {estimate.max_views(MEMORY_BUDGET_GIB_DEFAULT * GIB)} frames at once."
        )
    started = time.perf_counter()
    tensors, placements, first = [], [], None
    for frame in source.frames():
        progress.within(
            READING_FRAMES, frame.index / source.frame_count, f"Reading frame {frame.index + 1}/{source.frame_count}"
        )
        first = first or frame.image
        tensor, placement = adapter.place_view(over_black(display_pixels(frame.image)))
        tensors.append(tensor)
        placements.append(placement)
    timings["read_and_place"] = time.perf_counter() - started
    views = np.stack(tensors)
    letterbox = adapter.letterbox_warning(placements[0].source_size)
    if letterbox is not None:
        provenance.note_input_warning(context, letterbox)
    progress.enter(RUNNING)
    result = adapter.infer(views, last_run=True)
    timings["run"] = result.seconds
    started = time.perf_counter()
    arrays: dict[str, np.ndarray] = {"input": views, **{f"raw_{name}": value for name, value in result.outputs.items()}}
    arrays["frame_depth"] = np.stack(
        [box.crop_to_source(plane) for box, plane in zip(placements, result.depth, strict=True)]
    )
    if result.confidence is not None:
        arrays["frame_confidence"] = np.stack(
            [box.crop_to_source(plane) for box, plane in zip(placements, result.confidence, strict=True)]
        )
    if result.extrinsics is not None and result.intrinsics is not None:
        arrays["frame_extrinsics"] = result.extrinsics
        arrays["frame_intrinsics_px"] = np.array(
            [
                list(box.intrinsics_to_source(matrix).values())
                for box, matrix in zip(placements, result.intrinsics, strict=True)
            ]
        )
    timings["postprocess"] = time.perf_counter() - started
    extra = {
        "views": len(tensors),
        "cameras": adapter.has_cameras,
        "model_size": adapter.size,
        "attention_heads": adapter.heads,
        "attention_bytes": adapter.attention(len(tensors)).bytes,
        "placement": {"canvas": list(placements[0].canvas), "box": list(placements[0].box)},
    }
    assert first is not None
    return write_debug_outputs(context, progress, adapter, first, arrays, timings, extra)
