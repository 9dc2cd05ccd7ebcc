"""generate-cutout-artifacts: a region of a still as an RGBA cutout, its matte and, on request, its geometry.

Only the models the request needs are loaded: none for a flat cutout without maps, the background model
(`background_model`: BEN2 or BiRefNet) for `refine`, MoGe-2
for `generate_depth` or a normal map. Every result is cropped to the bounds of the selection's matte:
- `cutout`: RGBA PNG, the source colour with alpha = source alpha × selection matte (precision kept); with
  `refine`, its soft edge in the object's own colour unless `estimate_foreground` is off (job_steps/
  cutout_colour.py; a plain selection's soft edge is its outline's coverage, whose colours are already right);
- `selection_alpha`: 16-bit single-channel PNG of the selection matte (refined by the background model when `refine`);
- `depth`, `depth_metadata`, `normal` as generate-depth-plane-geometry writes them, for the crop.

`fill_behind` adds what a background plane needs once the object has left it, at the whole image's size:
- `background`: the clean plate, LaMa filling the matte grown by a few pixels and faded out over as many
  again (job_steps/hole_fill.py), analysed on a crop around it (at most 1024 px, or `max_input_size`);
- `background_depth`, `background_depth_metadata`, `background_normal` (when geometry was analysed): the depth
  plane's files with the depth under that region continued from the background around it and the normals of
  that continued surface (geometry/depth_fill.py).

Geometry is analysed on the whole image and cropped afterwards: MoGe-2's camera is the photo's camera, so a
cutout keeps the focal length and gets its principal point shifted by the crop's origin, and the model sees
the context around the object. A plain selection is rasterised with 4 × 4 samples per pixel, so a lasso's
edge is anti-aliased instead of stair-stepped; a box gets its exact pixel coverage.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...contract import InputError
from ...contract.jobs import (
    GENERATE_CUTOUT_ARTIFACTS,
    INPAINT_INPUT_SIZE_DEFAULT,
    REFINE_PADDING_DEFAULT,
    CutoutParams,
    NormalMode,
)
from ...contract.parameters import Selection
from ...contract.results import BACKGROUND_GEOMETRY, ResultName
from ..geometry.depth_fill import fill_depth_behind
from ..geometry.frame import GeometryFrame
from ..job_context import JobContext, JobResults
from ..job_runners import runs
from ..job_steps.cutout_colour import edge_colour
from ..job_steps.geometry_analysis import analyse, check_analysable, geometry_rgb
from ..job_steps.geometry_outputs import alpha_of, write_geometry
from ..job_steps.hole_fill import ANALYSED_HOLE, clean_plate_weight, inpaint_pixels
from ..job_steps.matte import check_matte_size, refine_alpha, with_alpha
from ..job_steps.model_loading import log_model_time, prepare_adapter
from ..job_steps.progress import PREPARING, READING, JobProgress, JobStages, Stage
from ..job_steps.region import Region
from ..job_steps.selection_mask import check_overlap, selection_coverage
from ..media import open_input, resize
from ..media.png_stream import write_png, write_png_bands
from ..models.background import BackgroundAdapter
from ..models.display import display_pixels
from ..models.lama import LamaAdapter
from ..models.moge2 import MoGe2Adapter

VISIBLE = 1.0 / 512  # a refined matte below this is invisible even in 8 bits: outside the crop
REFINING = Stage("Refining selection", 10)
ANALYSING = Stage("Estimating depth", 60)
FILLING = Stage("Filling behind the cutout", 15)
EDGES = Stage("Estimating edge colour", 5)  # a refined matte's soft edge


def cutout_stages(params: CutoutParams) -> JobStages:
    """The stages these parameters run: refining with `refine`, depth with depth or normals, filling with
    `fill_behind` (a cutout with none of them is read and written only)."""
    geometry = params.generate_depth or params.normal_mode is not NormalMode.NONE
    wanted = ((REFINING, params.refine), (ANALYSING, geometry), (FILLING, params.fill_behind), (EDGES, params.refine))
    return JobStages(PREPARING, READING, *(stage for stage, wanted_here in wanted if wanted_here))


@runs(GENERATE_CUTOUT_ARTIFACTS)
def run_generate_cutout_artifacts(context: JobContext, params: CutoutParams) -> JobResults:
    source = open_input(params.input, still_only=True)
    size = (source.width, source.height)
    if params.selection is not None:
        check_overlap(params.selection, size)  # before any model is prepared or downloaded
    if params.refine:
        check_matte_size(size)
    geometry_wanted = params.generate_depth or params.normal_mode is not NormalMode.NONE
    if geometry_wanted:
        check_analysable(source, params.max_input_size)
    progress = JobProgress(context, cutout_stages(params))
    refiner = None
    if params.refine:
        refiner = prepare_adapter(context, progress, params.background_model, params.device, BackgroundAdapter)
    geometry = None
    if geometry_wanted:
        geometry = prepare_adapter(context, progress, params.geometry_model, params.device, MoGe2Adapter)
    inpainter = None
    if params.fill_behind:
        inpainter = prepare_adapter(context, progress, params.inpaint_model, params.device, LamaAdapter)
    progress.enter(READING)
    image = source.read_still()
    pixels = display_pixels(image)
    if refiner is not None:
        progress.enter(REFINING)
        selection = params.selection or Selection(box=(0.0, 0.0, float(size[0]), float(size[1])))
        matte = refine_alpha(
            refiner, pixels, selection, REFINE_PADDING_DEFAULT, params.max_input_size, last_run=True, log=context.log
        )
        matte[matte < VISIBLE] = 0.0
    else:
        matte = selection_coverage(params.selection, size)
    region = matte_bounds(matte)
    context.log(f"Cutout region {region} of {size[0]}×{size[1]}")
    coverage = matte if pixels.shape[2] == 3 else matte * np.clip(pixels[..., 3], 0.0, 1.0)
    result = None
    if geometry is not None:  # composited over black at the analysis size only, then freed
        rgb = geometry_rgb(pixels, params.max_input_size)
        result = analyse(progress, ANALYSING, geometry, rgb, params.max_input_size, params.resolution_level)
        del rgb
    plate = behind = None
    if inpainter is not None:
        progress.enter(FILLING)
        weight = clean_plate_weight(matte)
        plate_size = min(params.max_input_size, INPAINT_INPUT_SIZE_DEFAULT)
        plate = inpaint_pixels(inpainter, pixels, weight, plate_size, log=context.log)
        if result is not None:
            behind = depth_behind(result.frame, weight)
    rows, columns = region.slices
    bits = image.sample_kind.png_bits
    if refiner is not None:  # a plain selection's soft edge is its outline's coverage: those colours are right
        progress.enter(EDGES)  # in place, on the region only: nothing reads colour after
        edge_colour(context, pixels[rows, columns], coverage[rows, columns], enabled=params.estimate_foreground)

    def cutout_rows(top: int, bottom: int) -> np.ndarray:  # band by band: no full-size RGBA copy
        band = slice(region.y0 + top, region.y0 + bottom)
        return with_alpha(pixels[band, columns], coverage[band, columns])

    directory = Path(context.directory)
    progress.writing("Writing cutout")
    write_png_bands(directory / "cutout.png", size=region.size, rows=cutout_rows, channels=4, bits=bits)
    files = {ResultName.CUTOUT: "cutout.png"}
    progress.writing("Writing selection alpha")
    write_png(directory / "selection_alpha.png", matte[rows, columns], bits=16)
    files[ResultName.SELECTION_ALPHA] = "selection_alpha.png"
    if result is not None:
        files |= write_geometry(
            progress,
            directory,
            result.frame,
            source_size=size,
            coverage=coverage,
            region=region,
            depth=params.generate_depth,
            normals=params.normal_mode,
        )
    if plate is not None:
        progress.writing("Writing clean plate")
        write_png(directory / "background.png", plate, bits=bits)
        files[ResultName.BACKGROUND] = "background.png"
    if behind is not None:
        files |= write_geometry(
            progress,
            directory,
            behind,
            source_size=size,
            coverage=alpha_of(image),
            region=Region.whole(size),
            depth=True,
            normals=NormalMode.OBJECT,
            names=BACKGROUND_GEOMETRY,
        )
    for adapter in (refiner, geometry, inpainter):
        if adapter is not None:
            log_model_time(context, progress, adapter)
    return files


def depth_behind(frame: GeometryFrame, weight: np.ndarray) -> GeometryFrame:
    """The frame with the background's depth continued behind the clean plate's hole (geometry/depth_fill.py)."""
    hole = resize(weight, frame.size) > ANALYSED_HOLE if frame.size != weight.shape[::-1] else weight > 0
    return fill_depth_behind(frame, hole)


def matte_bounds(matte: np.ndarray) -> Region:
    """The smallest box holding every pixel of the matte above zero; an empty matte is the user's problem."""
    rows, columns = np.nonzero(matte.any(axis=1))[0], np.nonzero(matte.any(axis=0))[0]
    if rows.size == 0:
        raise InputError("The selection covers no pixel of the image; draw a larger selection over the image.")
    return Region(int(columns[0]), int(rows[0]), int(columns[-1]) + 1, int(rows[-1]) + 1)
