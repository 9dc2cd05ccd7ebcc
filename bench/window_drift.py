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
(least squares over every camera centre), mean and 90th percentile over SEEDS runs. Prints side by side, one line
per window size: before (windows share half their frames, HALF) and after (the job's default overlap,
WINDOW_OVERLAP: four fifths, and each frame's camera averaged over every window that saw it). With half overlap no
shared frame has been seen by more than one window, so the average changes nothing there: "before" is the
alignment as it was before the average. tests/server/jobs/test_window_drift.py holds the default budget's row to
the 1° / 1 % bound.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from tests.kit.camera_drift import (  # noqa: E402
    DEFAULT_WINDOW,
    FRAMES,
    HALF,
    HEADS,
    NOISE,
    SEEDS,
    SIZE,
    WINDOW_OVERLAP,
    centres,
    drift_figures,
    trajectory,
)

from imageforge.server.geometry.attention import GIB, AttentionEstimate  # noqa: E402


def main() -> int:
    truth = trajectory(FRAMES)
    length = float(np.linalg.norm(np.diff(centres(truth), axis=0), axis=1).sum())
    print(f"synthetic trajectory: {FRAMES} frames, path {length:.2f} m; noise per camera and run: {NOISE}")
    print(f"mean (90th percentile) of {len(SEEDS)} seeds; before: overlap {HALF}, after: overlap {WINDOW_OVERLAP}")
    print(
        "frames/window  attention/window | before: runs (shared)  rotation  position/path "
        "| after: runs (shared)  rotation  position/path | after/before rotation, position"
    )
    for frames_per_window in (FRAMES, 48, 32, 16, DEFAULT_WINDOW, 8):
        before, after = drift_figures(frames_per_window, HALF), drift_figures(frames_per_window)
        memory = AttentionEstimate(len(after.windows[0]), SIZE, HEADS).bytes / GIB
        ratios = after.errors.mean(axis=0) / before.errors.mean(axis=0)
        print(
            f"{frames_per_window:>13}  {memory:>12.2f} GiB | {len(before.windows):>4} ({before.shared:>2})  "
            f"{before.cell(0, '°')}  {before.cell(1, ' %', 100)} | {len(after.windows):>4} ({after.shared:>2})  "
            f"{after.cell(0, '°')}  {after.cell(1, ' %', 100)} | {ratios[0]:.2f}, {ratios[1]:.2f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
