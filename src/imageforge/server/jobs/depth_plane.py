"""generate-depth-plane-geometry: MoGe-2 metric geometry of one still, as the files Blender lands.

The source is composited on black and analysed once (long edge ≤ `max_input_size`). Results (docs/jobs.md):
- `depth`: float32 EXR at the analysed resolution, ZIP-compressed: R, G, B = camera-space X, Y, Z in metres
  (OpenCV axes: x right, y down, z forward), A = source alpha × validity. Points rather than bare depth, so
  the add-on needs no intrinsics to build the mesh and invalid pixels carry A = 0 instead of a magic value.
- `depth_metadata`: contract/depth_metadata.py's `DepthMetadata` (versioned JSON): `image_size` and
  `analysed_size` [w, h], pixel intrinsics `fx`, `fy`, `cx`, `cy` at the source size, and `reference_depth`
  (median of the kept pixels, metres) for placing the plane.
- `normal`: RGB PNG at the source size, (n + 1) / 2 of camera-space normals (OpenCV axes, as the add-on
  expects), masked pixels flat (0.5, 0.5, 1). Sampled and written band by band (media/png_stream.py): at
  16384² the whole map as floats would be 3 GiB, and its bilinear sampling several times that.

The analysis (job_steps/geometry_analysis.py) and the writers (job_steps/geometry_outputs.py) are the
cutout job's too, which crops every result to its matte's bounds.

Cancellation is checked between the model run and each writer. A writer writes under a temporary name
(media/atomic.py), and the handler deletes what earlier writers finished if a later one fails or the job is
cancelled (server/handler.py), so a job never leaves a depth file without its metadata.
"""

from __future__ import annotations

from pathlib import Path

from ...contract.jobs import GENERATE_DEPTH_PLANE_GEOMETRY, DepthPlaneParams, NormalMode
from ..job_context import JobContext, JobResults
from ..job_runners import runs
from ..job_steps.geometry_analysis import analyse, check_analysable, geometry_rgb
from ..job_steps.geometry_outputs import alpha_of, write_geometry
from ..job_steps.model_loading import log_model_time, prepare_adapter
from ..job_steps.progress import PREPARING, READING, JobProgress, JobStages, Stage
from ..job_steps.region import Region
from ..media import open_input
from ..models.display import display_pixels
from ..models.moge2 import MoGe2Adapter

ANALYSING = Stage("Estimating depth", 85)
STAGES = JobStages(PREPARING, READING, ANALYSING)


@runs(GENERATE_DEPTH_PLANE_GEOMETRY)
def run_generate_depth_plane_geometry(context: JobContext, params: DepthPlaneParams) -> JobResults:
    source = open_input(params.input, still_only=True)  # headers only: a bad file fails before any download
    check_analysable(source, params.max_input_size)
    progress = JobProgress(context, STAGES)
    adapter = prepare_adapter(context, progress, params.model, params.device, MoGe2Adapter)
    progress.enter(READING)
    image = source.read_still()
    rgb = geometry_rgb(display_pixels(image), params.max_input_size)
    result = analyse(progress, ANALYSING, adapter, rgb, params.max_input_size, params.resolution_level)
    size, coverage = image.size, alpha_of(image)
    del image, rgb  # the colour is analysed: only the alpha is needed at the source size (saves 3–4 GiB at 16384²)
    progress.writing()
    files = write_geometry(
        progress,
        Path(context.directory),
        result.frame,
        source_size=size,
        coverage=coverage,
        region=Region.whole(size),
        depth=True,
        normals=NormalMode.OBJECT,
    )
    log_model_time(context, progress, adapter)
    return files
