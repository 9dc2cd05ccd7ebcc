"""Binary little-endian PLY of coloured points: `x y z` float32 and `red green blue` uchar per vertex.

What Blender, MeshLab, CloudCompare and the Gaussian-splatting trainers read; written atomically, the vertex
records as one NumPy structured array (no per-point Python).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .atomic import atomic_file

VERTEX = np.dtype([("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("red", "u1"), ("green", "u1"), ("blue", "u1")])


def write_points_ply(path: Path, points: np.ndarray, colours: np.ndarray) -> Path:
    """(n, 3) positions and (n, 3) uint8 colours → `path`."""
    if points.shape != colours.shape or points.ndim != 2 or points.shape[1] != 3:
        raise ValueError("points and colours must both be (n, 3)")
    records = np.empty(len(points), VERTEX)
    for axis, name in enumerate("xyz"):
        records[name] = points[:, axis]
    for axis, name in enumerate(("red", "green", "blue")):
        records[name] = colours[:, axis]
    header = (
        "ply\nformat binary_little_endian 1.0\ncomment ImageForge point cloud\n"
        f"element vertex {len(points)}\n"
        "property float x\nproperty float y\nproperty float z\n"
        "property uchar red\nproperty uchar green\nproperty uchar blue\nend_header\n"
    )
    with atomic_file(path) as temporary, open(temporary, "wb") as handle:
        handle.write(header.encode("ascii"))
        handle.write(records.tobytes())
    return path
