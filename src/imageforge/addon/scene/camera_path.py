"""A generate-multiview-cameras result (cameras.json, docs/jobs.md) as Blender camera transforms and one lens.

cameras.json gives, per analysed frame, world-to-camera extrinsics [R | t] with OpenCV camera axes (x right,
y down, z forward), the world being the first frame's camera, and pixel intrinsics at the source size.

Axes. A Blender camera looks down its local −Z with +Y up, so its local axes are OpenCV's with y and z negated:
F = diag(1, −1, −1). The OpenCV camera-to-world is C = [Rᵀ | −Rᵀt]; the camera object's matrix in the path's
own Blender frame is F·C·F (Blender camera axes → OpenCV camera → OpenCV world → Blender axes). The first
frame's camera (C = I) thus gets the identity, and the caller places the whole path with one matrix: like a
depth plane's camera, at the 3D cursor facing +Y.

Lens. Depth Anything 3 estimates intrinsics per frame, and they jitter a little; a shot is almost always taken
with one focal length, so the camera gets the median of each value (a keyframed focal length would add zoom
noise that no real lens made).

No bpy here: the operator turns the matrices into keyframes (scene/animation.py).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...contract import InputError
from .intrinsics import PixelIntrinsics

OPENCV_TO_BLENDER = np.diag([1.0, -1.0, -1.0, 1.0])  # F: its own inverse
ORTHONORMAL_TOLERANCE = 1e-3


@dataclass(frozen=True)
class CameraPath:
    image_size: tuple[int, int]
    numbers: tuple[int, ...]  # source frame numbers, increasing
    extrinsics: np.ndarray  # (n, 3, 4) world-to-camera, OpenCV axes
    intrinsics: np.ndarray  # (n, 4) fx, fy, cx, cy in source pixels

    def blender_matrices(self) -> np.ndarray:
        """(n, 4, 4) camera object matrices in the path's Blender frame (the first camera's, for rebased paths)."""
        rotation = self.extrinsics[:, :, :3]
        translation = self.extrinsics[:, :, 3:]
        camera_to_world = np.tile(np.eye(4), (len(self.numbers), 1, 1))
        camera_to_world[:, :3, :3] = rotation.transpose(0, 2, 1)
        camera_to_world[:, :3, 3:] = -rotation.transpose(0, 2, 1) @ translation
        return OPENCV_TO_BLENDER @ camera_to_world @ OPENCV_TO_BLENDER

    def lens_intrinsics(self) -> PixelIntrinsics:
        """One pinhole for the whole shot: the median of every frame's estimate, at the source size."""
        fx, fy, cx, cy = (float(value) for value in np.median(self.intrinsics, axis=0))
        return PixelIntrinsics(*self.image_size, fx, fy, cx, cy)

    def extent(self) -> float:
        """How far the path reaches from its first camera (for the camera's clip end)."""
        centres = self.blender_matrices()[:, :3, 3]
        return float(np.linalg.norm(centres, axis=1).max())


def parse_camera_path(raw: Any) -> CameraPath:
    """Validate the documented layout; every problem is one sentence naming what is wrong."""
    if not isinstance(raw, dict):
        raise _invalid("it is not a JSON object")
    size = raw.get("image_size")
    if not (isinstance(size, list) and len(size) == 2 and all(_positive_int(value) for value in size)):
        raise _invalid("image_size must be [width, height] in pixels")
    frames = raw.get("frames")
    if not isinstance(frames, list) or not frames:
        raise _invalid("it has no frames")
    numbers, extrinsics, intrinsics = [], [], []
    for position, frame in enumerate(frames):
        if not isinstance(frame, dict) or not isinstance(frame.get("frame"), int) or isinstance(frame["frame"], bool):
            raise _invalid(f"frame {position + 1} has no frame number")
        numbers.append(frame["frame"])
        extrinsics.append(_extrinsics(frame.get("extrinsics"), frame["frame"]))
        intrinsics.append(_intrinsics(frame.get("intrinsics"), frame["frame"]))
    if any(later <= earlier for earlier, later in zip(numbers, numbers[1:], strict=False)):
        raise _invalid("its frame numbers do not increase")
    return CameraPath((int(size[0]), int(size[1])), tuple(numbers), np.stack(extrinsics), np.stack(intrinsics))


def read_camera_path(path: Path) -> CameraPath:
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError(f"Cannot read the camera path {Path(path).name}: {error}") from error
    return parse_camera_path(raw)


def _extrinsics(raw: Any, number: int) -> np.ndarray:
    try:
        matrix = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        matrix = np.zeros(0)
    if matrix.shape != (3, 4) or not np.isfinite(matrix).all():
        raise _invalid(f"frame {number}'s extrinsics are not a finite 3×4 matrix")
    rotation = matrix[:, :3]
    if not np.allclose(rotation @ rotation.T, np.eye(3), atol=ORTHONORMAL_TOLERANCE) or np.linalg.det(rotation) < 0:
        raise _invalid(f"frame {number}'s extrinsics do not hold a rotation")
    return matrix


def _intrinsics(raw: Any, number: int) -> np.ndarray:
    try:
        values = [float(raw[name]) for name in ("fx", "fy", "cx", "cy")]
    except (KeyError, TypeError, ValueError) as error:
        raise _invalid(f"frame {number} lacks the intrinsics fx, fy, cx, cy") from error
    if not all(math.isfinite(value) for value in values) or min(values[:2]) <= 0:
        raise _invalid(f"frame {number} has an invalid focal length or centre")
    return np.asarray(values)


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _invalid(what: str) -> InputError:
    return InputError(f"The camera path result is not valid: {what}.")
