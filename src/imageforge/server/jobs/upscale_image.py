"""upscale-image: the Real-ESRGAN family on a still, a video or a frame sequence, tiled and streamed.

`max_input_size` limits the source: a larger image is first reduced to it (the result is then scale ×
the reduced size). A still's result is written while the tiles are still running, band by band
(media/png_stream.py), so a 4096² → 16384² upscale never holds its output in memory; video frames are
assembled one at a time. Results keep the source's depth (16-bit stays 16-bit) and alpha.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...contract.jobs import UPSCALE_IMAGE, JobId, UpscaleImageParams
from ...contract.results import ResultName
from ..job_context import JobContext, JobResults
from ..job_runners import runs
from ..job_steps.frame_cache import open_frame_cache
from ..job_steps.frame_loop import Report, stream_frames
from ..job_steps.model_loading import log_model_time, prepare_adapter
from ..job_steps.progress import PREPARING, READING, JobProgress, JobStages, Stage
from ..media import Frame, Image, MediaKind, fit_long_edge, fit_long_edge_size, open_input, resize_image
from ..media.png_stream import PngStreamWriter
from ..models.display import display_pixels
from ..models.upscale import UpscaleAdapter, UpscalePlan

UPSCALING = Stage("Upscaling", 85)
STAGES = JobStages(PREPARING, READING, UPSCALING)
OVERLAP_WARNING = 2.0  # work ratio above which a user-chosen tile size is worth a warning


@runs(UPSCALE_IMAGE)
def run_upscale_image(context: JobContext, params: UpscaleImageParams) -> JobResults:
    progress = JobProgress(context, STAGES)
    source = open_input(params.input)  # headers only: a bad file fails before any model download
    positions = None if source.kind is MediaKind.STILL else source.frame_range(params.first_frame, params.frame_count)
    adapter = prepare_adapter(context, progress, params.model, params.device, UpscaleAdapter)
    progress.enter(READING)
    context.log(f"Input: {source.summary}")
    width, height = fit_long_edge_size((source.width, source.height), params.max_input_size)
    plan = adapter.plan(height, width, scale=params.scale, tile_size=params.tile_size)
    grid = plan.grid
    context.log(
        f"Upscaling {width}×{height} ×{params.scale} (model ×{plan.model_scale}): {grid.count} tile(s) of "
        f"{min(grid.core, max(width, height))}px cores, context {grid.context} (margin {grid.margin}, blend "
        f"{grid.blend}), largest run {grid.largest_run[1]}×{grid.largest_run[0]}, batch {plan.batch}, "
        f"work ×{grid.work_ratio:.3f}"
    )
    if params.tile_size and grid.work_ratio > OVERLAP_WARNING:
        context.log(
            f"Tile size {params.tile_size} repeats {grid.work_ratio - 1:.0%} of the work in tile overlaps; "
            "0 (automatic) or a larger tile is faster.",
            level="WARNING",
        )
    out_size = (width * params.scale, height * params.scale)

    if source.kind is MediaKind.STILL:
        image = source.read_still()
        pixels = display_pixels(fit_long_edge(image, params.max_input_size))
        directory = Path(context.directory)

        def on_tile(done: int, total: int) -> None:
            progress.within(UPSCALING, done / total, f"Upscaling tile {done}/{total}")

        progress.enter(UPSCALING, f"Upscaling tile 0/{grid.count}")
        bits = image.sample_kind.png_bits
        with PngStreamWriter(directory / "upscale.png", *out_size, channels=pixels.shape[2], bits=bits) as png:
            adapter.upscale(pixels, plan, sink=lambda _top, rows: png.write(rows), on_tile=on_tile)
            progress.writing()
        log_model_time(context, progress, adapter)
        return {ResultName.UPSCALE: "upscale.png"}

    def process(frame: Frame, last: bool, report: Report) -> np.ndarray:
        return upscale_frame(adapter, plan, frame.image, (width, height), last_frame=last, report=report)

    result = stream_frames(
        context,
        progress,
        source,
        result=ResultName.UPSCALE,
        sequence_output=params.sequence_output,
        size=out_size,
        alpha=source.has_alpha,
        bits=source.sample_kind.png_bits,
        process=process,
        stage=UPSCALING,
        positions=positions,
        cache=open_frame_cache(context.storage_root, JobId.UPSCALE_IMAGE, params, source, adapter.entry),
    )
    log_model_time(context, progress, adapter)
    return result


def upscale_frame(
    adapter: UpscaleAdapter,
    plan: UpscalePlan,
    image: Image,
    size: tuple[int, int],
    *,
    last_frame: bool,
    report: Report,
) -> np.ndarray:
    """One whole upscaled frame (display pixels, [0, 1]) of `image` reduced to `size` first if larger."""
    pixels = display_pixels(resize_image(image, size))
    height, width = pixels.shape[:2]
    out = np.empty((height * plan.out_scale, width * plan.out_scale, pixels.shape[2]), dtype=np.float32)

    def sink(top: int, rows: np.ndarray) -> None:
        out[top : top + rows.shape[0]] = rows

    def on_tile(done: int, total: int) -> None:
        report(done / total, f"tile {done}/{total}")

    adapter.upscale(pixels, plan, sink=sink, on_tile=on_tile, last_frame=last_frame)
    return out
