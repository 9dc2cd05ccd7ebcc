"""MoGe-2 host post-processing: from affine-invariant points to metric depth, intrinsics and points.

MoGe-2 predicts points whose z is known only up to a shift, plus a metric scale. The focal length and
the shift are recovered from the points themselves: for every valid pixel, the projection
`focal · (x, y) / (z + shift)` must land on the pixel's normalised view-plane coordinate (u, v). That is
linear in (focal, shift) once multiplied out (`focal·x − u·shift = u·z`), so a least-squares solve on a
subsample of valid pixels gives both; a few Gauss-Newton steps then minimise the true reprojection error.

The subsample is the official pipeline's: a nearest-neighbour resize of points and mask to 64 × 64, i.e. rows
`floor(i·H/64)` and columns `floor(j·W/64)` for i, j < 64 (repeated rows and columns when the map is smaller
count twice, as they do there). Fewer than two valid samples give the official fallback, focal 1 and shift 0,
instead of an error; masked pixels get a zero normal (no direction), as the official `infer` writes them.
"""

from __future__ import annotations

import math

import numpy as np

from ...contract import InputError
from .frame import GeometryFrame, NormalizedIntrinsics

SAMPLE_GRID = 64
MASK_THRESHOLD = 0.5
MIN_VALID_SAMPLES = 2  # fewer valid samples on the grid: the official fallback camera
FALLBACK_FOCAL, FALLBACK_SHIFT = 1.0, 0.0


def view_plane_uv(width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """MoGe's normalised view-plane coordinates of pixel centres: the image half-diagonal has length 1."""
    aspect = width / height
    span_x = aspect / math.sqrt(1 + aspect * aspect)
    span_y = 1 / math.sqrt(1 + aspect * aspect)
    u = ((np.arange(width) + 0.5) / width * 2 - 1) * span_x
    v = ((np.arange(height) + 0.5) / height * 2 - 1) * span_y
    return np.meshgrid(u, v, indexing="xy")


def normalized_intrinsics(focal: float, width: int, height: int) -> NormalizedIntrinsics:
    aspect = width / height
    diagonal = math.sqrt(1 + aspect * aspect)
    return NormalizedIntrinsics(fx=focal / 2 * diagonal / aspect, fy=focal / 2 * diagonal)


def sample_indices(length: int) -> np.ndarray:
    """Rows (or columns) a nearest-neighbour resize to SAMPLE_GRID picks: floor(i · length / SAMPLE_GRID)."""
    return np.arange(SAMPLE_GRID) * length // SAMPLE_GRID


def recover_focal_shift(points: np.ndarray, valid: np.ndarray) -> tuple[float, float]:
    """Solve `focal · xy / (z + shift) ≈ uv` over the valid pixels of the 64 × 64 grid. Returns (focal, shift)."""
    height, width = valid.shape
    u_grid, v_grid = view_plane_uv(width, height)
    grid = np.ix_(sample_indices(height), sample_indices(width))
    chosen = valid[grid]
    if chosen.sum() < MIN_VALID_SAMPLES:
        return FALLBACK_FOCAL, FALLBACK_SHIFT
    x, y, z = (points[..., axis][grid][chosen].astype(np.float64) for axis in range(3))
    u, v = u_grid[grid][chosen], v_grid[grid][chosen]
    design = np.concatenate([np.stack([x, -u], axis=1), np.stack([y, -v], axis=1)])
    target = np.concatenate([u * z, v * z])
    (focal, shift), *_ = np.linalg.lstsq(design, target, rcond=None)
    for _ in range(5):  # Gauss-Newton on the reprojection residual r = f·xy/(z+s) − uv
        depth = z + shift
        if np.any(depth <= 1e-6):
            break
        residual = np.concatenate([focal * x / depth - u, focal * y / depth - v])
        jacobian = np.concatenate(
            [np.stack([x / depth, -focal * x / depth**2], axis=1), np.stack([y / depth, -focal * y / depth**2], axis=1)]
        )
        step, *_ = np.linalg.lstsq(jacobian, -residual, rcond=None)
        focal, shift = focal + step[0], shift + step[1]
        if np.abs(step).max() < 1e-10:
            break
    if not (math.isfinite(focal) and focal > 0):
        raise InputError("The geometry model's output has no consistent camera; try a different photo.")
    return float(focal), float(shift)


def geometry_from_moge(points: np.ndarray, normal: np.ndarray, mask: np.ndarray, metric_scale: float) -> GeometryFrame:
    """One frame (the batch dimension already removed) of MoGe-2 outputs → a metric GeometryFrame."""
    valid = mask > MASK_THRESHOLD
    if not valid.any():
        raise InputError("The geometry model found no usable depth in this image; try a clearer photo.")
    focal, shift = recover_focal_shift(points, valid)
    depth = (points[..., 2].astype(np.float64) + shift) * float(metric_scale)
    valid &= depth > 0
    height, width = valid.shape
    intrinsics = normalized_intrinsics(focal, width, height)
    pixels = intrinsics.in_pixels(width, height)
    columns, rows = np.meshgrid(np.arange(width) + 0.5, np.arange(height) + 0.5, indexing="xy")
    metric = np.stack(
        [(columns - pixels["cx"]) / pixels["fx"] * depth, (rows - pixels["cy"]) / pixels["fy"] * depth, depth],
        axis=-1,
    )
    metric[~valid] = 0.0
    unit = normal.astype(np.float64)
    unit /= np.maximum(np.linalg.norm(unit, axis=-1, keepdims=True), 1e-12)
    unit[~valid] = 0.0  # no surface here: no direction
    return GeometryFrame(
        depth=np.where(valid, depth, 0.0).astype(np.float32),
        points=metric.astype(np.float32),
        normal=unit.astype(np.float32),
        valid=valid,
        intrinsics=intrinsics,
    )


def num_tokens(resolution_level: int) -> int:
    """MoGe-2's token budget for a resolution level 0–9 (trained range 1200–3600)."""
    level = min(max(int(resolution_level), 0), 9)
    return int(1200 + level / 9 * 2400)
