"""Align one window's camera path to the previous window through the frames both contain.

Each Depth Anything 3 window has its own world frame and scale. For frames shared by windows A and B,
the same physical camera has world-to-camera extrinsics [R_a | t_a] and [R_b | t_b]. A similarity
x_A = s·R·x_B + t relates the two worlds, so R_a = R_b·Rᵀ and camera centres C_a = s·R·C_b + t.
R comes from the rotations (a chordal mean, robust even when the cameras barely move). s comes from the
depth maps of the shared frames when they are given: Depth Anything 3's depth and translations share one unit
per run, and the median ratio over every pixel of every shared frame is far steadier than the few centimetres
the shared cameras move between them (on bench/window_drift.py's noise: 3.5 % → see docs/benchmarks.md);
without depth, from the camera centres' spread by least squares. t then from the centres' means.

A frame that several windows contain gets the average of their (aligned) cameras, `PoseAverage`: the rotation
nearest the sum of rotation matrices (the chordal mean) and the mean centre. The next window is aligned to those
averages, so each link of the chain rests on every window that saw the shared frames, not on one: with windows
sharing four fifths of their frames the drift at the end of a long clip roughly halves (docs/benchmarks.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Similarity:
    scale: float
    rotation: np.ndarray  # 3×3
    translation: np.ndarray  # 3

    def apply_to_extrinsics(self, extrinsics: np.ndarray) -> np.ndarray:
        """Re-express world-to-camera [R|t] (…×3×4) of world B in world A, in A's metric units."""
        rotation = extrinsics[..., :3] @ self.rotation.T
        centre_b = camera_centres(extrinsics)
        centre_a = self.scale * centre_b @ self.rotation.T + self.translation
        translation: np.ndarray = -np.einsum("...ij,...j->...i", rotation, centre_a)
        return np.concatenate([rotation, translation[..., None]], axis=-1)


def camera_centres(extrinsics: np.ndarray) -> np.ndarray:
    """World-space camera centres C = −Rᵀt of world-to-camera extrinsics (…×3×4)."""
    rotation, translation = extrinsics[..., :3], extrinsics[..., 3]
    centres: np.ndarray = -np.einsum("...ji,...j->...i", rotation, translation)
    return centres


def nearest_rotation(matrix: np.ndarray) -> np.ndarray:
    u, _, vt = np.linalg.svd(matrix)
    correction = np.diag([1.0, 1.0, np.sign(np.linalg.det(u @ vt))])
    rotation: np.ndarray = u @ correction @ vt
    return rotation


def align_windows(
    reference: np.ndarray,
    moving: np.ndarray,
    *,
    reference_depth: np.ndarray | None = None,
    moving_depth: np.ndarray | None = None,
) -> Similarity:
    """The similarity taking `moving`'s world onto `reference`'s, from shared frames' extrinsics (N×3×4)."""
    if reference.shape != moving.shape or reference.shape[0] < 1:
        raise ValueError("Window alignment needs the same shared frames from both windows")
    # R_a = R_b Rᵀ  ⇒  R = R_aᵀ R_b for every shared frame; average and project back onto SO(3).
    rotation = nearest_rotation(np.einsum("nji,njk->ik", reference[:, :, :3], moving[:, :, :3]))
    centres_a, centres_b = camera_centres(reference), camera_centres(moving)
    rotated_b = centres_b @ rotation.T
    spread_b = rotated_b - rotated_b.mean(axis=0)
    usable = None
    if reference_depth is not None and moving_depth is not None:
        usable = (reference_depth > 0) & (moving_depth > 0) & np.isfinite(reference_depth) & np.isfinite(moving_depth)
    if usable is not None and usable.any():
        assert reference_depth is not None and moving_depth is not None
        scale = float(np.median(reference_depth[usable] / moving_depth[usable]))
    elif len(centres_a) >= 2 and np.linalg.norm(spread_b) > 1e-9:
        spread_a = centres_a - centres_a.mean(axis=0)
        scale = float(np.sum(spread_a * spread_b) / np.sum(spread_b * spread_b))
    else:
        scale = 1.0
    translation = centres_a.mean(axis=0) - scale * rotated_b.mean(axis=0)
    return Similarity(scale=scale, rotation=rotation, translation=translation)


class PoseAverage:
    """Per frame, the running chordal mean of the world-to-camera rotations and the mean centre it was given."""

    def __init__(self, count: int) -> None:
        self._rotations = np.zeros((count, 3, 3))
        self._centres = np.zeros((count, 3))
        self.seen = np.zeros(count, np.int64)

    def add(self, index: int, extrinsics: np.ndarray) -> None:
        self._rotations[index] += extrinsics[:, :3]
        self._centres[index] += camera_centres(extrinsics)
        self.seen[index] += 1

    def extrinsics(self, indices: list[int]) -> np.ndarray:
        """The averaged world-to-camera [R|t] (len(indices)×3×4) of frames given at least once."""
        if not indices or (self.seen[indices] < 1).any():
            raise ValueError("Only frames some window has placed have an average camera")
        rotations = np.stack([nearest_rotation(self._rotations[index]) for index in indices])
        centres = self._centres[indices] / self.seen[indices, None]
        translations = -np.einsum("nij,nj->ni", rotations, centres)
        return np.concatenate([rotations, translations[..., None]], axis=-1)
