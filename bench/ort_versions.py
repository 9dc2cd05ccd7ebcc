"""Two ONNX Runtime releases side by side on the bench models, CPU provider, the server's thread count.

    uv run --locked --no-sync python bench/ort_versions.py --old /path/to/old/venv/bin/python [--new PYTHON] [--runs 3]

`--new` defaults to the server environment built from today's pins (tests/kit/server_env.py); `--old` is any
other environment with onnxruntime and numpy (e.g. a venv with the previous pins). Each model runs in a child
process of each Python in turn, interleaved round by round so machine load hits both alike: one warm-up run,
then `--runs` timed runs; printed per model: median seconds per run and CPU seconds for each release, new ÷ old,
and the outputs' agreement: the largest absolute difference between the two releases' outputs on the same
seeded input, over every output, and that difference ÷ the old output's range. Models: bench/models/
(bench/export_image_models.py): BEN2-shaped fp32 at 1024², its fp16 file and the server's fp32 CPU copy of it
when bench/fp16_cpu.py left one in bench/results/, x4v3 and x4plus at 256²; MoGe-2 ViT-S-shaped at 518² with
1,800 tokens when bench/export_moge_vits.py made it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CASES = {  # name -> (file, input side)
    "BEN2-shaped fp32": ("models/ben2-shaped.onnx", 1024),
    "BEN2-shaped fp16 file": ("models/ben2-shaped-fp16.onnx", 1024),
    "BEN2-shaped fp32 CPU copy": ("results/ben2-shaped-fp16.cpu-fp32-*.onnx", 1024),
    "x4v3 (SRVGG)": ("models/realesr-general-x4v3.onnx", 256),
    "x4plus (RRDBNet)": ("models/realesrgan-x4plus.onnx", 256),
    "MoGe-2 ViT-S-shaped": ("models/moge2-vits-random.onnx", 518),
}
TOKENS = 1800  # MoGe-2's num_tokens input (the other inputs are images)

CHILD = Path(__file__).with_name("ort_timed_run.py")  # run with each environment's python


def measure(python: str, path: Path, side: int, threads: int, runs: int, outputs: Path) -> dict[str, object]:
    """One child process: warm-up run (its outputs saved to `outputs`, an .npz), then `runs` timed runs."""
    arguments = [str(path), str(side), str(threads), str(runs), str(outputs), str(TOKENS)]
    completed = subprocess.run([python, str(CHILD), *arguments], capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def agreement(old: Path, new: Path) -> tuple[float, float]:
    """(largest absolute difference over every output, that ÷ the old output's range) of two runs' outputs."""
    with np.load(old) as before, np.load(new) as after:
        assert before.files == after.files, "the releases give different outputs"
        worst, relative = 0.0, 0.0
        for key in before.files:
            reference, candidate = before[key].astype(np.float64), after[key].astype(np.float64)
            assert reference.shape == candidate.shape, f"output {key}: {reference.shape} vs {candidate.shape}"
            difference = float(np.max(np.abs(candidate - reference))) if reference.size else 0.0
            span = float(np.ptp(reference)) if reference.size else 0.0
            worst, relative = max(worst, difference), max(relative, difference / span if span > 0 else difference)
        return worst, relative


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="Python of the environment with the previous release")
    parser.add_argument("--new", help="Python of the candidate environment (default: the shipped server env)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1, help="child processes per release and model")
    parser.add_argument("--threads", type=int, default=1, help="the server's default on this 2-core machine")
    parser.add_argument("--only", default="", help="comma-separated parts of case names")
    args = parser.parse_args()
    new = args.new
    if new is None:
        sys.path.insert(0, str(HERE.parent))
        from tests.kit.server_env import cached_environment

        new = str(cached_environment() / ".venv" / "bin" / "python")
    rows = {}
    scratch = Path(tempfile.mkdtemp(prefix="ort-versions-"))
    for name, (pattern, side) in CASES.items():
        if args.only and not any(part in name for part in args.only.split(",")):
            continue
        found = sorted(HERE.glob(pattern))
        if not found:
            print(f"{name}: {pattern} missing, skipped")
            continue
        samples: dict[str, dict[str, list[float]]] = {"old": {"wall": [], "cpu": []}, "new": {"wall": [], "cpu": []}}
        versions = {}
        for _ in range(args.rounds):
            for label, python in (("old", args.old), ("new", new)):
                result = measure(python, found[-1], side, args.threads, args.runs, scratch / f"{label}.npz")
                versions[label] = result["version"]
                for key in ("wall", "cpu"):
                    values = result[key]
                    assert isinstance(values, list)
                    samples[label][key] += values
        medians = {label: {key: statistics.median(v) for key, v in data.items()} for label, data in samples.items()}
        max_abs_diff, of_range = agreement(scratch / "old.npz", scratch / "new.npz")
        rows[name] = {"versions": versions, "medians": medians, "samples": samples, "max_abs_diff": max_abs_diff,
                      "max_abs_diff_of_range": of_range}  # fmt: skip
        print(f"{name:28} {versions['old']} {medians['old']['wall']:7.2f} s (CPU {medians['old']['cpu']:6.2f})  "
              f"{versions['new']} {medians['new']['wall']:7.2f} s (CPU {medians['new']['cpu']:6.2f})  "
              f"new/old wall {medians['new']['wall'] / medians['old']['wall']:.3f}, "
              f"CPU {medians['new']['cpu'] / medians['old']['cpu']:.3f}, "
              f"max |new-old| {max_abs_diff:.3g} ({of_range:.2g} of range)", flush=True)  # fmt: skip
    (HERE / "results").mkdir(exist_ok=True)
    payload = {"threads": args.threads, "load": os.getloadavg(), "rows": rows}
    (HERE / "results" / "ort_versions.json").write_text(json.dumps(payload, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
