"""fp16 model files on ONNX Runtime CPU: the fp16 file, its fp32 twin and the server's fp32 CPU copy, side by side.

    uv run --locked --no-sync python bench/fp16_cpu.py [--runs 3] [--threads N] [--here]

It runs as the server really runs models: in the server environment Set Up Server builds from the shipped
pins (tests/kit/server_env.py; the bench re-starts itself there, with only BlendJob added beside it) on the
server's default threads; `--here` runs in the calling environment instead.

Needs bench/models/ben2-shaped.onnx and ben2-shaped-fp16.onnx (bench/export_image_models.py --ben2-only).
The copy is derived exactly as the server derives it on first CPU use (cpu_copy.derive: rewrite, then the
check against the original on a sample), into bench/results/. Then the three files run the same input in
turn (one warm-up each, then `--runs` rounds, interleaved so machine load hits all three alike) on the
server's CPU session settings. Printed per file: median wall and CPU seconds per run (CPU time of the
process: on this shared machine wall time also measures the other engineers' load), each ÷ the fp32 twin,
and the node count after ONNX Runtime's optimisation (fewer nodes: Casts gone, GELU fused), plus whether
the copy's optimised graph is the twin's operator for operator. Goal: copy ÷ fp32 ≤ 1.05.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def in_server_environment() -> None:
    """Run this script again with the server environment's Python: our source and BlendJob (alone, through a
    link) on its path, nothing else of the calling environment."""
    import blendjob

    sys.path.insert(0, str(HERE.parent))
    from tests.kit.server_env import cached_environment

    python = cached_environment() / ".venv" / "bin" / "python"
    with tempfile.TemporaryDirectory() as links:
        (Path(links) / "blendjob").symlink_to(Path(blendjob.__file__).resolve().parent)
        path = os.pathsep.join([str(HERE.parent / "src"), links])
        completed = subprocess.run(
            [str(python), __file__, "--here", *sys.argv[1:]], env={**os.environ, "PYTHONPATH": path}
        )
    raise SystemExit(completed.returncode)


if "--here" not in sys.argv:
    in_server_environment()

import numpy as np  # noqa: E402  (the environment is chosen above)
import onnxruntime as ort  # noqa: E402

from imageforge.server.cpu_copies.cpu_copy import copy_path, derive  # noqa: E402
from imageforge.server.cpu_copies.onnx_messages import parse_model  # noqa: E402
from imageforge.server.inference.devices import default_intra_op_threads  # noqa: E402

MODELS = HERE / "models"
RESULTS = HERE / "results"
GOAL = 1.05


def session(path: Path, threads: int, optimized: Path | None = None) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    if optimized is not None:
        options.optimized_model_filepath = str(optimized)
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def optimised_nodes(path: Path, threads: int) -> list[str]:
    """Operator types of the graph ONNX Runtime really runs, in order."""
    target = RESULTS / f"{path.stem}.optimised.onnx"
    session(path, threads, optimized=target)
    operators = [node.op_type for node in parse_model(target.read_bytes()).graph.node]
    target.unlink()
    return operators


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=default_intra_op_threads())
    parser.add_argument("--here", action="store_true", help="run in this environment, not the server's")
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    fp32, fp16 = MODELS / "ben2-shaped.onnx", MODELS / "ben2-shaped-fp16.onnx"
    source = RESULTS / fp16.name  # derive beside a private copy of the original, as the server does beside its own
    shutil.copyfile(fp16, source)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    started = time.perf_counter()
    record = derive(ort, source, digest, threads=args.threads)
    derive_seconds = time.perf_counter() - started
    if record is None or record.copy is None:
        raise SystemExit(f"no copy: {record}")
    files = {"fp32 twin": fp32, "fp16 file": source, "fp32 CPU copy": copy_path(source, digest)}
    sessions = {name: session(path, args.threads) for name, path in files.items()}
    feeds = {"input": np.random.default_rng(0).random((1, 3, 1024, 1024), dtype=np.float32)}
    times: dict[str, list[float]] = {name: [] for name in files}
    cpu: dict[str, list[float]] = {name: [] for name in files}
    for round_index in range(args.runs + 1):
        for name, loaded in sessions.items():
            began, began_cpu = time.perf_counter(), time.process_time()
            loaded.run(None, feeds)
            if round_index:  # round 0 warms every session up
                times[name].append(time.perf_counter() - began)
                cpu[name].append(time.process_time() - began_cpu)
    del sessions
    nodes = {name: optimised_nodes(path, args.threads) for name, path in files.items()}
    base, base_cpu = statistics.median(times["fp32 twin"]), statistics.median(cpu["fp32 twin"])
    print(f"python {sys.executable}, onnxruntime {ort.__version__}, numpy {np.__version__}")
    print(f"threads {args.threads}, load average {os.getloadavg()[0]:.2f}, {args.runs} interleaved runs each")
    largest = record.checks[0]["max_abs_diff"]
    print(f"copy derived and checked in {derive_seconds:.1f} s: {record.removed_casts} Casts removed, "
          f"{record.restored_constants} GELU constants restored, max |copy - fp16| {largest:.2e}")  # fmt: skip
    fastest = min(times["fp32 twin"])
    print("wall and CPU: medians; 'best' = the fastest run of each, the least disturbed by other work")
    print(f"{'file':16} {'wall s':>8} {'÷ fp32':>7} {'CPU s':>8} {'÷ fp32':>7} {'best ÷':>7} {'nodes':>6} {'Cast':>5} "
          f"{'Gelu':>5}")  # fmt: skip
    rows = {}
    for name in files:
        median, median_cpu = statistics.median(times[name]), statistics.median(cpu[name])
        operators = nodes[name]
        best = min(times[name]) / fastest
        rows[name] = {"seconds": times[name], "cpu_seconds": cpu[name], "median": median, "ratio": median / base,
                      "cpu_ratio": median_cpu / base_cpu, "best_ratio": best, "nodes": len(operators)}  # fmt: skip
        print(f"{name:16} {median:8.2f} {median / base:7.3f} {median_cpu:8.2f} {median_cpu / base_cpu:7.3f} "
              f"{best:7.3f} {len(operators):6d} {operators.count('Cast'):5d} {operators.count('Gelu'):5d}")  # fmt: skip
    twin = [operator for operator in nodes["fp32 twin"] if operator != "Cast"]  # the twin's own output .half()
    same = twin == [operator for operator in nodes["fp32 CPU copy"] if operator != "Cast"]
    print(f"copy's optimised graph = the twin's, operator for operator (the twin's output Cast aside): {same}")
    ratio, ratio_cpu = rows["fp32 CPU copy"]["ratio"], rows["fp32 CPU copy"]["cpu_ratio"]
    verdict = "met" if min(ratio, ratio_cpu) <= GOAL else "NOT met"
    print(f"goal fp16 file on CPU within {GOAL}x of fp32: copy {ratio:.3f}x wall, {ratio_cpu:.3f}x CPU: {verdict}")
    speedup = rows["fp16 file"]["median"] / rows["fp32 CPU copy"]["median"]
    speedup_cpu = rows["fp16 file"]["cpu_ratio"] / rows["fp32 CPU copy"]["cpu_ratio"]
    print(f"what the copy saves a CPU user: fp16 file ÷ copy {speedup:.3f}x wall, {speedup_cpu:.3f}x CPU")
    payload = {"threads": args.threads, "load": os.getloadavg(), "derive_seconds": derive_seconds, "rows": rows,
               "same_graph": same, "python": sys.executable, "onnxruntime": ort.__version__,
               "fp16_over_copy": speedup}  # fmt: skip
    (RESULTS / "fp16_cpu.json").write_text(json.dumps(payload, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
