"""Grid meshes from depth maps: the geometry of depth planes and cutouts, as plain arrays.

The depth EXR holds camera-space points in OpenCV axes (x right, y down, z forward, metres; MoGe-2's
convention) with A = alpha × validity. Blender cameras look down their local -Z with +Y up, so a point maps to
(x, -y, -z) in the camera's local space: a mesh built here and given the camera's world matrix lines up with
the photo when seen through that camera.

The grid has 2^level segments along the image's longer side (at most one per depth pixel). A vertex takes the
depth pixel under its grid line; a quad is kept only when its four corners are valid, and vertices no face uses are
dropped. UVs span 0..1 over the array given (the whole photo, or a cutout's crop).

Tearing: where depth jumps (a person in front of a wall), a grid would join foreground and background with long
faces stretched along the camera's rays, which show as rubber sheets once the camera moves. A quad is dropped when
the depths at the two ends of any of its four edges differ by more than `tear_ratio` (far / near, e.g. 1.2 = 20%),
so the two layers separate. A ratio, not a distance, because the same jump in metres is a discontinuity near the
camera and a gentle slope far away; faces on a receding floor stay unless their edge spans 20% of their distance.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

VALID_THRESHOLD = 0.5
TEAR_RATIO_DEFAULT = 1.2
TEAR_RATIO_MIN = 1.01
SUBDIVISION_MIN = 1
SUBDIVISION_MAX = 10


@dataclass(frozen=True)
class GridMesh:
    vertices: np.ndarray  # (n, 3) float32, Blender camera-local coordinates
    faces: np.ndarray  # (m, 4) int32 vertex indices, counter-clockwise seen from the camera
    uvs: np.ndarray  # (n, 2) float32 per vertex
    segments: tuple[int, int]  # (along x, along y) before invalid quads were removed
    torn: int = 0  # quads with valid corners removed because depth jumps across one of their edges


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


def depth_grid(
    points: np.ndarray, weight: np.ndarray, level: int, *, tear_ratio: float | None = TEAR_RATIO_DEFAULT
) -> GridMesh:
    """Mesh of a depth map: `points` (h, w, 3) OpenCV camera space, `weight` (h, w) alpha × validity.

    `tear_ratio` None keeps every quad whose corners are valid; otherwise quads across a depth jump go.
    """
    height, width = weight.shape
    segments = grid_segments(width, height, level)
    u, columns = _sample_indices(width, segments[0])
    v, rows = _sample_indices(height, segments[1])
    sampled = points[np.ix_(rows, columns)].astype(np.float32)
    valid = (weight[np.ix_(rows, columns)] >= VALID_THRESHOLD) & np.isfinite(sampled).all(axis=-1)
    valid &= sampled[..., 2] > 0
    smooth = None if tear_ratio is None else smooth_quads(np.where(valid, sampled[..., 2], np.nan), tear_ratio)
    return _assemble(opencv_to_blender(sampled), valid, u, v, segments, smooth)


def smooth_quads(depth: np.ndarray, tear_ratio: float) -> np.ndarray:
    """(rows − 1, columns − 1) bool: quads of the vertex `depth` grid with no edge whose far/near ratio exceeds
    `tear_ratio`. NaN depths (invalid vertices) count as smooth here; validity is checked separately."""
    if tear_ratio < TEAR_RATIO_MIN:
        raise ValueError(f"tear_ratio must be at least {TEAR_RATIO_MIN}")
    with np.errstate(invalid="ignore", divide="ignore"):
        across = np.fmax(depth[:, 1:], depth[:, :-1]) / np.fmin(depth[:, 1:], depth[:, :-1])  # (rows, columns − 1)
        down = np.fmax(depth[1:], depth[:-1]) / np.fmin(depth[1:], depth[:-1])  # (rows − 1, columns)
        jump_across, jump_down = across > tear_ratio, down > tear_ratio  # NaN compares False
    return ~(jump_across[:-1] | jump_across[1:] | jump_down[:, :-1] | jump_down[:, 1:])


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
    positions: np.ndarray,
    valid: np.ndarray,
    u: np.ndarray,
    v: np.ndarray,
    segments: tuple[int, int],
    smooth: np.ndarray | None = None,
) -> GridMesh:
    rows, columns = valid.shape
    index = np.arange(rows * columns).reshape(rows, columns)
    corners = np.stack([index[:-1, :-1], index[1:, :-1], index[1:, 1:], index[:-1, 1:]], axis=-1).reshape(
        -1, 4
    )  # top-left, bottom-left, bottom-right, top-right: counter-clockwise from the camera
    flat_valid = valid.ravel()
    complete = flat_valid[corners].all(axis=1)
    kept = complete if smooth is None else complete & smooth.ravel()
    faces = corners[kept]
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
        torn=int(complete.sum() - kept.sum()),
    )


def resample_nearest(values: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Nearest-neighbour resize of a (h, w) array, for a matte at another resolution than the depth."""
    rows = np.minimum((np.arange(shape[0]) + 0.5) * values.shape[0] / shape[0], values.shape[0] - 1).astype(int)
    columns = np.minimum((np.arange(shape[1]) + 0.5) * values.shape[1] / shape[1], values.shape[1] - 1).astype(int)
    return values[np.ix_(rows, columns)]


def centred(grid: GridMesh) -> tuple[GridMesh, np.ndarray]:
    """`grid` moved so that its vertices' mean is its origin, and that mean (an empty grid stays as it is)."""
    if len(grid.vertices) == 0:
        return grid, np.zeros(3)
    centre = grid.vertices.mean(axis=0)
    return replace(grid, vertices=grid.vertices - centre), centre
