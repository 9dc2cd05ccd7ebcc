"""Foreground colour estimation, measured: the fringe it removes and what it costs next to a BEN2-shaped run.

    uv run --locked --no-sync python bench/foreground.py [--model bench/models/ben2-shaped.onnx] [--runs 3]

- Fringe: the synthetic hair composite (tests/kit/hair_composite.py: known object colour, green wall, known
  matte) cut out with the true matte, composited over new backdrops; mean colour error inside the soft band of
  the photo's own colour (without) and of the estimate (with).
- Cost at 2048²: the estimate on the hair composite's matte (a soft band along the edges, what a trained model
  gives) and on a matte soft everywhere (what a random-weight network gives: the worst case), each the median
  of `--runs`, next to one run of the BEN2-shaped network (bench/export_image_models.py) on 1024² with ONNX
  Runtime on 1 intra-op thread (the server's choice with Blender attached), measured in the same process.
  Each figure is given as wall seconds and as this process's CPU seconds (time.process_time): on a shared
  machine the CPU ratio is the one that holds still, since others' load stretches the wall clock unevenly.
Results: bench/results/foreground.json and a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from tests.kit.hair_composite import fringe_error, hair_composite  # noqa: E402

from imageforge.server.matting import estimate_foreground  # noqa: E402

BACKDROPS = {"white": (1.0, 1.0, 1.0), "magenta": (0.9, 0.1, 0.8)}  # the error is α(F̂ − F): any backdrop


def timed(function, runs: int) -> tuple[float, float]:
    """Median wall and CPU seconds of `runs` calls."""
    walls, cpus = [], []
    for _ in range(runs):
        started, cpu = time.perf_counter(), time.process_time()
        function()
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def model_seconds(path: Path, runs: int) -> tuple[float, float]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    feed = {session.get_inputs()[0].name: np.random.default_rng(0).random((1, 3, 1024, 1024), dtype=np.float32)}
    session.run(None, feed)  # warm-up
    return timed(lambda: session.run(None, feed), runs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", type=Path, default=ROOT / "bench" / "models" / "ben2-shaped.onnx")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    report: dict[str, object] = {}

    print("fringe error inside the soft band (mean |composite − truth|), true matte")
    fringe = {}
    for width, height in ((640, 480), (2048, 2048)):
        composite = hair_composite(width, height, strands=120, seed=1)
        estimated = composite.image.copy()
        estimate = estimate_foreground(estimated, composite.alpha)
        for name, backdrop in BACKDROPS.items():
            without = fringe_error(composite.image, composite, backdrop)
            with_estimate = fringe_error(estimated, composite, backdrop)
            fringe[f"{width}x{height} {name}"] = {"without": without, "with": with_estimate}
            print(
                f"  {width}x{height} over {name:8s} without {without:.4f}  with {with_estimate:.4f}  "
                f"ratio {with_estimate / without:.3f}"
            )
        print(f"  {estimate.describe()}")
    report["fringe"] = fringe

    composite = hair_composite(2048, 2048, strands=120, seed=1)
    band = timed(lambda: estimate_foreground(composite.image.copy(), composite.alpha), args.runs)
    everywhere = np.clip(np.random.default_rng(2).random((2048, 2048), dtype=np.float32), 0.01, 0.99)
    worst = timed(lambda: estimate_foreground(composite.image.copy(), everywhere), args.runs)
    soft_share = float(composite.soft.mean())
    report["estimate_2048_seconds"] = {"hair band": band, "soft everywhere": worst, "band share": soft_share}
    print(
        f"estimate at 2048²: hair matte ({soft_share:.1%} soft) {band[0]:.2f} s ({band[1]:.2f} s CPU), "
        f"soft everywhere {worst[0]:.2f} s ({worst[1]:.2f} s CPU)"
    )
    if args.model.exists():
        model = model_seconds(args.model, args.runs)
        report["ben2_shaped_1024_seconds"] = model
        print(f"BEN2-shaped run (1024², 1 thread): {model[0]:.2f} s ({model[1]:.2f} s CPU)")
        for index, clock in enumerate(("wall", "CPU")):
            print(
                f"estimate ÷ model run ({clock}): hair matte {band[index] / model[index]:.3f}, "
                f"soft everywhere {worst[index] / model[index]:.3f} (goal ≤ 0.15)"
            )
    else:
        print(f"no {args.model}: export it with bench/export_image_models.py --ben2-only for the ratio")
    results = ROOT / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / "foreground.json").write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
