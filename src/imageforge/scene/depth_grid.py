"""Grid meshes from depth maps: the geometry of depth planes and cutouts, as plain arrays.

The depth EXR holds camera-space points in OpenCV axes (x right, y down, z forward, metres; MoGe-2's
convention) with A = alpha × validity. Blender cameras look down their local -Z with +Y up, so a point maps to
(x, -y, -z) in the camera's local space: a mesh built here and given the camera's world matrix lines up with
the photo when seen through that camera.

The grid has 2^level segments along the image's longer side (at most one per depth pixel). A vertex takes the
depth pixel under its grid line; a quad is kept only when its four corners are valid, and vertices no face uses are
dropped. UVs span 0..1 over the array given (the whole photo, or a cutout's crop).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

VALID_THRESHOLD = 0.5
SUBDIVISION_MIN = 1
SUBDIVISION_MAX = 10


@dataclass(frozen=True)
class GridMesh:
    vertices: np.ndarray  # (n, 3) float32, Blender camera-local coordinates
    faces: np.ndarray  # (m, 4) int32 vertex indices, counter-clockwise seen from the camera
    uvs: np.ndarray  # (n, 2) float32 per vertex
    segments: tuple[int, int]  # (along x, along y) before invalid quads were removed


def opencv_to_blender(points: np.ndarray) -> np.ndarray:
    """OpenCV camera axes (x right, y down, z forward) to Blender camera axes (x right, y up, z backward)."""
    return points * np.array([1.0, -1.0, -1.0], dtype=points.dtype)


def grid_segments(width: int, height: int, level: int) -> tuple[int, int]:
    level = min(max(int(level), SUBDIVISION_MIN), SUBDIVISION_MAX)
    longest = max(width, height)
    along_long = max(1, min(2**level, longest - 1))
    along_short = max(1, round(along_long * min(width, height) / longest))
    return (along_long, along_short) if width >= height else (along_short, along_long)


def _sample_indices(size: int, segments: int) -> tuple[np.ndarray, np.ndarray]:
    """Fractions 0..1 of each grid line and the pixel under each (integer arithmetic: no rounding ties)."""
    lines = np.arange(segments + 1)
    return lines / segments, np.minimum(lines * size // segments, size - 1).astype(np.intp)


def depth_grid(points: np.ndarray, weight: np.ndarray, level: int) -> GridMesh:
    """Mesh of a depth map: `points` (h, w, 3) OpenCV camera space, `weight` (h, w) alpha × validity."""
    height, width = weight.shape
    segments = grid_segments(width, height, level)
    u, columns = _sample_indices(width, segments[0])
    v, rows = _sample_indices(height, segments[1])
    sampled = points[np.ix_(rows, columns)].astype(np.float32)
    valid = (weight[np.ix_(rows, columns)] >= VALID_THRESHOLD) & np.isfinite(sampled).all(axis=-1)
    valid &= sampled[..., 2] > 0
    return _assemble(opencv_to_blender(sampled), valid, u, v, segments)


def flat_grid(weight: np.ndarray, level: int, size: float) -> GridMesh:
    """A flat mesh (z = 0) of the image's shape, `size` along its longer side, centred on the origin."""
    height, width = weight.shape
    segments = grid_segments(width, height, level)
    u, columns = _sample_indices(width, segments[0])
    v, rows = _sample_indices(height, segments[1])
    scale = size / max(width, height)
    xs = (u - 0.5) * width * scale
    ys = (0.5 - v) * height * scale
    positions = np.zeros((len(v), len(u), 3), dtype=np.float32)
    positions[..., 0] = xs[None, :]
    positions[..., 1] = ys[:, None]
    valid = weight[np.ix_(rows, columns)] >= VALID_THRESHOLD
    return _assemble(positions, valid, u, v, segments)


def _assemble(
    positions: np.ndarray, valid: np.ndarray, u: np.ndarray, v: np.ndarray, segments: tuple[int, int]
) -> GridMesh:
    rows, columns = valid.shape
    index = np.arange(rows * columns).reshape(rows, columns)
    corners = np.stack([index[:-1, :-1], index[1:, :-1], index[1:, 1:], index[:-1, 1:]], axis=-1).reshape(
        -1, 4
    )  # top-left, bottom-left, bottom-right, top-right: counter-clockwise from the camera
    flat_valid = valid.ravel()
    faces = corners[flat_valid[corners].all(axis=1)]
    used = np.zeros(rows * columns, dtype=bool)
    used[faces.ravel()] = True
    remap = np.full(rows * columns, -1, dtype=np.int64)
    remap[used] = np.arange(int(used.sum()))
    uv = np.stack(np.meshgrid(u, 1.0 - v), axis=-1).reshape(-1, 2)
    return GridMesh(
        vertices=positions.reshape(-1, 3)[used].astype(np.float32),
        faces=remap[faces].astype(np.int32),
        uvs=uv[used].astype(np.float32),
        segments=segments,
    )
