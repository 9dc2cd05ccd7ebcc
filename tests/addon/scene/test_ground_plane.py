"""The ground under a reconstruction (scene/ground_plane.py): RANSAC on synthetic planes with outliers, the
levelling matrix and scaling about a pivot. NumPy only; run under each Blender's own NumPy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from imageforge.addon.scene.ground_plane import (
    Plane,
    fit_ground,
    level_matrix,
    plane_from_list,
    scale_factor,
    scaled_about,
)
from imageforge.contract import InputError


def tilted(normal: tuple[float, float, float]) -> np.ndarray:
    value = np.asarray(normal, np.float64)
    return value / np.linalg.norm(value)


def ground_scene(
    count: int, outlier_share: float, normal: np.ndarray, offset: float, *, seed: int = 1, noise: float = 0.002
) -> tuple[np.ndarray, np.ndarray]:
    """Points on n·x = offset in front of a camera at the origin looking down −Z (noise along n), and uniform
    outliers in the same box; (points, on-plane mask)."""
    rng = np.random.default_rng(seed)
    on = int(count * (1 - outlier_share))
    # two directions in the plane, and a point of it
    helper = np.array([1.0, 0.0, 0.0]) if abs(normal[0]) < 0.9 else np.array([0.0, 0.0, 1.0])
    first = np.cross(normal, helper)
    first /= np.linalg.norm(first)
    second = np.cross(normal, first)
    centre = normal * offset + np.array([0.0, 0.0, -4.0]) - (np.array([0.0, 0.0, -4.0]) @ normal) * normal
    spread = rng.uniform(-3, 3, size=(on, 2))
    plane = centre + spread[:, :1] * first + spread[:, 1:] * second + rng.normal(0, noise, (on, 1)) * normal
    outliers = rng.uniform((-3, -2, -8), (3, 3, -1), size=(count - on, 3))
    points = np.concatenate([plane, outliers])
    mask = np.zeros(len(points), bool)
    mask[:on] = True
    order = rng.permutation(len(points))
    return points[order], mask[order]


@pytest.mark.parametrize("outlier_share", [0.0, 0.3, 0.5, 0.6])
def test_ransac_finds_a_tilted_ground_among_outliers(outlier_share):
    normal = tilted((0.1, 1.0, -0.2))  # the ground below a camera tilted a little
    points, on = ground_scene(4000, outlier_share, normal, -1.5)
    plane = fit_ground(points, threshold=0.02)
    assert math.degrees(math.acos(min(1.0, float(plane.normal @ normal)))) < 0.5
    assert plane.offset == pytest.approx(-1.5, abs=0.01)
    assert plane.distance(np.zeros((1, 3)))[0] > 0  # the camera is above it
    assert abs(plane.inliers - on.sum()) <= 0.02 * len(points)  # a few outliers fall within the band by chance


def test_ransac_on_hundreds_of_thousands_of_points_scores_a_subsample_and_refines_on_all():
    normal = tilted((0.0, 1.0, 0.0))
    points, on = ground_scene(300_000, 0.5, normal, -1.2, noise=0.001)
    plane = fit_ground(points, threshold=0.01)
    assert float(plane.normal @ normal) > math.cos(math.radians(0.1))
    assert plane.offset == pytest.approx(-1.2, abs=2e-3)
    assert plane.total == 300_000 and plane.inliers >= on.sum() * 0.99


def test_a_wall_with_more_points_than_the_ground_is_not_taken_for_the_ground():
    ground, _ = ground_scene(2000, 0.0, tilted((0.0, 1.0, 0.0)), -1.0, seed=2)
    wall, _ = ground_scene(5000, 0.0, tilted((0.0, 0.0, 1.0)), -6.0, seed=3)  # facing the camera, 6 units away
    points = np.concatenate([ground, wall])
    plane = fit_ground(points, threshold=0.02)
    assert float(plane.normal @ (0.0, 1.0, 0.0)) > 0.999
    unguided = fit_ground(points, threshold=0.02, up=None)  # without the upright prior the wall wins
    assert abs(float(unguided.normal @ (0.0, 0.0, 1.0))) > 0.999


def test_a_ground_under_a_camera_pitched_55_degrees_down_is_level_enough():
    pitch = math.radians(55.0)  # the ground's normal in the camera's frame: 55° from its up, towards it
    normal = np.array([0.0, math.cos(pitch), math.sin(pitch)])
    points, _ = ground_scene(3000, 0.4, normal, -1.5)
    plane = fit_ground(points, threshold=0.02)
    assert float(plane.normal @ normal) > math.cos(math.radians(0.5))
    with pytest.raises(InputError, match="No level plane"):
        fit_ground(points, threshold=0.02, max_tilt=45.0)


def test_the_default_threshold_follows_the_scene_s_size():
    normal = tilted((0.05, 1.0, 0.1))
    points, _ = ground_scene(3000, 0.5, normal, -1.5, noise=0.001)
    for factor in (0.01, 1.0, 100.0):
        plane = fit_ground(points * factor)
        assert float(plane.normal @ normal) > math.cos(math.radians(0.5))
        assert plane.offset == pytest.approx(-1.5 * factor, rel=0.01)


def test_too_few_points_or_no_level_plane_is_refused_in_a_sentence():
    with pytest.raises(InputError, match="too few points"):
        fit_ground(np.zeros((2, 3)))
    wall, _ = ground_scene(500, 0.0, tilted((0.0, 0.0, 1.0)), -5.0)
    with pytest.raises(InputError, match="No level plane"):
        fit_ground(wall, threshold=0.01, max_tilt=10.0, iterations=50)


def test_levelling_puts_the_ground_at_z_0_and_the_camera_above_it_facing_plus_y():
    normal = tilted((0.2, 1.0, -0.3))
    plane = Plane(normal, -1.7, 0, 0)
    matrix = level_matrix(plane, 2.0, (0.5, -1.0))
    rotation = matrix[:3, :3] / 2.0
    np.testing.assert_allclose(rotation @ rotation.T, np.eye(3), atol=1e-12)
    assert np.linalg.det(rotation) == pytest.approx(1.0)
    np.testing.assert_allclose(rotation @ normal, [0, 0, 1], atol=1e-12)
    np.testing.assert_allclose(matrix[:3, 3], [0.5, -1.0, 2.0 * 1.7])  # the first camera: 1.7 up, scaled by 2
    rng = np.random.default_rng(0)
    on_plane = [plane.foot(point) for point in rng.normal(size=(20, 3))]
    world = np.array([(matrix @ np.append(point, 1.0))[:3] for point in on_plane])
    np.testing.assert_allclose(world[:, 2], 0.0, atol=1e-12)
    forward = rotation @ np.array([0.0, 0.0, -1.0])
    assert forward[0] == pytest.approx(0.0, abs=1e-12) and forward[1] > 0  # heading +Y, seen from above
    down = level_matrix(Plane(np.array([0.0, 0.0, 1.0]), -2.0, 0, 0))  # a camera looking straight down
    np.testing.assert_allclose(down[:3, :3] @ [0.0, 1.0, 0.0], [0, 1, 0], atol=1e-12)


def test_scaling_about_a_pivot_keeps_the_pivot_and_multiplies_distances():
    matrix = level_matrix(Plane(tilted((0.0, 1.0, 0.1)), -1.5, 0, 0), 1.0, (2.0, 3.0))
    pivot = np.array([2.0, 3.0, 0.0])
    scaled = scaled_about(matrix, 2.5, pivot)
    points = np.random.default_rng(4).normal(size=(10, 3))
    before = np.array([(matrix @ np.append(p, 1))[:3] for p in points])
    after = np.array([(scaled @ np.append(p, 1))[:3] for p in points])
    np.testing.assert_allclose(after - pivot, 2.5 * (before - pivot), atol=1e-12)
    assert scale_factor(1.6, 0.4, "camera height") == pytest.approx(4.0)
    with pytest.raises(InputError, match="positive length"):
        scale_factor(0.0, 1.0, "distance")
    with pytest.raises(InputError, match="measured distance is zero"):
        scale_factor(1.0, 0.0, "distance")
    with pytest.raises(InputError, match="positive number"):
        scaled_about(matrix, -1.0, pivot)


def test_a_stored_plane_reads_back():
    plane = plane_from_list(Plane(tilted((0.0, 2.0, 0.0)), -1.0, 5, 9).as_list())
    np.testing.assert_allclose(plane.normal, [0, 1, 0])
    assert plane.offset == -1.0
