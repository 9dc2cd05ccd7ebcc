"""remove-background: BEN2 on a still image, a video or a frame sequence.

Results (docs/jobs.md): `foreground` — straight RGBA at the input size, the colour untouched and the matte
as alpha (8-bit sources give 8-bit PNGs, 16-bit and float sources 16-bit); `alpha` — the matte alone, a
float32 EXR with one channel `Y` for stills (HDR sources: the add-on multiplies it into the float image
itself), a grey video or 16-bit grey PNG sequence for clips.

`max_input_size` limits what the model analyses: below the model's own input size (1024² for BEN2) the
image is first reduced to it, so the matte follows the coarser view; the matte is always brought back to
the full input size and the colour is never resampled.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ...contract.catalog import Family
from ...contract.jobs import JobId, OutputKind, RemoveBackgroundParams
from ..media import Frame, Image, MediaKind, fit_long_edge_size, open_input, write_exr
from ..media.png_stream import write_png_bands
from ..models.ben2 import Ben2Adapter
from ..models.display import display_pixels, over_black, over_black_at
from .frame_cache import open_frame_cache
from .frame_loop import Report, stream_frames
from .image_job import JobProgress, log_model_time, prepare_adapter
from .steady_edges import SteadyEdges


def run_remove_background(context: Any, params: RemoveBackgroundParams) -> dict[str, str]:
    progress = JobProgress(context)
    source = open_input(params.input)  # headers only: a bad file fails before any model download
    positions = None if source.kind is MediaKind.STILL else source.frame_range(params.first_frame, params.frame_count)
    adapter = prepare_adapter(context, progress, params.model, Family.BACKGROUND, params.device, Ben2Adapter)
    progress.stage(0.08, "Reading input")
    context.log(f"Input: {source.summary}")
    directory = Path(context.directory)
    wants_alpha = params.output_kind is OutputKind.ALPHA

    if source.kind is MediaKind.STILL:
        image = source.read_still()
        progress.running(0.0, "Removing background")
        pixels, alpha = cut_out(adapter, image, params.max_input_size, last_run=True)
        progress.writing()
        if wants_alpha:
            write_exr(directory / "alpha.exr", {"Y": alpha})
            result = {"alpha": "alpha.exr"}
        else:
            write_png_bands(
                directory / "foreground.png",
                image.size,
                lambda top, bottom: with_alpha(pixels[top:bottom], alpha[top:bottom]),
                channels=4,
                bits=image.sample_kind.png_bits,
            )
            result = {"foreground": "foreground.png"}
        log_model_time(context, progress, adapter)
        return result

    steady = SteadyEdges() if params.steady_edges else None
    if steady is not None:
        context.log(f"Steady edges: strength {steady.strength}, tolerance {steady.tolerance} (openspec/0013)")

    def process(frame: Frame, last: bool, _report: Report) -> np.ndarray:
        pixels, alpha = cut_out(adapter, frame.image, params.max_input_size, last_run=last)
        if steady is not None:
            alpha = steady(pixels, alpha)
        return alpha if wants_alpha else with_alpha(pixels, alpha)

    def reused(frame: Frame, result: np.ndarray) -> None:
        if steady is not None:
            steady.remember(display_pixels(frame.image), result if wants_alpha else result[..., 3])

    result = stream_frames(
        context,
        progress,
        source,
        result=params.output_kind.value,
        sequence_output=params.sequence_output,
        size=(source.width, source.height),
        alpha=not wants_alpha,
        bits=16 if wants_alpha else source.sample_kind.png_bits,
        process=process,
        positions=positions,
        on_reused=reused,
        cache=open_frame_cache(context.storage_root, JobId.REMOVE_BACKGROUND, params, source, adapter.entry),
    )
    log_model_time(context, progress, adapter)
    return result


def with_alpha(pixels: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """Colour (H, W, 3|4) with `alpha` (H, W) as its alpha: (H, W, 4). Called per band for large stills."""
    return np.concatenate([pixels[..., :3], alpha[..., None]], axis=2)


def cut_out(
    adapter: Ben2Adapter, image: Image, max_input_size: int, *, last_run: bool
) -> tuple[np.ndarray, np.ndarray]:
    """(display pixels at the input size, matte (H, W) in [0, 1] including the source alpha)."""
    pixels = display_pixels(image)
    return pixels, analyse(adapter, pixels, max_input_size, last_run=last_run)


def analyse(adapter: Ben2Adapter, pixels: np.ndarray, max_input_size: int, *, last_run: bool) -> np.ndarray:
    """The BEN2 matte of display pixels (H, W, 3|4) at their own size, analysed at most `max_input_size`."""
    height, width = pixels.shape[:2]
    source_alpha = pixels[..., 3] if pixels.shape[2] == 4 else None
    model_height, model_width = adapter.input_size
    if max_input_size >= max(adapter.input_size) and width * height > model_width * model_height:
        # Exactly what the adapter's preprocess makes of the full-size pixels (its resize is then a no-op),
        # without a full-size RGB copy of an RGBA image.
        rgb = np.clip(over_black_at(pixels, (model_width, model_height)), 0.0, 1.0)
    else:
        rgb = analysed_rgb(adapter, pixels, max_input_size)
    return adapter.matte(rgb, (width, height), source_alpha, last_run=last_run)


def analysed_rgb(adapter: Ben2Adapter, pixels: np.ndarray, max_input_size: int) -> np.ndarray:
    """What BEN2 is given: the pixels over black, reduced to `max_input_size` when that is below its input."""
    height, width = pixels.shape[:2]
    if max_input_size < max(adapter.input_size):
        limited = fit_long_edge_size((width, height), max_input_size)
        if limited != (width, height):
            return np.clip(over_black_at(pixels, limited), 0.0, 1.0)
    return over_black(pixels)
