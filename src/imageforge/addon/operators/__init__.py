"""ImageForge's operators: BlendJob job operators for each tool, the selection drawer, model management, job files."""

from __future__ import annotations

from . import (
    batch_jobs,
    camera_path,
    draw_selection,
    frame_jobs,
    geometry_jobs,
    image_jobs,
    job_files,
    menus,
    models,
    parallax,
)

CLASSES: tuple[type, ...] = (
    *image_jobs.CLASSES,
    *frame_jobs.CLASSES,
    *batch_jobs.CLASSES,
    *geometry_jobs.CLASSES,
    *parallax.CLASSES,
    *camera_path.CLASSES,
    *models.CLASSES,
    *job_files.CLASSES,
    *draw_selection.CLASSES,
    *menus.CLASSES,
)
