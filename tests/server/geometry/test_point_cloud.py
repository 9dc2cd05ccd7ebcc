"""The point cloud's pixel rules and back-projection, on depth maps whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from imageforge.server.geometry.colmap import rotation_quaternion
from imageforge.server.geometry.point_cloud import (
    PointOptions,
    at_depth_jumps,
    back_project,
    frame_points,
    kept_pixels,
    quotas,
)


def test_a_depth_step_marks_the_pixels_on_both_sides_only_above_the_ratio():
    depth = np.full((4, 6), 2.0)
    depth[:, 3:] = 3.0  # far/near 1.5 across columns 2 | 3
    jumps = at_depth_jumps(depth, 1.2)
    assert jumps[:, 2:4].all() and not jumps[:, :2].any() and not jumps[:, 4:].any()
    assert not at_depth_jumps(depth, 1.6).any()
    assert not at_depth_jumps(depth, 0.0).any()  # 0 keeps them


def test_the_least_confident_fraction_of_each_frame_goes_and_invalid_depth_too():
    depth = np.ones((10, 10))
    depth[0, 0] = np.nan
    depth[0, 1] = -1.0
    confidence = np.arange(100, dtype=float).reshape(10, 10)
    keep = kept_pixels(depth, confidence, PointOptions(confidence_drop=0.5, tear_ratio=0))
    assert not keep[0, 0] and not keep[0, 1]
    assert keep.sum() == 49 and keep[9].all() and not keep[:5].any()  # the upper half of 98 valid values
    assert kept_pixels(depth, confidence, PointOptions(confidence_drop=0, tear_ratio=0)).sum() == 98


def test_back_projection_inverts_the_pinhole_and_the_pose():
    angle = np.radians(30)
    rotation = np.array([[np.cos(angle), 0, np.sin(angle)], [0, 1, 0], [-np.sin(angle), 0, np.cos(angle)]])
    extrinsics = np.hstack([rotation, [[0.2], [-0.1], [0.5]]])
    pixels = np.array([[0, 0], [31, 23], [63, 47]])
    depth = np.array([2.0, 3.0, 4.5])
    world = back_project(pixels, depth, extrinsics, (64.0, 60.0, 32.0, 24.0))
    camera = world @ rotation.T + extrinsics[:, 3]  # back into the camera
    assert camera[:, 2] == pytest.approx(depth)
    assert camera[:, 0] / camera[:, 2] * 64 + 32 == pytest.approx(pixels[:, 0] + 0.5)
    assert camera[:, 1] / camera[:, 2] * 60 + 24 == pytest.approx(pixels[:, 1] + 0.5)


def test_a_frame_gives_at_most_its_quota_the_same_way_every_time():
    depth, confidence = np.full((30, 40), 2.0), np.ones((30, 40))
    options = PointOptions(confidence_drop=0, tear_ratio=0)
    pose = np.eye(3, 4)

    def points():
        return frame_points(0, depth, confidence, pose, (40, 40, 20, 15), options, 100, np.random.default_rng(0))

    first, again = points(), points()
    assert first.points.shape == (100, 3) and np.array_equal(first.pixels, again.pixels)
    assert quotas(8, 800) == 100 and quotas(0, 10) == 10 and quotas(1000, 10) == 1


@pytest.mark.parametrize("count", [1, 5, 24, 25, 300])
def test_frame_step_zero_spreads_about_24_frames(count):
    frames = PointOptions().frames(count)
    assert frames[0] == 0 and len(frames) <= 24 and (count < 24 or len(frames) >= 12)
    assert PointOptions(frame_step=7).frames(20) == [0, 7, 14]


@pytest.mark.parametrize("degrees", [0, 45, 90, 179.9, 180])
@pytest.mark.parametrize("axis", [(1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 2, -3)])
def test_quaternions_rebuild_their_rotation(axis, degrees):
    k = np.asarray(axis, float) / np.linalg.norm(axis)
    cross = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    angle = np.radians(degrees)
    rotation = np.eye(3) + np.sin(angle) * cross + (1 - np.cos(angle)) * cross @ cross
    w, x, y, z = rotation_quaternion(rotation)
    assert w >= 0 and w * w + x * x + y * y + z * z == pytest.approx(1.0)
    rebuilt = np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )
    np.testing.assert_allclose(rebuilt, rotation, atol=1e-9)
