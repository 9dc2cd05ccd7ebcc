"""generate-depth-plane-geometry on a MoGe-2 ViT-S-shaped model: job time versus model time, and peak memory.

Run: `.venv/bin/python bench/geometry_jobs.py [--sizes 1024 2048] [--level 9]` after exporting the model once with
bench/export_moge_vits.py (architecture-faithful, random weights). Each size runs in a fresh child process (so
its peak RSS is its own): the real job through the server's handler, a real JobContext and the real "models"
resource, twice: cold (the session loads inside the job) and warm (the session is reused, as it is for every
job after the first in a Blender session). Job time is the handler call; model time is the adapter's time in
`session.run`; the rest is decoding, compositing, focal/shift recovery, re-projection and the three writers.
The stage breakdown comes from the time each progress message was published.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]
MODEL = ROOT / "bench" / "models" / "moge2-vits-random.onnx"
RESULTS = ROOT / "bench" / "results"


def child(size: int, level: int) -> dict:
    import numpy as np
    from blendjob.server import JobContext
    from PIL import Image

    from imageforge.contract import JOB_SPECS, JobId
    from imageforge.server.app import create_server
    from imageforge.server.handler import make_handler
    from imageforge.server.jobs import JOB_RUNNERS

    class TimedContext(JobContext):
        def __init__(self, *args):
            super().__init__(*args)
            self.marks: list[tuple[float, str]] = []

        def progress(self, progress, message):
            super().progress(progress, message)
            self.marks.append((time.perf_counter(), str(message)))

    with tempfile.TemporaryDirectory() as folder:
        storage = Path(folder)
        model_dir = storage / "models" / "bench-moge2"
        model_dir.mkdir(parents=True)
        (model_dir / "model.onnx").symlink_to(MODEL)
        entry = {
            "key": "BENCH_MOGE2", "family": "geometry", "adapter": "moge2", "label": "MoGe-2 ViT-S (random)",
            "license": "MIT", "repository": "bench/moge2", "directory": "bench-moge2", "default": True,
            "files": [{"path": "model.onnx"}],
        }  # fmt: skip
        catalog = storage / "catalog.json"
        catalog.write_text(json.dumps({"models": [entry]}))
        os.environ["IMAGEFORGE_MODEL_CATALOG"] = str(catalog)
        rng = np.random.default_rng(0)
        ys, xs = np.mgrid[0:size, 0:size] / size
        rgb = np.stack([xs, ys, 0.5 + 0.5 * np.sin(6 * xs)], axis=-1) * 0.8 + rng.random((size, size, 3)) * 0.2
        alpha = np.where(xs < 0.1, 0.0, 1.0)[..., None]
        photo = storage / "photo.png"
        Image.fromarray((np.concatenate([rgb, alpha], axis=-1) * 255).astype(np.uint8)).save(photo)

        server = create_server()
        server.bind(storage)
        spec = JOB_SPECS[JobId.GENERATE_DEPTH_PLANE_GEOMETRY]
        handler = make_handler(spec, JOB_RUNNERS[spec.id])
        runs = []
        for name in ("cold", "warm"):
            directory = storage / "jobs" / name
            directory.mkdir(parents=True)
            parameters = {"input": str(photo), "resolution_level": level, "device": "cpu", "max_input_size": size}
            context = TimedContext(name, spec.id.value, parameters, server.resources, storage, directory)
            started = time.perf_counter()
            handler(context, parameters)
            job = time.perf_counter() - started
            log = (directory / "job.log").read_text()
            model = float(log.split("Model ran 1 time(s)")[1].split(": model ")[1].split(" s")[0])
            # Each stage lasts from its progress message to the next one (the last one to the handler's return).
            stages, previous, current = {}, started, "(before the first message)"
            for when, message in [*context.marks, (started + job, "")]:
                stages[current] = round(stages.get(current, 0.0) + when - previous, 3)
                previous, current = when, message
            runs.append({"run": name, "job_s": round(job, 3), "model_s": round(model, 3),
                         "ratio": round(job / model, 4), "stages_s": stages})  # fmt: skip
        server.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {"size": size, "level": level, "peak_rss_mib": round(peak, 1), "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048])
    parser.add_argument("--level", type=int, default=9, help="MoGe-2 resolution level (9 = 3600 tokens)")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.level)))
        return
    if not MODEL.exists():
        sys.exit(f"{MODEL} is missing: export it first with bench/export_moge_vits.py (see its docstring)")
    results = []
    for size in args.sizes:
        command = [sys.executable, __file__, "--child", str(size), "--level", str(args.level)]
        output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        results.append(json.loads(output.strip().splitlines()[-1]))
        result = results[-1]
        for run in result["runs"]:
            print(f"{size}² level {args.level} {run['run']}: job {run['job_s']:.2f} s, model {run['model_s']:.2f} s, "
                  f"job/model {run['ratio']:.3f}")  # fmt: skip
            print("   stages:", ", ".join(f"{name} {seconds:.2f}" for name, seconds in run["stages_s"].items()))
        print(f"{size}² peak RSS {result['peak_rss_mib']:.0f} MiB")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "geometry_jobs.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
