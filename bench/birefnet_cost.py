"""One run of each BiRefNet-shaped network next to the BEN2-shaped one, in the same process: seconds, CPU, memory.

    uv run --locked --no-sync python bench/birefnet_cost.py --models /tmp/birefnet-shaped   # lite, general, hr
    uv run --locked --no-sync python bench/birefnet_cost.py --models /tmp/birefnet-shaped --only lite --runs 2

The networks come from bench/export_birefnet_shaped.py (BiRefNet's signature, Swin-T or Swin-L cost, random
weights) and bench/export_image_models.py (`--ben2`, default bench/models/ben2-shaped.onnx). ONNX Runtime CPU on
1 intra-op thread, the server's choice with Blender attached, on the model's own input size. Each BiRefNet-shaped
network in its own child process, which
1. loads it and runs it once (cold), then reads its peak RSS (VmHWM): that network alone, loaded and run;
2. loads the BEN2-shaped network, runs it once to warm it, then alternates `--runs` times: the BiRefNet-shaped
   network (warm), the BEN2-shaped one (warm). The ratio is each warm BiRefNet-shaped run over the BEN2-shaped
   run right after it, in wall and in CPU seconds (time.process_time): on a shared machine the CPU ratio holds
   still where others' load stretches the wall clock. `--runs 0` compares the two cold runs instead (for HR,
   whose one run is long).
The load average at the start and end of each child is printed with it. Results: bench/results/birefnet_cost.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
FILES = {
    "lite": "birefnet-lite-shaped.onnx",
    "general": "birefnet-general-shaped.onnx",
    "hr": "birefnet-hr-shaped.onnx",
}


def vm_hwm_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def session(path: Path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    started = time.perf_counter()
    loaded = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return loaded, time.perf_counter() - started


def feed(loaded) -> dict[str, np.ndarray]:
    (tensor,) = loaded.get_inputs()
    shape = [dim if isinstance(dim, int) else 1024 for dim in tensor.shape]
    return {tensor.name: np.random.default_rng(0).standard_normal(shape, dtype=np.float32)}


def timed_run(loaded, inputs) -> tuple[float, float]:
    started, cpu = time.perf_counter(), time.process_time()
    loaded.run(None, inputs)
    return time.perf_counter() - started, time.process_time() - cpu


def child(model: Path, ben2: Path, runs: int) -> dict:
    load = os.getloadavg()[0]
    network, load_seconds = session(model)
    inputs = feed(network)
    cold = timed_run(network, inputs)
    alone = vm_hwm_bytes()
    if runs == 0:
        del network  # its memory back before the BEN2-shaped one loads (HR alone fills most of a 24 GB machine)
    reference, _ = session(ben2)
    reference_inputs = feed(reference)
    reference_cold = timed_run(reference, reference_inputs)  # warms it up; with --runs 0 the only comparison
    pairs = []
    for _ in range(runs):
        warm = timed_run(network, inputs)
        pairs.append({"model": warm, "ben2": timed_run(reference, reference_inputs)})
    return {
        "input": list(inputs.values())[0].shape[-1],
        "load_s": round(load_seconds, 2),
        "cold": cold,
        "ben2_cold": reference_cold,
        "pairs": pairs,
        "alone_peak_bytes": alone,
        "both_peak_bytes": vm_hwm_bytes(),
        "load_average": [round(load, 2), round(os.getloadavg()[0], 2)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, help="folder of bench/export_birefnet_shaped.py's files")
    parser.add_argument("--ben2", type=Path, default=BENCH / "models" / "ben2-shaped.onnx")
    parser.add_argument("--only", default="", help="comma-separated names: " + ", ".join(FILES))
    parser.add_argument("--runs", type=int, default=1, help="warm pairs per network (0: compare the cold runs)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(Path(args.child), args.ben2, args.runs)))
        return
    if args.models is None:
        parser.error("--models names the folder that bench/export_birefnet_shaped.py wrote.")
    names = [name for name in args.only.split(",") if name] or list(FILES)
    environment = {**os.environ, "OMP_NUM_THREADS": "1"}
    results = {}
    print(f"{'network':<10} {'side':>5} {'cold s':>7} {'warm s (CPU)':>15} {'BEN2 s (CPU)':>15} "
          f"{'÷ BEN2 wall':>11} {'÷ BEN2 CPU':>10} {'alone RSS':>10}  load avg", flush=True)  # fmt: skip
    for name in names:
        command = [sys.executable, __file__, "--child", str(args.models / FILES[name]), "--ben2", str(args.ben2)]
        command += ["--runs", str(args.runs)]
        done = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if not lines:
            print(f"{name:<10} failed: {done.stderr.strip().splitlines()[-1:]}", flush=True)
            continue
        row = json.loads(lines[-1])
        results[name] = row
        if not row["pairs"]:  # --runs 0: the cold runs of both
            (wall, cpu), (ben2_wall, ben2_cpu) = row["cold"], row["ben2_cold"]
            print(
                f"{name:<10} {row['input']:>5} {wall:>7.1f} {'(cold only)':>15} {ben2_wall:>7.1f} ({ben2_cpu:>5.1f}) "
                f"{wall / ben2_wall:>11.2f} {cpu / ben2_cpu:>10.2f} {row['alone_peak_bytes'] / 2**20:>6.0f} MiB  "
                f"{row['load_average']}",
                flush=True,
            )
        for pair in row["pairs"]:
            (wall, cpu), (ben2_wall, ben2_cpu) = pair["model"], pair["ben2"]
            print(
                f"{name:<10} {row['input']:>5} {row['cold'][0]:>7.1f} {wall:>7.1f} ({cpu:>5.1f}) "
                f"{ben2_wall:>7.1f} ({ben2_cpu:>5.1f}) {wall / ben2_wall:>11.2f} {cpu / ben2_cpu:>10.2f} "
                f"{row['alone_peak_bytes'] / 2**20:>6.0f} MiB  {row['load_average']}",
                flush=True,
            )
    out = BENCH / "results" / "birefnet_cost.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    previous = json.loads(out.read_text()) if out.exists() else {}
    previous.update(results)
    out.write_text(json.dumps(previous, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
