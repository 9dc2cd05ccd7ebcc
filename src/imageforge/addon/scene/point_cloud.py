"""A generate-multiview-cameras point cloud (points.ply, docs/jobs.md) as arrays in the camera path's Blender frame.

The file is binary little-endian PLY with one `vertex` element of `x y z` float32 and `red green blue` uchar,
as the server's media/ply.py writes it; anything else is refused in one sentence, so a broken download never
becomes a half-made object. The points are in the cameras' world (OpenCV axes, the first frame's camera), so
the same axis flip as the camera path's (scene/camera_path.py, F = diag(1, −1, −1)) puts them in the path's
Blender frame, where the first camera sits at the origin looking down −Z.

No bpy here: scene/reconstruction.py makes the object.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...contract import InputError

VERTEX = np.dtype([("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("red", "u1"), ("green", "u1"), ("blue", "u1")])
EXPECTED_PROPERTIES = [
    "property float x",
    "property float y",
    "property float z",
    "property uchar red",
    "property uchar green",
    "property uchar blue",
]
MAX_HEADER = 4096
OPENCV_TO_BLENDER = np.array([1.0, -1.0, -1.0], np.float32)


@dataclass(frozen=True)
class PointCloud:
    positions: np.ndarray  # (n, 3) float32, the camera path's Blender frame
    colours: np.ndarray  # (n, 3) uint8, sRGB as in the frames

    def __len__(self) -> int:
        return len(self.positions)


def read_points_ply(path: Path) -> PointCloud:
    """The checked file's points, flipped from OpenCV axes into the path's Blender frame."""
    data = path.read_bytes()
    end = data.find(b"end_header\n", 0, MAX_HEADER)
    if not data.startswith(b"ply\n") or end < 0:
        raise InputError(f"The point cloud '{path.name}' is not a PLY file.")
    lines = [line.strip() for line in data[:end].decode("ascii", errors="replace").splitlines()[1:]]
    lines = [line for line in lines if line and not line.startswith("comment")]
    count = _vertex_count(lines, path)
    if lines[2:] != EXPECTED_PROPERTIES:
        raise InputError(f"The point cloud '{path.name}' does not hold x y z float and red green blue uchar per point.")
    body = data[end + len(b"end_header\n") :]
    if len(body) != count * VERTEX.itemsize:
        raise InputError(
            f"The point cloud '{path.name}' is cut short or too long: {count} points need "
            f"{count * VERTEX.itemsize} bytes, it has {len(body)}."
        )
    records = np.frombuffer(body, VERTEX, count)
    positions = np.stack([records["x"], records["y"], records["z"]], axis=1)
    if not np.isfinite(positions).all():
        raise InputError(f"The point cloud '{path.name}' holds points that are not finite numbers.")
    colours = np.stack([records["red"], records["green"], records["blue"]], axis=1)
    return PointCloud(positions * OPENCV_TO_BLENDER, np.ascontiguousarray(colours))


def _vertex_count(lines: list[str], path: Path) -> int:
    if len(lines) < 2 or lines[0] != "format binary_little_endian 1.0":
        raise InputError(f"The point cloud '{path.name}' is not binary little-endian PLY.")
    words = lines[1].split()
    if len(words) != 3 or words[:2] != ["element", "vertex"] or not words[2].isdigit():
        raise InputError(f"The point cloud '{path.name}' has no vertex count.")
    return int(words[2])
