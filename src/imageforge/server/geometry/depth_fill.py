"""Depth behind a cutout: the background surface continued across the hole the cut-out object leaves.

The hole is filled with the harmonic interpolant of the surrounding background's *inverse* depth (disparity):
the smoothest surface (Laplace's equation, the known pixels as boundary values) that meets the background
all around the hole. In disparity, because a plane's disparity is an affine function of the pixel position
and affine functions are harmonic: a wall or floor behind the object is continued exactly, where filling
depth itself would bow it. Filled pixels are re-projected along their pixel rays with the frame's
intrinsics, so they sit where the background would be seen.

Solver: coarse to fine. The known values are averaged down a pyramid of 2× reductions to a few pixels, where
the hole is at most a pixel or two; each level starts from the level below (enlarged) and relaxes with
red-black over-relaxed Gauss-Seidel sweeps, so a hole of any size costs O(pixels) work. Only a box around
the hole is solved; the box's own edge is a mirror (no flux), so it does not pull the solution towards zero.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from .frame import GeometryFrame

SWEEPS = 40  # red-black relaxation sweeps per pyramid level
RELAXATION = 1.85  # over-relaxation factor (1 = Gauss-Seidel; below 2 for convergence)
COARSEST = 4  # pixels along the shorter side at which the pyramid stops
MARGIN_FRACTION = 0.25  # background around the hole that takes part, as a fraction of its longer side
MIN_MARGIN = 8  # pixels


def fill_depth_behind(frame: GeometryFrame, hole: np.ndarray) -> GeometryFrame:
    """`frame` with depth, points, normals and validity inside `hole` (H, W bool) continued from the background
    around it (normals from the filled surface, so no shading of the object is left behind either).

    Pixels of the hole with no valid background anywhere near keep their original values.
    """
    known = frame.valid & ~hole
    rows, columns = np.nonzero(hole.any(axis=1))[0], np.nonzero(hole.any(axis=0))[0]
    if rows.size == 0 or not known.any():
        return frame
    height, width = hole.shape
    margin = max(MIN_MARGIN, math.ceil(MARGIN_FRACTION * max(rows[-1] - rows[0], columns[-1] - columns[0])))
    y0, y1 = max(0, rows[0] - margin), min(height, rows[-1] + 1 + margin)
    x0, x1 = max(0, columns[0] - margin), min(width, columns[-1] + 1 + margin)
    box = (slice(y0, y1), slice(x0, x1))
    box_known = known[box]
    if not box_known.any():
        return frame
    disparity = np.where(box_known, 1.0 / np.where(box_known, frame.depth[box], 1.0), 0.0)
    filled = harmonic_fill(disparity.astype(np.float64), box_known)
    target = hole[box] & (filled > 0)
    depth = frame.depth.copy()
    depth[box][target] = (1.0 / filled[target]).astype(np.float32)
    valid = frame.valid.copy()
    valid[box] |= target
    pixels = frame.intrinsics.in_pixels(width, height)
    ys, xs = np.nonzero(target)
    z = depth[box][target]
    points = frame.points.copy()
    points[box][target] = np.stack(
        [(xs + x0 + 0.5 - pixels["cx"]) / pixels["fx"] * z, (ys + y0 + 0.5 - pixels["cy"]) / pixels["fy"] * z, z],
        axis=-1,
    ).astype(np.float32)
    normal = frame.normal.copy()
    normal[box][target] = surface_normals(points[box])[target]
    return replace(frame, depth=depth, points=points, valid=valid, normal=normal)


def surface_normals(points: np.ndarray) -> np.ndarray:
    """Unit normals (h, w, 3) of a grid of camera-space points, facing the camera (OpenCV axes: n·z < 0)."""
    along_y, along_x = np.gradient(points.astype(np.float64), axis=(0, 1))
    normal: np.ndarray = np.cross(along_x, along_y)
    normal /= np.maximum(np.linalg.norm(normal, axis=-1, keepdims=True), 1e-12)
    normal *= np.where(normal[..., 2:3] > 0, -1.0, 1.0)
    return normal.astype(np.float32)


def harmonic_fill(values: np.ndarray, known: np.ndarray) -> np.ndarray:
    """Solve Laplace's equation on the unknown pixels with `values` fixed where `known` (Neumann at the edge)."""
    height, width = values.shape
    if min(height, width) > COARSEST:
        even = np.pad(values * known, ((0, height % 2), (0, width % 2)), mode="edge")
        weight = np.pad(known.astype(np.float64), ((0, height % 2), (0, width % 2)), mode="edge")
        summed = _reduce(even)
        count = _reduce(weight)
        coarse_known = count > 0
        coarse = harmonic_fill(np.where(coarse_known, summed / np.maximum(count, 1e-12), 0.0), coarse_known)
        guess = np.repeat(np.repeat(coarse, 2, axis=0), 2, axis=1)[:height, :width]
    else:
        guess = np.full(values.shape, values[known].mean() if known.any() else 0.0)
    solution = np.where(known, values, guess)
    rows, columns = np.indices(values.shape)
    colours = [((rows + columns) % 2 == parity) & ~known for parity in (0, 1)]
    for _ in range(SWEEPS):
        for free in colours:  # red-black over-relaxation: each half updated from the other's newest values
            padded = np.pad(solution, 1, mode="edge")
            average = (padded[:-2, 1:-1] + padded[2:, 1:-1] + padded[1:-1, :-2] + padded[1:-1, 2:]) / 4.0
            solution[free] += RELAXATION * (average[free] - solution[free])
    return solution


def _reduce(plane: np.ndarray) -> np.ndarray:
    """Sum of each 2 × 2 block (even-sized input)."""
    summed: np.ndarray = plane[0::2, 0::2] + plane[1::2, 0::2] + plane[0::2, 1::2] + plane[1::2, 1::2]
    return summed
