"""A generate-multiview-cameras result (cameras.json, contract/cameras.py) as Blender camera transforms and one lens.

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

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...contract.cameras import MultiviewCameras
from .intrinsics import PixelIntrinsics

OPENCV_TO_BLENDER = np.diag([1.0, -1.0, -1.0, 1.0])  # F: its own inverse


@dataclass(frozen=True)
class CameraPath:
    image_size: tuple[int, int]
    numbers: tuple[int, ...]  # source frame numbers, increasing
    extrinsics: np.ndarray  # (n, 3, 4) world-to-camera, OpenCV axes
    intrinsics: np.ndarray  # (n, 4) fx, fy, cx, cy in source pixels
    model: str = ""  # the catalog key of the model that made it

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


def camera_path(cameras: MultiviewCameras) -> CameraPath:
    """The checked document (contract/cameras.py: shapes, rotations, increasing frames) as arrays."""
    return CameraPath(
        cameras.image_size,
        tuple(frame.frame for frame in cameras.frames),
        np.array([frame.extrinsics for frame in cameras.frames], np.float64),
        np.array([(frame.fx, frame.fy, frame.cx, frame.cy) for frame in cameras.frames], np.float64),
        cameras.model,
    )


def read_camera_path(path: Path) -> CameraPath:
    return camera_path(MultiviewCameras.read(path))
