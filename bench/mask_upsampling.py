"""A click's mask upsampling: the whole-image bilinear thresholded at 0 against `positive_mask`, which computes only
the rectangle the mask can reach (server/models/sam2_resize.py), side by side on the same logits.

    uv run --locked --no-sync python bench/mask_upsampling.py [--runs 30] [--size 1920x1080]

Logits: an object-like disc covering a fifth of the picture, a small one (a twentieth), and random logits (the
random-weight bench export's ragged masks, positive everywhere: the worst case). Prints the median milliseconds of
each and their ratio; the two masks are checked equal.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from imageforge.server.models.sam2_resize import bilinear, positive_mask  # noqa: E402


def disc(radius: float) -> np.ndarray:
    ys, xs = np.mgrid[0:256, 0:256] + 0.5
    return (radius - np.hypot(xs - 110.0, ys - 140.0)).astype(np.float32)


def median_ms(function, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return 1000 * float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--size", default="1920x1080")
    arguments = parser.parse_args()
    size = tuple(int(side) for side in arguments.size.split("x"))
    cases = {
        "disc, a fifth of the image": disc(64.0),
        "disc, a twentieth": disc(32.0),
        "random (worst case)": np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32),
    }
    print(f"{arguments.size}, {arguments.runs} runs each, load average {os.getloadavg()[0]:.1f}")
    for name, logits in cases.items():
        assert np.array_equal(positive_mask(logits, size), bilinear(logits, size) > 0.0)
        whole, bounded = 0.0, 0.0
        for _ in range(3):  # alternate, so both see the same load
            whole += median_ms(lambda plane=logits: bilinear(plane, size) > 0.0, arguments.runs // 3 or 1)
            bounded += median_ms(lambda plane=logits: positive_mask(plane, size), arguments.runs // 3 or 1)
        print(f"  {name:28s} whole {whole / 3:6.1f} ms   bounded {bounded / 3:6.1f} ms   ratio {bounded / whole:.2f}")


if __name__ == "__main__":
    main()
