"""A synthetic 300-frame camera path whose true cameras are known, and the drift of the windowed solve on it.

The job's own code runs: `plan_windows` chooses the windows for a memory budget, `solve_windows` runs each window
and chains them through their shared frames (geometry/alignment.py). Only the model is simulated: for a window it
returns the true cameras of its frames as Depth Anything 3 would give them, in the window's own world (its first
frame's camera) and at its own scale (a random factor per run: DA3 Small's depth is relative), with per-camera
noise (NOISE). Deterministic for a seed. Used by bench/window_drift.py and tests/server/jobs/test_window_drift.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from imageforge.contract.jobs import MEMORY_BUDGET_GIB_DEFAULT
from imageforge.server.geometry.attention import GIB, AttentionEstimate
from imageforge.server.job_steps.progress import JobProgress
from imageforge.server.jobs.multiview_cameras import STAGES, WINDOW_OVERLAP, Views, plan_windows, solve_windows
from imageforge.server.models.da3 import ViewPlacement, ViewsResult

FRAMES = 300
SIZE, HEADS = 504, 6  # DA3 Small at the official process resolution
# Per camera and run: rotation σ, translation σ (of the window's extent), the depth map's scale σ and its
# per-pixel σ (relative). Assumptions, not measurements of DA3: what a trained model gives is not known here.
NOISE = {"rotation_deg": 0.2, "translation": 0.005, "depth_scale": 0.01, "depth_pixel": 0.03}
DEPTH = 6.0  # every frame looks at the arc's centre, 6 m away
SEEDS = range(3, 23)
DEFAULT_WINDOW = AttentionEstimate(1, SIZE, HEADS).max_views(MEMORY_BUDGET_GIB_DEFAULT * GIB)  # 10 frames at 4 GiB
HALF = 0.5  # the overlap before


def rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    k = axis / np.linalg.norm(axis)
    cross = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(angle) * cross + (1 - np.cos(angle)) * cross @ cross


def trajectory(count: int) -> np.ndarray:
    """World-to-camera (count, 3, 4): a walk along a 90° arc of radius 6 m, bobbing, looking at the centre."""
    poses = np.zeros((count, 3, 4))
    for index in range(count):
        phase = index / (count - 1) * np.pi / 2
        centre = np.array([6 * np.sin(phase), 0.05 * np.sin(index / 7), 6 - 6 * np.cos(phase)])
        forward = np.array([0.0, 0.0, 6.0]) - centre  # towards the arc's centre
        forward /= np.linalg.norm(forward)
        right = np.cross(forward, [0.0, -1.0, 0.0])
        right /= np.linalg.norm(right)
        down = np.cross(forward, right)
        world_to_camera = np.stack([right, down, forward])  # OpenCV axes
        poses[index, :, :3] = world_to_camera
        poses[index, :, 3] = -world_to_camera @ centre
    return poses


def centres(poses: np.ndarray) -> np.ndarray:
    return -np.einsum("nji,nj->ni", poses[:, :, :3], poses[:, :, 3])


def rebase(poses: np.ndarray) -> np.ndarray:
    first = np.eye(4)
    first[:3] = poses[0]
    full = np.concatenate([poses, np.tile([[[0, 0, 0, 1.0]]], (len(poses), 1, 1))], axis=1)
    return (full @ np.linalg.inv(first))[:, :3]


class _Context:
    def check_cancelled(self) -> None: ...
    def progress(self, fraction: float, message: str) -> None: ...


@dataclass
class SimulatedModel:
    """What plan_windows and solve_windows read of the adapter; infer returns the noisy truth of a window."""

    truth: np.ndarray
    rng: np.random.Generator
    size: int = SIZE
    heads: int = HEADS
    runs: int = 0

    def attention(self, views: int) -> AttentionEstimate:
        return AttentionEstimate(views, self.size, self.heads)

    def infer(self, batch: np.ndarray, *, last_run: bool) -> ViewsResult:
        indices = [int(round(float(view[0, 0, 0]))) for view in batch]  # each tensor carries its frame index
        self.runs += 1
        return model_run(self.truth[indices], self.rng)


def model_run(truth: np.ndarray, rng: np.random.Generator) -> ViewsResult:
    """A window's cameras in its own world (its first camera) and scale, each with independent noise."""
    local = rebase(truth)
    extent = float(np.ptp(centres(local), axis=0).max()) or 1.0
    scale = float(np.exp(rng.uniform(np.log(0.5), np.log(2.0))))
    poses = local.copy()
    for pose in poses:
        axis = rng.normal(size=3)
        pose[:, :3] = rotation(axis, np.radians(rng.normal(0, NOISE["rotation_deg"]))) @ pose[:, :3]
        pose[:, 3] = pose[:, 3] + rng.normal(0, NOISE["translation"] * extent, 3)
        pose[:, 3] *= scale
    poses[0] = np.eye(3, 4)  # DA3's world is its reference camera: exact by construction
    count = len(truth)
    frame_scale = 1 + rng.normal(0, NOISE["depth_scale"], (count, 1, 1))
    pixels = 1 + rng.normal(0, NOISE["depth_pixel"], (count, 14, 14))
    depth = (DEPTH * scale * frame_scale * pixels).astype(np.float32)
    intrinsics = np.tile(np.array([[14.0, 0, 7], [0, 14, 7], [0, 0, 1]]), (count, 1, 1))
    return ViewsResult(depth, np.ones_like(depth), poses, intrinsics, {}, 0.0)


def solve(
    truth: np.ndarray, frames_per_window: int, seed: int, overlap: float = WINDOW_OVERLAP
) -> tuple[np.ndarray, list[range], SimulatedModel]:
    model = SimulatedModel(truth, np.random.default_rng(seed))
    budget = AttentionEstimate(frames_per_window, SIZE, HEADS).bytes / GIB * 1.0001
    windows = plan_windows(model, len(truth), budget, windowed=True, overlap=overlap)  # type: ignore[arg-type]
    placement = ViewPlacement.upper_bound((14, 14), 14)
    tensors = [np.full((3, 14, 14), index, np.float16) for index in range(len(truth))]
    views = Views(tensors, [placement] * len(truth), list(range(len(truth))), (14, 14))
    depth = np.zeros((len(truth), 14, 14), np.float32)
    poses, _ = solve_windows(JobProgress(_Context(), STAGES), model, views, windows, depth, np.zeros_like(depth))  # type: ignore[arg-type]
    return rebase(poses), windows, model


def drift(estimate: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """(rotation error of the last camera in degrees, its position error / path length), one scale fitted."""
    truth = rebase(truth)
    ours, real = centres(estimate), centres(truth)
    scale = float(np.sum(ours * real) / max(np.sum(ours * ours), 1e-12))
    length = float(np.linalg.norm(np.diff(real, axis=0), axis=1).sum())
    relative = estimate[-1, :, :3] @ truth[-1, :, :3].T
    angle = float(np.degrees(np.arccos(np.clip((np.trace(relative) - 1) / 2, -1, 1))))
    return angle, float(np.linalg.norm(scale * ours[-1] - real[-1]) / length)


@dataclass(frozen=True)
class Figures:
    windows: list[range]
    errors: np.ndarray  # (seeds, 2): rotation at the end in degrees, position at the end / path length

    @property
    def shared(self) -> int:
        return len(set(self.windows[0]) & set(self.windows[1])) if len(self.windows) > 1 else 0

    def cell(self, column: int, unit: str, factor: float = 1.0) -> str:
        values = self.errors[:, column] * factor
        return f"{values.mean():.2f}{unit} ({np.percentile(values, 90):.2f})"


def drift_figures(frames_per_window: int, overlap: float = WINDOW_OVERLAP, seeds: range = SEEDS) -> Figures:
    truth = trajectory(FRAMES)
    results = [solve(truth, frames_per_window, seed, overlap) for seed in seeds]
    return Figures(results[0][1], np.array([drift(estimate, truth) for estimate, _, _ in results]))
