"""A camera path and its point cloud as a COLMAP text model (cameras.txt, images.txt, points3D.txt).

COLMAP's own conventions (its documentation, "Output Format"): ids start at 1; an image's pose is the
world-to-camera rotation as a unit quaternion QW QX QY QZ (Hamilton, QW ≥ 0 here) and translation TX TY TZ, with
COLMAP's camera axes (x right, y down, z forward: OpenCV's, which the camera path already uses); intrinsics
in pixels, the centre of the top-left pixel at (0.5, 0.5) — the convention of our cx, cy. Each frame gets its
own PINHOLE camera (fx fy cx cy), since Depth Anything 3 estimates intrinsics per frame. Each point was seen by
the one frame whose pixel it came from: a track of one (IMAGE_ID, POINT2D_IDX), the 2-D point being that pixel's
centre, listed on the image's second line. ERROR is 0 (no triangulation was done).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class ColmapImage:
    name: str  # the image file's name inside images/
    extrinsics: np.ndarray  # 3×4 world-to-camera [R | t]
    intrinsics: tuple[float, float, float, float]  # fx, fy, cx, cy in pixels
    size: tuple[int, int]  # width, height
    pixels: np.ndarray  # (n, 2) int64 source pixels whose centres are this image's 2-D points
    point_ids: np.ndarray  # (n,) 1-based POINT3D_IDs of those pixels


def rotation_quaternion(rotation: np.ndarray) -> tuple[float, float, float, float]:
    """(w, x, y, z) of a rotation matrix, w ≥ 0 (Shepperd's method: stable for every angle)."""
    m = rotation
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    candidates = [trace, m[0, 0], m[1, 1], m[2, 2]]
    largest = int(np.argmax(candidates))
    if largest == 0:
        s = 2.0 * np.sqrt(1.0 + trace)
        q = (0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s)
    elif largest == 1:
        s = 2.0 * np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        q = ((m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s)
    elif largest == 2:
        s = 2.0 * np.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        q = ((m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s)
    else:
        s = 2.0 * np.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        q = ((m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s)
    norm = float(np.linalg.norm(q))
    w, x, y, z = (float(value) / norm for value in q)
    return (w, x, y, z) if w >= 0 else (-w, -x, -y, -z)


def write_colmap_text(
    folder: Path, images: Sequence[ColmapImage], points: np.ndarray, colours: np.ndarray, observers: np.ndarray
) -> None:
    """cameras.txt, images.txt and points3D.txt in `folder`; `observers[i]` is the 0-based image of point i+1,
    and `images[k].point_ids` with `.pixels` say where each point sits in image k (its POINT2D_IDX is its row)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "cameras.txt", "w", encoding="ascii") as handle:
        handle.write("# Camera list with one line of data per camera:\n#   CAMERA_ID, MODEL, WIDTH, HEIGHT, PARAMS[]\n")
        handle.write(f"# Number of cameras: {len(images)}\n")
        for number, image in enumerate(images, start=1):
            fx, fy, cx, cy = image.intrinsics
            handle.write(f"{number} PINHOLE {image.size[0]} {image.size[1]} {fx:.10g} {fy:.10g} {cx:.10g} {cy:.10g}\n")
    index_in_image: dict[int, int] = {}
    with open(folder / "images.txt", "w", encoding="ascii") as handle:
        handle.write(
            "# Image list with two lines of data per image:\n"
            "#   IMAGE_ID, QW, QX, QY, QZ, TX, TY, TZ, CAMERA_ID, NAME\n"
            "#   POINTS2D[] as (X, Y, POINT3D_ID)\n"
            f"# Number of images: {len(images)}, mean observations per image: "
            f"{sum(len(image.point_ids) for image in images) / max(1, len(images)):g}\n"
        )
        for number, image in enumerate(images, start=1):
            w, x, y, z = rotation_quaternion(image.extrinsics[:, :3])
            tx, ty, tz = (float(value) for value in image.extrinsics[:, 3])
            handle.write(f"{number} {w:.12g} {x:.12g} {y:.12g} {z:.12g} {tx:.12g} {ty:.12g} {tz:.12g} {number} ")
            handle.write(f"{image.name}\n")
            centres = image.pixels.astype(np.float64) + 0.5
            handle.write(
                " ".join(
                    f"{u:.6g} {v:.6g} {int(point)}" for (u, v), point in zip(centres, image.point_ids, strict=True)
                )
                + "\n"
            )
            for row, point in enumerate(image.point_ids):
                index_in_image[int(point)] = row
    with open(folder / "points3D.txt", "w", encoding="ascii") as handle:
        handle.write(
            "# 3D point list with one line of data per point:\n"
            "#   POINT3D_ID, X, Y, Z, R, G, B, ERROR, TRACK[] as (IMAGE_ID, POINT2D_IDX)\n"
            f"# Number of points: {len(points)}, mean track length: 1\n"
        )
        for number, (point, colour, observer) in enumerate(zip(points, colours, observers, strict=True), start=1):
            x, y, z = (float(value) for value in point)
            red, green, blue = (int(value) for value in colour)
            row = index_in_image[number]
            handle.write(f"{number} {x:.9g} {y:.9g} {z:.9g} {red} {green} {blue} 0 {int(observer) + 1} {row}\n")
