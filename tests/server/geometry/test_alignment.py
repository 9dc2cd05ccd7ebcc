"""Window alignment recovers a known similarity; attention estimates match the facts and say what fits."""

from __future__ import annotations

import numpy as np
import pytest

from imageforge.server.geometry.alignment import align_windows, camera_centres
from imageforge.server.geometry.attention import GIB, AttentionEstimate


def rotation_about(axis: np.ndarray, angle: float) -> np.ndarray:
    axis = axis / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def camera_path(count: int) -> np.ndarray:
    """World-to-camera extrinsics of a camera moving along a curve while turning."""
    extrinsics = []
    for index in range(count):
        rotation = rotation_about(np.array([0.1, 1.0, 0.2]), 0.05 * index)
        centre = np.array([0.3 * index, 0.05 * index**2, 0.1 * index])
        extrinsics.append(np.concatenate([rotation, (-rotation @ centre)[:, None]], axis=1))
    return np.array(extrinsics)


def to_other_world(extrinsics: np.ndarray, scale: float, rotation: np.ndarray, translation: np.ndarray):
    """Express world-A extrinsics in world B where x_A = s·R·x_B + t."""
    rotation_b = extrinsics[:, :, :3] @ rotation
    centres_b = (camera_centres(extrinsics) - translation) @ rotation / scale
    return np.concatenate([rotation_b, -np.einsum("nij,nj->ni", rotation_b, centres_b)[..., None]], axis=-1)


@pytest.mark.parametrize("shared", [2, 4])
def test_recovers_the_similarity_between_windows(shared):
    truth = camera_path(8)
    scale, rotation, translation = 2.5, rotation_about(np.array([1.0, 0.3, -0.2]), 0.7), np.array([1.0, -2.0, 0.5])
    window_b = to_other_world(truth[8 - shared - 2 :], scale, rotation, translation)
    similarity = align_windows(truth[8 - shared - 2 : 8 - 2], window_b[:shared])
    assert similarity.scale == pytest.approx(scale, rel=1e-9)
    np.testing.assert_allclose(similarity.rotation, rotation, atol=1e-9)
    np.testing.assert_allclose(similarity.translation, translation, atol=1e-9)
    np.testing.assert_allclose(similarity.apply_to_extrinsics(window_b), truth[8 - shared - 2 :], atol=1e-9)


def test_static_camera_takes_scale_from_depth():
    truth = camera_path(1)
    rotation = rotation_about(np.array([0.0, 0.0, 1.0]), 0.3)
    moved = to_other_world(truth, 4.0, rotation, np.zeros(3))
    depth_a = np.full((4, 4), 8.0)
    similarity = align_windows(truth, moved, reference_depth=depth_a, moving_depth=depth_a / 4.0)
    assert similarity.scale == pytest.approx(4.0)
    np.testing.assert_allclose(similarity.rotation, rotation, atol=1e-9)


def test_attention_estimate_matches_the_measured_order_of_magnitude():
    estimate = AttentionEstimate(views=12, image_size=1008, heads=6)
    assert 80 < estimate.bytes / 1e9 < 100  # facts: about 12 views at 1008 px need ~90 GB
    fits = AttentionEstimate(views=1, image_size=504, heads=6).max_views(4 * GIB)
    assert AttentionEstimate(fits, 504, 6).bytes <= 4 * GIB < AttentionEstimate(fits + 1, 504, 6).bytes
    message = AttentionEstimate(views=40, image_size=504, heads=6).over_budget_message(4)
    assert message.startswith("40 frames at 504 px need about ")
    assert f"use at most {fits} frames, or turn on windowed processing." in message


def test_depth_of_the_shared_frames_sets_the_scale_even_when_noisy_cameras_move():
    """The shared cameras move a little and their centres are noisy: the centres' spread would give a wrong scale;
    the shared frames' depth maps (thousands of pixels, one unit with the translations) give the right one."""
    truth = camera_path(4)
    rotation = rotation_about(np.array([0.2, 1.0, 0.0]), 0.4)
    moved = to_other_world(truth, 3.0, rotation, np.array([0.5, 0.0, -1.0]))
    moved[:, :, 3] += np.random.default_rng(1).normal(0, 0.05, (4, 3))  # 5 cm of noise on ~30 cm baselines
    depth = np.random.default_rng(2).uniform(2.0, 9.0, (4, 32, 32))
    from_centres = align_windows(truth, moved)
    from_depth = align_windows(truth, moved, reference_depth=depth, moving_depth=depth / 3.0)
    assert abs(from_centres.scale - 3.0) > 0.05  # what the centres alone say
    assert from_depth.scale == pytest.approx(3.0, rel=1e-9)
