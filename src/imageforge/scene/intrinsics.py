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

from ..contract import InputError

SENSOR_SIZE_MM = 36.0


@dataclass(frozen=True)
class Intrinsics:
    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float
    reference_depth: float | None = None

    def scaled(self, width: int, height: int) -> Intrinsics:
        """The same camera for an image of another resolution (the photo rather than the analysed size)."""
        sx, sy = width / self.width, height / self.height
        return Intrinsics(width, height, self.fx * sx, self.fy * sy, self.cx * sx, self.cy * sy, self.reference_depth)


@dataclass(frozen=True)
class CameraFit:
    sensor_fit: str  # "HORIZONTAL" or "VERTICAL"
    sensor_width: float
    sensor_height: float
    lens: float
    shift_x: float
    shift_y: float
    resolution: tuple[int, int]


def parse_metadata(raw: Any) -> Intrinsics:
    """Accepts `{width, height, fx, fy, cx, cy}` flat, or nested as `image_size` / `intrinsics`."""
    if not isinstance(raw, dict):
        raise InputError("The depth metadata is not a JSON object.")
    size = raw.get("image_size") or raw.get("size") or {}
    intrinsics = raw.get("intrinsics") or raw
    if isinstance(size, (list, tuple)) and len(size) == 2:
        size = {"width": size[0], "height": size[1]}
    try:
        width = int(size.get("width", raw.get("width")))
        height = int(size.get("height", raw.get("height")))
        values = [float(intrinsics[name]) for name in ("fx", "fy", "cx", "cy")]
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise InputError("The depth metadata lacks the image size or the intrinsics fx, fy, cx, cy.") from error
    if width <= 0 or height <= 0 or not all(math.isfinite(value) for value in values) or min(values[:2]) <= 0:
        raise InputError("The depth metadata holds an invalid image size or focal length.")
    reference = raw.get("reference_depth")
    reference = float(reference) if isinstance(reference, (int, float)) and reference > 0 else None
    return Intrinsics(width, height, *values, reference_depth=reference)


def read_metadata(path: Path) -> Intrinsics:
    try:
        return parse_metadata(json.loads(Path(path).read_text(encoding="utf-8")))
    except (OSError, ValueError) as error:
        raise InputError(f"Cannot read the depth metadata {Path(path).name}: {error}") from error


def camera_fit(intrinsics: Intrinsics) -> CameraFit:
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
