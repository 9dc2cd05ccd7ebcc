"""The ground under a reconstructed camera path: a RANSAC plane through its points, and the matrices that level
and scale the whole reconstruction (camera path and points together, through their shared parent).

Everything is in the reconstruction's own frame: the camera path's Blender frame (scene/camera_path.py), where
the first camera sits at the origin looking down −Z with +Y up. A plane is n·x = d with n a unit vector pointing
to the side of the first camera, so the camera's height above the ground is −d.

RANSAC. Three points make a hypothesis; its inliers are the points nearer than `threshold`. With half the points
off the ground, one sample in eight is all ground, so 200 samples miss the ground with probability
(7/8)^200 ≈ 3e-12. Hypotheses are scored on at most 50,000 points (a seeded choice), the winner refined by a
least-squares fit (the smallest singular vector) to its inliers among all points. A phone video is filmed
roughly upright, so with `up` given (the first camera's up, +Y) only planes within `max_tilt` (60°) of level
compete (a camera pitched down up to 60° still finds its ground): a wall or a table top seen straight on is
never taken for the ground. A plane holding under 10 % of the points is no ground but strays lined up by chance.

No bpy here: operators/reconstruction.py applies the matrices.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...contract import InputError

ITERATIONS = 200
SCORED_POINTS = 50_000
MIN_POINTS = 3
THRESHOLD_FRACTION = 0.01  # default inlier distance: this fraction of the points' median distance from the camera
MAX_TILT_DEGREES = 60.0
MIN_SHARE = 0.1  # a ground holds at least this share of the points; fewer is a chance alignment of strays
CAMERA_UP = np.array([0.0, 1.0, 0.0])
CAMERA_FORWARD = np.array([0.0, 0.0, -1.0])
SEED = 0  # the same points give the same plane


@dataclass(frozen=True)
class Plane:
    normal: np.ndarray  # (3,) unit, towards the first camera's side
    offset: float  # d in n·x = d
    inliers: int  # how many points lie on it
    total: int  # of how many

    def distance(self, points: np.ndarray) -> np.ndarray:
        """Signed distances of (n, 3) points, positive on the camera's side."""
        result: np.ndarray = points @ self.normal - self.offset
        return result

    def foot(self, point: np.ndarray) -> np.ndarray:
        """The point of the plane below `point`."""
        result: np.ndarray = point - (point @ self.normal - self.offset) * self.normal
        return result

    def as_list(self) -> list[float]:
        return [*(float(value) for value in self.normal), float(self.offset)]


def plane_from_list(values: list[float] | tuple[float, ...]) -> Plane:
    """A plane stored as [nx, ny, nz, d] (Plane.as_list)."""
    normal = np.asarray(values[:3], np.float64)
    return Plane(normal / np.linalg.norm(normal), float(values[3]), 0, 0)


def default_threshold(points: np.ndarray, origin: np.ndarray | None = None) -> float:
    """The inlier distance for these points: a fraction of their median distance from the camera."""
    centre = np.zeros(3) if origin is None else origin
    return THRESHOLD_FRACTION * float(np.median(np.linalg.norm(points - centre, axis=1)))


def fit_ground(
    points: np.ndarray,
    *,
    threshold: float | None = None,
    up: np.ndarray | None = CAMERA_UP,
    max_tilt: float = MAX_TILT_DEGREES,
    camera: np.ndarray | None = None,
    iterations: int = ITERATIONS,
    seed: int = SEED,
) -> Plane:
    """The plane most points lie on (within `threshold`), level within `max_tilt` degrees of `up` when given,
    its normal towards `camera` (default: the origin, the first camera). Raises InputError when none is found."""
    points = np.asarray(points, np.float64)
    if len(points) < MIN_POINTS:
        raise InputError("The point cloud has too few points to find the ground in.")
    eye = np.zeros(3) if camera is None else np.asarray(camera, np.float64)
    limit = default_threshold(points, eye) if threshold is None else threshold
    if not limit > 0:
        raise InputError("The point cloud's points all sit at one spot: no ground to find.")
    rng = np.random.default_rng(seed)
    scored = points if len(points) <= SCORED_POINTS else points[rng.choice(len(points), SCORED_POINTS, replace=False)]
    best: tuple[int, np.ndarray, float] | None = None
    min_cos = math.cos(math.radians(max_tilt))
    for _ in range(iterations):
        a, b, c = scored[rng.choice(len(scored), 3, replace=False)]
        normal = np.cross(b - a, c - a)
        length = float(np.linalg.norm(normal))
        if length < 1e-12:
            continue  # three points in a line
        normal /= length
        if up is not None and abs(float(normal @ up)) < min_cos:
            continue
        offset = float(normal @ a)
        count = int((np.abs(scored @ normal - offset) < limit).sum())
        if best is None or count > best[0]:
            best = (count, normal, offset)
    if best is None or best[0] < MIN_SHARE * len(scored):
        raise InputError("No level plane found in the point cloud: the camera may not have been held upright.")
    _, normal, offset = best
    normal, offset = _refined(points, normal, offset, limit)
    if normal @ eye - offset < 0:
        normal, offset = -normal, -offset
    inliers = int((np.abs(points @ normal - offset) < limit).sum())
    return Plane(normal, offset, inliers, len(points))


def _refined(points: np.ndarray, normal: np.ndarray, offset: float, limit: float) -> tuple[np.ndarray, float]:
    """The least-squares plane through the inliers of (normal, offset), twice (inliers re-chosen once)."""
    for _ in range(2):
        on = points[np.abs(points @ normal - offset) < limit]
        if len(on) < MIN_POINTS:
            break
        centre = on.mean(axis=0)
        _, _, vt = np.linalg.svd(on - centre, full_matrices=False)
        fitted = vt[-1] / np.linalg.norm(vt[-1])
        normal = fitted if fitted @ normal >= 0 else -fitted
        offset = float(normal @ centre)
    return normal, offset


def level_matrix(plane: Plane, scale: float = 1.0, position: tuple[float, float] = (0.0, 0.0)) -> np.ndarray:
    """The reconstruction's world matrix that puts `plane` at Z = 0 (its normal onto +Z), scaled by `scale`, with
    the first camera (the frame's origin) above (x, y) = `position` and still looking towards +Y as seen from
    above. Camera and points keep their places relative to each other."""
    z_axis = plane.normal
    forward = CAMERA_FORWARD - (CAMERA_FORWARD @ z_axis) * z_axis
    if np.linalg.norm(forward) < 1e-6:  # looking straight down: the camera's up gives the heading instead
        forward = CAMERA_UP - (CAMERA_UP @ z_axis) * z_axis
    y_axis = forward / np.linalg.norm(forward)
    x_axis = np.cross(y_axis, z_axis)
    matrix = np.eye(4)
    matrix[:3, :3] = scale * np.stack([x_axis, y_axis, z_axis])  # rows: where each world axis comes from
    height = -plane.offset  # the origin's distance above the plane
    matrix[:3, 3] = (position[0], position[1], scale * height)
    return matrix


def scaled_about(matrix: np.ndarray, factor: float, pivot: np.ndarray) -> np.ndarray:
    """`matrix` followed by a uniform scale of the world by `factor` about the world point `pivot`."""
    if not (math.isfinite(factor) and factor > 0):
        raise InputError("The scale must be a positive number.")
    scale = np.eye(4)
    scale[:3, :3] *= factor
    scale[:3, 3] = (1.0 - factor) * np.asarray(pivot, np.float64)
    result: np.ndarray = scale @ matrix
    return result


def scale_factor(known: float, measured: float, what: str) -> float:
    """How much to scale so that `measured` (world units) becomes `known`."""
    if not (math.isfinite(known) and known > 0):
        raise InputError(f"The known {what} must be a positive length.")
    if not (math.isfinite(measured) and measured > 1e-9):
        raise InputError(f"The measured {what} is zero: nothing to scale from.")
    return known / measured
