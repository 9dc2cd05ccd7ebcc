"""inpaint-image: LaMa fills the region a mask or a selection marks; every other pixel stays as it was.

The region comes from exactly one of:
- `mask`: a grey or alpha image of the input's shape (job_steps/mask_image.py: alpha if it has transparency,
  else grey; white or opaque = fill; a mask of another size but the same aspect ratio is resampled).
- `selection`: a box or lasso in image pixels, anti-aliased at its edge (as Cutout rasterises it), or a mask
  selection (Click Select's, or a mask file of the image's size).

Result `inpaint`: a PNG at the input size, RGB or RGBA as the input (alpha untouched), 8-bit for 8-bit
sources and 16-bit otherwise; outside the region it is bit-identical to an 8/16-bit input. Only a crop
around the region is analysed (job_steps/hole_fill.py).
"""

from __future__ import annotations

from pathlib import Path

from ...contract import InputError
from ...contract.jobs import INPAINT_IMAGE, InpaintImageParams
from ...contract.results import ResultName
from ..job_context import JobContext, JobResults
from ..job_runners import runs
from ..job_steps.hole_fill import hole_crop, inpaint_pixels
from ..job_steps.mask_image import open_mask, read_mask
from ..job_steps.model_loading import log_model_time, prepare_adapter
from ..job_steps.progress import PREPARING, READING, JobProgress, JobStages, Stage
from ..job_steps.selection_mask import check_overlap, selection_coverage
from ..media import open_input, write_png
from ..models.display import display_pixels
from ..models.lama import LamaAdapter

INPAINTING = Stage("Inpainting", 85)
STAGES = JobStages(PREPARING, READING, INPAINTING)


@runs(INPAINT_IMAGE)
def run_inpaint_image(context: JobContext, params: InpaintImageParams) -> JobResults:
    if (params.mask is None) == (params.selection is None):
        raise InputError("Give either 'mask' (a grey or alpha image) or 'selection' (a box or lasso), not both.")
    source = open_input(params.input, still_only=True)  # headers only: bad files fail before any download
    size = (source.width, source.height)
    mask_source = None
    if params.mask is not None:
        mask_source = open_mask(params.mask, size)
    elif params.selection is not None:  # always, given the check above
        check_overlap(params.selection, size)
    progress = JobProgress(context, STAGES)
    adapter = prepare_adapter(context, progress, params.model, params.device, LamaAdapter)
    progress.enter(READING)
    context.log(f"Input: {source.summary}")
    image = source.read_still()
    weight = read_mask(mask_source, size) if mask_source is not None else selection_coverage(params.selection, size)
    hole_crop(weight)  # an empty mask is the user's to fix, said before the model runs
    pixels = display_pixels(image)
    progress.enter(INPAINTING)
    filled = inpaint_pixels(adapter, pixels, weight, params.max_input_size, log=context.log, in_place=True)
    progress.writing()
    write_png(Path(context.directory) / "inpaint.png", filled, bits=image.sample_kind.png_bits)
    log_model_time(context, progress, adapter)
    return {ResultName.INPAINT: "inpaint.png"}
