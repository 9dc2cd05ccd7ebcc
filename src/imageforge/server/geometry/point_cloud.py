"""A camera path's depth maps as one point cloud: the confident pixels of some frames, back-projected.

Each kept pixel (its centre, at (x + 0.5, y + 0.5) in source pixels) goes out along its camera ray to its depth
(depth along the optical axis, z): camera point ((u − cx)/fx · z, (v − cy)/fy · z, z), then into the world with
the frame's world-to-camera [R | t] inverted: X = Rᵀ(p − t). The world is the cameras' (the first frame's
camera, OpenCV axes), so the points and the path land together.

Which pixels: those of every `frame_step`-th analysed frame, minus each frame's least confident fraction
(`confidence_drop`; Depth Anything 3's confidence has no fixed scale, so a per-frame quantile, not a value), minus
pixels at depth jumps (`tear_ratio`: the far/near ratio to a 4-neighbour above it, Tear at Depth Jumps' rule,
since such pixels float between the two surfaces), and at most `max_points` in all, the same share from each
frame, chosen by a seeded generator so the same job gives the same cloud.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

AUTO_FRAMES = 24  # frame_step 0: about this many frames spread over the clip


@dataclass(frozen=True)
class PointOptions:
    frame_step: int = 0  # 0: spread about AUTO_FRAMES frames
    confidence_drop: float = 0.3
    max_points: int = 200_000
    tear_ratio: float = 1.2  # 0: keep pixels at depth jumps

    def frames(self, count: int) -> list[int]:
        """Positions (into the analysed frames) whose pixels become points."""
        step = self.frame_step or max(1, -(-count // AUTO_FRAMES))
        return list(range(0, count, step))


@dataclass(frozen=True)
class FramePoints:
    """The points one frame gives: world positions and the source pixels they came from."""

    frame: int  # position into the analysed frames
    points: np.ndarray  # (n, 3) float64, world
    pixels: np.ndarray  # (n, 2) int64 (x, y) source pixel indices (the point sits at the pixel's centre)


def at_depth_jumps(depth: np.ndarray, ratio: float) -> np.ndarray:
    """(H, W) bool: pixels whose far/near depth ratio to a 4-neighbour exceeds `ratio` (no pixel when ratio ≤ 1)."""
    jumps = np.zeros(depth.shape, bool)
    if ratio <= 1.0:
        return jumps
    near_across = np.minimum(depth[:, 1:], depth[:, :-1])
    far_across = np.maximum(depth[:, 1:], depth[:, :-1])
    across = far_across > ratio * near_across
    near_down = np.minimum(depth[1:], depth[:-1])
    down = np.maximum(depth[1:], depth[:-1]) > ratio * near_down
    jumps[:, 1:] |= across
    jumps[:, :-1] |= across
    jumps[1:] |= down
    jumps[:-1] |= down
    return jumps


def kept_pixels(depth: np.ndarray, confidence: np.ndarray, options: PointOptions) -> np.ndarray:
    """(H, W) bool: pixels with a positive finite depth, above the frame's confidence quantile, off depth jumps."""
    keep: np.ndarray = np.isfinite(depth) & (depth > 0)
    if options.confidence_drop > 0 and keep.any():
        threshold = np.quantile(confidence[keep], options.confidence_drop)
        keep &= confidence >= threshold
    if options.tear_ratio:
        keep &= ~at_depth_jumps(depth, options.tear_ratio)
    return keep


def back_project(
    pixels: np.ndarray, depth: np.ndarray, extrinsics: np.ndarray, intrinsics: tuple[float, float, float, float]
) -> np.ndarray:
    """World points (n, 3) of pixel indices (n, 2) at their depths (n,) through world-to-camera [R | t]."""
    fx, fy, cx, cy = intrinsics
    u, v = pixels[:, 0] + 0.5, pixels[:, 1] + 0.5
    camera = np.stack([(u - cx) / fx * depth, (v - cy) / fy * depth, depth], axis=1)
    rotation, translation = extrinsics[:, :3], extrinsics[:, 3]
    world: np.ndarray = (camera - translation) @ rotation  # Rᵀ(p − t) for row vectors
    return world


def frame_points(
    frame: int,
    depth: np.ndarray,
    confidence: np.ndarray,
    extrinsics: np.ndarray,
    intrinsics: tuple[float, float, float, float],
    options: PointOptions,
    quota: int,
    rng: np.random.Generator,
) -> FramePoints:
    """At most `quota` of one frame's kept pixels, back-projected (a seeded, uniform choice when there are more)."""
    rows, columns = np.nonzero(kept_pixels(depth, confidence, options))
    if len(rows) > quota:
        chosen = np.sort(rng.choice(len(rows), size=quota, replace=False))
        rows, columns = rows[chosen], columns[chosen]
    pixels = np.stack([columns, rows], axis=1).astype(np.int64)
    points = back_project(pixels, depth[rows, columns].astype(np.float64), extrinsics, intrinsics)
    return FramePoints(frame, points, pixels)


def quotas(frames: int, max_points: int) -> int:
    """The points each of `frames` frames may give so that all of them stay within `max_points`."""
    return max(1, max_points // max(1, frames))
