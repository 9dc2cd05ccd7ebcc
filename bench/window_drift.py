"""Drift of the windowed camera path on a synthetic 300-frame trajectory whose true cameras are known.

    uv run --locked --no-sync python bench/window_drift.py

The job's own code runs: `plan_windows` chooses the windows for a memory budget, `solve_windows` runs each
window and chains them through their shared frames (geometry/alignment.py). Only the model is simulated: for a
window it returns the true cameras of its frames as Depth Anything 3 would give them, in the window's own world
(its first frame's camera) and at its own scale (a random factor per run: DA3 Small's depth is relative), with
per-camera noise (rotation σ and translation σ relative to the window's extent; `NOISE` below). The same noise
on one run over all 300 frames is the "without windows" figure (that run would need the attention memory
printed). Figures: the last camera's rotation error and its position error over the path length, after the
estimated path and the truth are both re-based on their first camera and the estimate's one free scale is fitted
(least squares over every camera centre). Prints side by side, one line per setting.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src")]

from imageforge.server.geometry.attention import GIB, AttentionEstimate  # noqa: E402
from imageforge.server.job_steps.progress import JobProgress  # noqa: E402
from imageforge.server.jobs.multiview_cameras import Views, plan_windows, solve_windows  # noqa: E402
from imageforge.server.models.da3 import ViewPlacement, ViewsResult  # noqa: E402

FRAMES = 300
SIZE, HEADS = 504, 6  # DA3 Small at the official process resolution
# Per camera and run: rotation σ, translation σ (of the window's extent), the depth map's scale σ and its
# per-pixel σ (relative). Assumptions, not measurements of DA3: what a trained model gives is not known here.
NOISE = {"rotation_deg": 0.2, "translation": 0.005, "depth_scale": 0.01, "depth_pixel": 0.03}
DEPTH = 6.0  # every frame looks at the arc's centre, 6 m away
SEED = 3


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


def solve(truth: np.ndarray, frames_per_window: int, seed: int) -> tuple[np.ndarray, list[range], SimulatedModel]:
    model = SimulatedModel(truth, np.random.default_rng(seed))
    budget = AttentionEstimate(frames_per_window, SIZE, HEADS).bytes / GIB * 1.0001
    windows = plan_windows(model, len(truth), budget, windowed=True)  # type: ignore[arg-type]
    placement = ViewPlacement.upper_bound((14, 14), 14)
    tensors = [np.full((3, 14, 14), index, np.float16) for index in range(len(truth))]
    views = Views(tensors, [placement] * len(truth), list(range(len(truth))), (14, 14))
    depth = np.zeros((len(truth), 14, 14), np.float32)
    poses, _ = solve_windows(JobProgress(_Context()), model, views, windows, depth, np.zeros_like(depth))  # type: ignore[arg-type]
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


def main() -> int:
    truth = trajectory(FRAMES)
    length = float(np.linalg.norm(np.diff(centres(truth), axis=0), axis=1).sum())
    print(f"synthetic trajectory: {FRAMES} frames, path {length:.2f} m; noise per camera and run: {NOISE}")
    print("frames/window  windows  overlap  attention/window  rotation at end  position at end / path")
    seeds = range(SEED, SEED + 5)
    for frames_per_window in (FRAMES, 48, 32, 16, 10, 8):  # 10: the default 4 GiB budget at 504 px
        results = [solve(truth, frames_per_window, seed) for seed in seeds]
        errors = np.array([drift(estimate, truth) for estimate, _, _ in results])
        windows = results[0][1]
        overlap = len(set(windows[0]) & set(windows[1])) if len(windows) > 1 else 0
        memory = AttentionEstimate(len(windows[0]), SIZE, HEADS).bytes / GIB
        print(
            f"{frames_per_window:>13}  {len(windows):>7}  {overlap:>7}  {memory:>13.2f} GiB  "
            f"{errors[:, 0].mean():>12.3f}° (max {errors[:, 0].max():.3f})  "
            f"{errors[:, 1].mean() * 100:>8.3f} % (max {errors[:, 1].max() * 100:.3f} %)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
