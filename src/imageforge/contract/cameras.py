"""`cameras` (cameras.json) of generate-multiview-cameras: one camera path for a video or frame sequence.

The server writes it with `to_json` (server/jobs/multiview_cameras.py); the add-on reads it with `from_json`
and turns it into Blender cameras (addon/scene/camera_path.py). Layout, version 1:

    {"version": 1, "convention": "...", "model": catalog key, "image_size": [w, h], "model_size": S,
     "windows": [[first, last], ...],
     "frames": [{"frame": number, "extrinsics": [[r, r, r, t] × 3], "intrinsics": {"fx", "fy", "cx", "cy"}}, ...]}

Per frame: world-to-camera extrinsics [R | t] with OpenCV camera axes (x right, y down, z forward), the world
being the first frame's camera, translations in the depth's units; pixel intrinsics at the source size.
`model_size` is the model's process resolution, `windows` the positions (into `frames`) each model run
covered. Frame numbers increase. Files without `version` were written before it existed and have exactly
this layout (version 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .json_fields import JsonFields, read_json_file

CAMERAS_VERSION = 1
WHAT = "The camera path"
ROTATION_TOLERANCE = 1e-3  # R·Rᵀ within this of the identity (the server rounds to 1e-9)


@dataclass(frozen=True)
class FrameCamera:
    """One analysed frame: its source frame number, world-to-camera [R | t] and pixel intrinsics."""

    frame: int
    extrinsics: tuple[tuple[float, ...], ...]  # 3 rows of 4
    fx: float
    fy: float
    cx: float
    cy: float

    def to_json(self) -> dict[str, Any]:
        return {
            "frame": self.frame,
            "extrinsics": [list(row) for row in self.extrinsics],
            "intrinsics": {"fx": self.fx, "fy": self.fy, "cx": self.cx, "cy": self.cy},
        }

    @classmethod
    def from_json(cls, raw: object, position: int) -> FrameCamera:
        number = raw.get("frame") if isinstance(raw, dict) else None
        fields = JsonFields(raw, f"{WHAT}, frame {number if isinstance(number, int) else f'#{position + 1}'}")
        frame = fields.integer("frame")
        extrinsics = fields.matrix("extrinsics", 3, 4)
        if not is_rotation([row[:3] for row in extrinsics]):
            raise fields.problem("extrinsics do not hold a rotation")
        intrinsics = fields.child("intrinsics")
        return cls(
            frame=frame,
            extrinsics=extrinsics,
            fx=intrinsics.number("fx", positive=True),
            fy=intrinsics.number("fy", positive=True),
            cx=intrinsics.number("cx"),
            cy=intrinsics.number("cy"),
        )


@dataclass(frozen=True)
class MultiviewCameras:
    convention: str
    model: str  # catalog key
    image_size: tuple[int, int]  # [w, h] of the source frames
    model_size: int
    windows: tuple[tuple[int, int], ...]  # [first, last] positions into frames, one per model run
    frames: tuple[FrameCamera, ...]
    version: int = CAMERAS_VERSION

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "convention": self.convention,
            "model": self.model,
            "image_size": list(self.image_size),
            "model_size": self.model_size,
            "windows": [list(window) for window in self.windows],
            "frames": [frame.to_json() for frame in self.frames],
        }

    @classmethod
    def from_json(cls, raw: object) -> MultiviewCameras:
        """The document `to_json` writes (or its version-less original); anything else is an InputError."""
        fields = JsonFields(raw, WHAT)
        version = fields.version(CAMERAS_VERSION)
        windows = []
        for window in fields.array("windows"):
            if not (isinstance(window, list) and len(window) == 2 and all(_is_index(item) for item in window)):
                raise fields.problem(f"windows must be [first, last] frame positions (found {window!r:.40})")
            windows.append((int(window[0]), int(window[1])))
        frames = tuple(
            FrameCamera.from_json(frame, position)
            for position, frame in enumerate(fields.array("frames", non_empty=True))
        )
        if any(later.frame <= earlier.frame for earlier, later in zip(frames, frames[1:], strict=False)):
            raise fields.problem("frame numbers do not increase")
        return cls(
            version=version,
            convention=fields.text("convention"),
            model=fields.text("model"),
            image_size=fields.size("image_size"),
            model_size=fields.integer("model_size", minimum=1),
            windows=tuple(windows),
            frames=frames,
        )

    @classmethod
    def read(cls, path: Path) -> MultiviewCameras:
        return cls.from_json(read_json_file(path, "the camera path"))


def is_rotation(rows: list[tuple[float, ...]]) -> bool:
    """A 3×3 matrix that is orthonormal (within ROTATION_TOLERANCE) with determinant +1: no mirror, no scale."""
    for i in range(3):
        for j in range(3):
            dot = sum(rows[i][k] * rows[j][k] for k in range(3))
            if abs(dot - (1.0 if i == j else 0.0)) > ROTATION_TOLERANCE:
                return False
    (a, b, c), (d, e, f), (g, h, i_) = rows
    return a * (e * i_ - f * h) - b * (d * i_ - f * g) + c * (d * h - e * g) > 0


def _is_index(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
