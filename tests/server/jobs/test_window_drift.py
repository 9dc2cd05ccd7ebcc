"""Drift of the windowed camera path at the default memory budget (issue 25: at most 1° and 1 % of the path).

The job's own planning and alignment run on tests/kit/camera_drift.py's synthetic 300-frame trajectory; only the
model is simulated, with stated noise, seeded, so every figure here is deterministic. bench/window_drift.py prints
the same figures for every window size, before and after, side by side.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from imageforge.server.geometry.alignment import PoseAverage, camera_centres
from tests.kit.camera_drift import DEFAULT_WINDOW, HALF, drift_figures, rotation

SEEDS = range(3, 15)


def upper_mean(values: np.ndarray) -> float:
    """The mean plus two standard errors: a bound on the mean that a lucky handful of seeds cannot meet by chance."""
    return float(values.mean() + 2 * values.std(ddof=1) / math.sqrt(len(values)))


def test_at_the_default_budget_a_300_frame_clip_ends_within_one_degree_and_one_percent():
    figures = drift_figures(DEFAULT_WINDOW, seeds=SEEDS)
    assert DEFAULT_WINDOW == 10 and figures.shared == 8  # 4 GiB at 504 px: windows of 10 sharing 8
    rotation_deg, position = figures.errors[:, 0], figures.errors[:, 1]
    assert upper_mean(rotation_deg) <= 1.0, rotation_deg
    assert upper_mean(position) <= 0.01, position  # measured: mean 0.57 %, bound 0.73 % (half overlap: 0.78 %, 1.06 %)


def test_sharing_half_the_frames_drifts_past_the_bound_at_the_default_budget():
    """What the default did before (windows sharing half their frames): on the same seeds the bound on the mean
    position error is over 1 % of the path (measured 1.06 %)."""
    figures = drift_figures(DEFAULT_WINDOW, HALF, seeds=SEEDS)
    assert upper_mean(figures.errors[:, 1]) > 0.01


def world_to_camera(turn: np.ndarray, centre: np.ndarray) -> np.ndarray:
    return np.concatenate([turn, (-turn @ centre)[:, None]], axis=1)


def test_a_frame_seen_by_several_windows_gets_their_mean_camera():
    truth = rotation(np.array([0.2, 1.0, 0.1]), 0.6)
    axis = np.array([1.0, -0.4, 0.3])
    average = PoseAverage(3)
    for sign in (1, -1):  # the same angle either side of the truth, and centres either side of (1, 2, 3)
        average.add(1, world_to_camera(rotation(axis, sign * 0.05) @ truth, np.array([1.0, 2.0, 3.0]) + sign * 0.1))
    average.add(2, world_to_camera(truth, np.zeros(3)))
    both = average.extrinsics([1, 2])
    np.testing.assert_allclose(both[0, :, :3], truth, atol=1e-12)
    np.testing.assert_allclose(camera_centres(both[0]), [1.0, 2.0, 3.0], atol=1e-12)
    np.testing.assert_allclose(both[1], world_to_camera(truth, np.zeros(3)), atol=1e-12)
    assert list(average.seen) == [0, 2, 1]
    with pytest.raises(ValueError, match="Only frames some window has placed"):
        average.extrinsics([0, 1])
