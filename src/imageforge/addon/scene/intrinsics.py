"""Pinhole intrinsics from a job's depth metadata, and the Blender camera settings that reproduce them.

A Blender camera with sensor fit along the image's longer side, `lens = f_px × sensor / size_px` and shifts
measured in units of the longer side projects a camera-space point exactly where the pinhole model
(u = fx·x/z + cx, v = fy·y/z + cy) puts it, when the render resolution has the image's aspect. Blender has one
focal length for square pixels; the fitted axis's focal is used (MoGe-2's intrinsics have fx = fy).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...contract import InputError

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


METADATA_LAYOUT = "image_size [w, h], fx, fy, cx, cy and reference_depth"


def parse_metadata(raw: Any) -> PixelIntrinsics:
    """The `depth_metadata` JSON exactly as the server writes it (docs/jobs.md, generate-depth-plane-geometry):
    `image_size` [w, h] of the source, pixel intrinsics `fx`, `fy`, `cx`, `cy` at that size, `reference_depth`
    in metres (`analysed_size` is not needed here). Anything else is refused with InputError.
    """
    if not isinstance(raw, dict):
        raise InputError("The depth metadata is not a JSON object.")
    size = raw.get("image_size")
    values = [raw.get(name) for name in ("fx", "fy", "cx", "cy")]
    reference = raw.get("reference_depth")
    if not (isinstance(size, list) and len(size) == 2 and all(_is_int(value) for value in size)) or not all(
        _is_number(value) for value in [*values, reference]
    ):
        raise InputError(f"The depth metadata does not hold {METADATA_LAYOUT} as the server writes them.")
    width, height = size
    if width <= 0 or height <= 0 or min(values[0], values[1], reference) <= 0:
        raise InputError("The depth metadata holds an invalid image size, focal length or reference depth.")
    return PixelIntrinsics(width, height, *(float(value) for value in values), reference_depth=float(reference))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def read_metadata(path: Path) -> PixelIntrinsics:
    try:
        return parse_metadata(json.loads(Path(path).read_text(encoding="utf-8")))
    except (OSError, ValueError) as error:
        raise InputError(f"Cannot read the depth metadata {Path(path).name}: {error}") from error


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
