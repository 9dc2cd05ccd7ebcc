"""remove-background: a background model (BEN2, BiRefNet: the catalog entry `model` names) on a still image,
a video or a frame sequence.

Results (docs/jobs.md): `foreground` — straight RGBA at the input size, the colour untouched and the matte
as alpha (8-bit sources give 8-bit PNGs, 16-bit and float sources 16-bit); `alpha` — the matte alone, a
float32 EXR with one channel `Y` for stills (HDR sources: the add-on multiplies it into the float image
itself), a grey video or 16-bit grey PNG sequence for clips.

`max_input_size` limits what the model analyses (job_steps/matte.py): the matte is always brought back to the
full input size and the colour is never resampled. Clips go frame by frame (job_steps/frame_loop.py), resume
from finished frames (job_steps/frame_cache.py) and, with `steady_edges`, lean each matte on the previous
frame's where the picture did not move (job_steps/steady_edges.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...contract.jobs import REMOVE_BACKGROUND, JobId, OutputKind, RemoveBackgroundParams
from ...contract.results import ResultName
from ..job_context import JobContext, JobResults
from ..job_runners import runs
from ..job_steps.cutout_colour import cutout_look, edge_colour
from ..job_steps.frame_cache import open_frame_cache
from ..job_steps.frame_loop import Report, stream_frames
from ..job_steps.matte import check_matte_size, cut_out, write_with_alpha
from ..job_steps.model_loading import log_model_time, prepare_adapter
from ..job_steps.progress import PREPARING, READING, JobProgress, JobStages, Stage
from ..job_steps.steady_edges import SteadyEdges
from ..media import Frame, MediaKind, open_input, write_exr
from ..media.metadata import read_metadata
from ..models.background import BackgroundAdapter
from ..models.display import display_pixels

REMOVING = Stage("Removing background", 75)
EDGES = Stage("Estimating edge colour", 10)  # a still's foreground (its alpha output skips it)
STILL_STAGES = JobStages(PREPARING, READING, REMOVING, EDGES)
CLIP_STAGES = JobStages(PREPARING, READING, REMOVING)


@runs(REMOVE_BACKGROUND)
def run_remove_background(context: JobContext, params: RemoveBackgroundParams) -> JobResults:
    source = open_input(params.input)  # headers only: a bad file fails before any model download
    progress = JobProgress(context, STILL_STAGES if source.kind is MediaKind.STILL else CLIP_STAGES)
    positions = None if source.kind is MediaKind.STILL else source.frame_range(params.first_frame, params.frame_count)
    look = cutout_look(params.premultiplied, params.background_color)  # a bad colour fails before any download
    check_matte_size((source.width, source.height))
    adapter = prepare_adapter(context, progress, params.model, params.device, BackgroundAdapter)
    progress.enter(READING)
    context.log(f"Input: {source.summary}")
    directory = Path(context.directory)
    wants_alpha = params.output_kind is OutputKind.ALPHA

    if source.kind is MediaKind.STILL:
        image = source.read_still()
        progress.enter(REMOVING)
        pixels, alpha = cut_out(adapter, image, params.max_input_size, last_run=True)
        if wants_alpha:
            progress.writing()
            write_exr(directory / "alpha.exr", {"Y": alpha})
            result = {ResultName.ALPHA: "alpha.exr"}
        else:
            progress.enter(EDGES)
            edge_colour(context, pixels, alpha, enabled=params.estimate_foreground)  # in place: pixels are ours
            progress.writing()
            context.log(f"Foreground written {look.describe()}")
            metadata = read_metadata(Path(params.input))  # the source's colour profile and EXIF orientation
            context.log(f"Foreground metadata: {metadata.describe()}")
            write_with_alpha(
                directory / "foreground.png",
                pixels,
                alpha,
                bits=image.sample_kind.png_bits,
                look=look,
                metadata=metadata,
            )
            result = {ResultName.FOREGROUND: "foreground.png"}
        log_model_time(context, progress, adapter)
        return result

    steady = SteadyEdges() if params.steady_edges else None
    if steady is not None:
        context.log(f"Steady edges: strength {steady.strength}, tolerance {steady.tolerance} (openspec/0013)")

    def process(frame: Frame, last: bool, _report: Report) -> np.ndarray:
        pixels, alpha = cut_out(adapter, frame.image, params.max_input_size, last_run=last)
        if steady is not None:
            alpha = steady(pixels, alpha)
        if wants_alpha:
            return alpha
        edge_colour(context, pixels, alpha, enabled=params.estimate_foreground)  # in place: steady kept its luma
        return look.rows(pixels, alpha)

    def reused(frame: Frame, result: np.ndarray) -> None:
        if steady is None:
            return
        if wants_alpha or result.shape[-1] == 4:
            steady.remember(display_pixels(frame.image), result if wants_alpha else result[..., 3])
        else:  # written over a solid colour: the matte is not kept, so the next frame starts afresh
            steady.forget()

    result = stream_frames(
        context,
        progress,
        source,
        result=ResultName.ALPHA if wants_alpha else ResultName.FOREGROUND,
        sequence_output=params.sequence_output,
        size=(source.width, source.height),
        alpha=not wants_alpha and look.channels == 4,
        bits=16 if wants_alpha else source.sample_kind.png_bits,
        process=process,
        stage=REMOVING,
        positions=positions,
        on_reused=reused,
        cache=open_frame_cache(context.storage_root, JobId.REMOVE_BACKGROUND, params, source, adapter.entry),
    )
    log_model_time(context, progress, adapter)
    return result
