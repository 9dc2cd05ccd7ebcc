"""Pinhole intrinsics from a job's depth metadata, and the Blender camera settings that reproduce them.

A Blender camera with sensor fit along the image's longer side, `lens = f_px × sensor / size_px` and shifts
measured in units of the longer side projects a camera-space point exactly where the pinhole model
(u = fx·x/z + cx, v = fy·y/z + cy) puts it, when the render resolution has the image's aspect. Blender has one
focal length for square pixels; the fitted axis's focal is used (MoGe-2's intrinsics have fx = fy).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...contract.depth_metadata import DepthMetadata

SENSOR_SIZE_MM = 36.0


@dataclass(frozen=True)
class PixelIntrinsics:
    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float
    reference_depth: float | None = None

    @classmethod
    def of(cls, metadata: DepthMetadata) -> PixelIntrinsics:
        width, height = metadata.image_size
        return cls(width, height, metadata.fx, metadata.fy, metadata.cx, metadata.cy, metadata.reference_depth)

    def scaled(self, width: int, height: int) -> PixelIntrinsics:
        """The same camera for an image of another resolution (the photo rather than the analysed size)."""
        sx, sy = width / self.width, height / self.height
        return PixelIntrinsics(
            width, height, self.fx * sx, self.fy * sy, self.cx * sx, self.cy * sy, self.reference_depth
        )


@dataclass(frozen=True)
class CameraFit:
    sensor_fit: str  # "HORIZONTAL" or "VERTICAL"
    sensor_width: float
    sensor_height: float
    lens: float
    shift_x: float
    shift_y: float
    resolution: tuple[int, int]


def read_metadata(path: Path) -> PixelIntrinsics:
    """The camera of a depth result (its `depth_metadata`, contract/depth_metadata.py), at the size it covers."""
    return PixelIntrinsics.of(DepthMetadata.read(path))


def camera_fit(intrinsics: PixelIntrinsics) -> CameraFit:
    width, height = intrinsics.width, intrinsics.height
    longest = max(width, height)
    horizontal = width >= height
    focal = intrinsics.fx if horizontal else intrinsics.fy
    return CameraFit(
        sensor_fit="HORIZONTAL" if horizontal else "VERTICAL",
        sensor_width=SENSOR_SIZE_MM,
        sensor_height=SENSOR_SIZE_MM,
        lens=focal * SENSOR_SIZE_MM / (width if horizontal else height),
        shift_x=(width / 2.0 - intrinsics.cx) / longest,
        shift_y=(intrinsics.cy - height / 2.0) / longest,
        resolution=(width, height),
    )
