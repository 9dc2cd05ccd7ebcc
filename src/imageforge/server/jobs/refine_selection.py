"""refine-image-selection: a background model (BEN2, BiRefNet) on the region around a box or lasso, its matte
confined to the selection.

The model analyses only the crop around the selection (plus `padding` pixels of context), so a small
object in a large photo gets the model's full 1024² attention instead of a few dozen pixels of it. The
matte is confined to the selection grown by a small margin (selection_mask.py) and placed into a full-size
matte. Results: `alpha`, a single-channel 16-bit PNG at the input size, and `cutout`, the image's colour
with that alpha (8-bit sources 8-bit, deeper sources 16-bit), its soft edge in the object's own colour unless
`estimate_foreground` is off (job_steps/cutout_colour.py).

The matte itself is job_steps/matte.py's `refine_alpha` (the cutout job's `refine` option runs the same thing).
"""

from __future__ import annotations

from pathlib import Path

from ...contract.jobs import REFINE_IMAGE_SELECTION, RefineImageSelectionParams
from ...contract.results import ResultName
from ..job_context import JobContext, JobResults
from ..job_runners import runs
from ..job_steps.cutout_colour import edge_colour
from ..job_steps.matte import check_matte_size, refine_alpha, write_with_alpha
from ..job_steps.model_loading import log_model_time, prepare_adapter
from ..job_steps.progress import PREPARING, READING, JobProgress, JobStages, Stage
from ..job_steps.selection_mask import selection_region
from ..media import open_input, write_png
from ..media.metadata import read_metadata
from ..models.background import BackgroundAdapter
from ..models.display import display_pixels

REFINING = Stage("Refining selection", 85)
STAGES = JobStages(PREPARING, READING, REFINING)


@runs(REFINE_IMAGE_SELECTION)
def run_refine_image_selection(context: JobContext, params: RefineImageSelectionParams) -> JobResults:
    progress = JobProgress(context, STAGES)
    source = open_input(params.input, still_only=True)
    check_matte_size((source.width, source.height))
    # A bad file or a selection off the image fails before any model download.
    selection_region(params.selection, (source.width, source.height), params.padding)
    adapter = prepare_adapter(context, progress, params.model, params.device, BackgroundAdapter)
    progress.enter(READING)
    image = source.read_still()
    pixels = display_pixels(image)
    progress.enter(REFINING)
    alpha = refine_alpha(adapter, pixels, params.selection, params.padding, params.max_input_size, log=context.log)
    progress.writing()
    directory = Path(context.directory)
    write_png(directory / "alpha.png", alpha, bits=16)
    edge_colour(context, pixels, alpha, enabled=params.estimate_foreground)  # in place: only the cutout follows
    metadata = read_metadata(Path(params.input))  # the source's colour profile and EXIF orientation
    write_with_alpha(directory / "cutout.png", pixels, alpha, bits=image.sample_kind.png_bits, metadata=metadata)
    log_model_time(context, progress, adapter)
    return {ResultName.ALPHA: "alpha.png", ResultName.CUTOUT: "cutout.png"}
