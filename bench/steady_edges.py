"""Steady edges, measured: flicker where the picture is still and lag at a moving edge, raw vs steadied, on the
synthetic moving-edge clip (tests/kit/moving_edge.py) for several speeds, plus the filter's cost per 1080p frame.

    uv run python bench/steady_edges.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.kit.moving_edge import edge_lag, flicker, moving_edge_clip  # noqa: E402

from imageforge.server.job_steps.steady_edges import SteadyEdges  # noqa: E402


def main() -> None:
    print(
        f"{'speed px/frame':>14} {'flicker raw':>12} {'steady':>8} {'ratio':>6} {'lag raw px':>10} "
        f"{'steady px':>9} {'plain average px':>16}"
    )
    for speed in (1, 2, 4):
        ratios = []
        for seed in range(5):
            clip = moving_edge_clip(frames=20, speed=speed, seed=seed)
            steady = SteadyEdges()
            result = np.stack([steady(p, m) for p, m in zip(clip.pixels, clip.model, strict=True)])
            raw_flicker, steady_flicker = flicker(clip.model, clip.static), flicker(result, clip.static)
            ratios.append(steady_flicker / raw_flicker)
            plain = SteadyEdges(tolerance=1e9)  # the same blend without the picture's guide
            averaged = np.stack([plain(p, m) for p, m in zip(clip.pixels, clip.model, strict=True)])
            lags = edge_lag(clip.model, clip), edge_lag(result, clip), edge_lag(averaged, clip)
        print(
            f"{speed:>14} {raw_flicker:>12.4f} {steady_flicker:>8.4f} {np.mean(ratios):>6.2f} "
            f"{lags[0]:>10.1f} {lags[1]:>9.1f} {lags[2]:>16.1f}"
        )
    frame = np.random.default_rng(0).random((1080, 1920, 3), dtype=np.float32)
    matte = np.random.default_rng(1).random((1080, 1920), dtype=np.float32)
    steady = SteadyEdges()
    steady(frame, matte)
    started = time.perf_counter()
    for _ in range(5):
        steady(frame, matte)
    print(f"cost per 1920×1080 frame: {(time.perf_counter() - started) / 5 * 1000:.0f} ms")


if __name__ == "__main__":
    main()
