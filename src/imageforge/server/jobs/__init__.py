"""The jobs: each is a function `run_<job id>(context, params) -> {result name: file name}` (dashes become
underscores: `run_upscale_image` runs `upscale-image`), one module per job or per family of debug jobs.
A job module reads top to bottom and imports only the layers below it (job_steps/, models/, inference/,
media/, geometry/, downloads/, contract/), never another job module: what two jobs share is a step.

JOB_RUNNERS maps every job id of the contract to its runner (tests/server/test_handler.py checks that
none is missing, so the server registers every job the add-on and the CLI can submit, and that each
runner carries its job's name, handler.runner_name()).
"""

from __future__ import annotations

from ...contract import JobId
from ..handler import Runner
from . import (
    convert_model,
    cutout,
    debug_geometry_models,
    debug_image_models,
    depth_plane,
    download_models,
    inpaint_image,
    multiview_cameras,
    refine_selection,
    remove_background,
    upscale_image,
)

JOB_RUNNERS: dict[JobId, Runner] = {
    JobId.DOWNLOAD_MODEL: download_models.run_download_model,
    JobId.DOWNLOAD_REQUIRED_MODELS: download_models.run_download_required_models,
    JobId.CONVERT_MODEL: convert_model.run_convert_model,
    JobId.REMOVE_BACKGROUND: remove_background.run_remove_background,
    JobId.UPSCALE_IMAGE: upscale_image.run_upscale_image,
    JobId.REFINE_IMAGE_SELECTION: refine_selection.run_refine_image_selection,
    JobId.DEBUG_BEN2: debug_image_models.run_debug_ben2,
    JobId.DEBUG_UPSCALE: debug_image_models.run_debug_upscale,
    JobId.GENERATE_DEPTH_PLANE_GEOMETRY: depth_plane.run_generate_depth_plane_geometry,
    JobId.GENERATE_CUTOUT_ARTIFACTS: cutout.run_generate_cutout_artifacts,
    JobId.GENERATE_MULTIVIEW_CAMERAS: multiview_cameras.run_generate_multiview_cameras,
    JobId.DEBUG_MOGE: debug_geometry_models.run_debug_moge,
    JobId.DEBUG_DA3: debug_geometry_models.run_debug_da3,
    JobId.INPAINT_IMAGE: inpaint_image.run_inpaint_image,
}
