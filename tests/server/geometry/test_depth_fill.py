"""The depth behind a cutout continues the background around it (harmonic fill of inverse depth)."""

from __future__ import annotations

import numpy as np

from imageforge.server.geometry.depth_fill import fill_depth_behind, harmonic_fill
from imageforge.server.geometry.frame import GeometryFrame, NormalizedIntrinsics

HEIGHT, WIDTH = 120, 160
INTRINSICS = NormalizedIntrinsics(fx=0.9, fy=1.2)


def rays() -> tuple[np.ndarray, np.ndarray]:
    pixels = INTRINSICS.in_pixels(WIDTH, HEIGHT)
    ys, xs = np.mgrid[0:HEIGHT, 0:WIDTH] + 0.5
    return (xs - pixels["cx"]) / pixels["fx"], (ys - pixels["cy"]) / pixels["fy"]


def frame_of(depth: np.ndarray, valid: np.ndarray | None = None) -> GeometryFrame:
    rx, ry = rays()
    points = np.stack([rx * depth, ry * depth, depth], axis=-1).astype(np.float32)
    valid = np.ones(depth.shape, bool) if valid is None else valid
    normal = np.broadcast_to(np.float32([0.0, 0.0, -1.0]), points.shape).copy()  # as if everything faced the camera
    return GeometryFrame(depth.astype(np.float32), points, normal, valid, INTRINSICS)


def tilted_wall() -> np.ndarray:
    """Depth of the plane 0.2 x + 0.3 y + z = 5 (metres, camera space)."""
    rx, ry = rays()
    return 5.0 / (0.2 * rx + 0.3 * ry + 1.0)


def test_an_object_in_front_of_a_tilted_wall_is_replaced_by_the_wall_behind_it():
    wall = tilted_wall()
    depth = wall.copy()
    hole = np.zeros((HEIGHT, WIDTH), bool)
    hole[25:95, 50:120] = True
    depth[30:90, 55:115] = 2.0  # the object, 3 m in front of the wall; the hole is its matte grown
    filled = fill_depth_behind(frame_of(depth), hole)
    np.testing.assert_allclose(filled.depth[hole], wall[hole], rtol=1e-3)  # the plane continues: no dip
    np.testing.assert_array_equal(filled.depth[~hole], depth[~hole].astype(np.float32))  # nothing else moves
    rx, ry = rays()
    expected = np.stack([rx * wall, ry * wall, wall], axis=-1)
    np.testing.assert_allclose(filled.points[hole], expected[hole], rtol=1e-3, atol=1e-3)  # on the pixel rays
    assert filled.valid.all()
    wall_normal = -np.array([0.2, 0.3, 1.0]) / np.linalg.norm([0.2, 0.3, 1.0])  # of 0.2 x + 0.3 y + z = 5
    np.testing.assert_allclose(filled.normal[hole], np.broadcast_to(wall_normal, (int(hole.sum()), 3)), atol=2e-3)
    assert (filled.normal[~hole] == np.float32([0.0, 0.0, -1.0])).all()  # nothing else changes


def test_invalid_pixels_behind_the_object_become_valid_and_sky_elsewhere_stays_invalid():
    wall = tilted_wall()
    valid = np.ones((HEIGHT, WIDTH), bool)
    valid[:10] = False  # sky: no depth
    hole = np.zeros((HEIGHT, WIDTH), bool)
    hole[40:80, 60:100] = True
    valid[50:70, 70:90] = False  # the model was unsure on the object
    filled = fill_depth_behind(frame_of(np.where(valid, wall, 0.0), valid), hole)
    assert filled.valid[hole].all() and not filled.valid[:10].any()
    np.testing.assert_allclose(filled.depth[hole], wall[hole], rtol=1e-3)


def test_harmonic_fill_reproduces_affine_values_and_keeps_known_ones():
    ys, xs = np.mgrid[0:37, 0:53]
    values = 0.3 + 0.01 * xs - 0.02 * ys
    known = np.ones(values.shape, bool)
    known[5:30, 8:45] = False
    solved = harmonic_fill(np.where(known, values, 0.0), known)
    np.testing.assert_allclose(solved, values, atol=2e-4)
    np.testing.assert_array_equal(solved[known], values[known])
