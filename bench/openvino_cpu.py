"""OpenVINO's CPU device against ONNX Runtime's CPU provider on the bench models, side by side, one thread.

    uv run --locked --no-sync python bench/openvino_cpu.py [--openvino PYTHON] [--runs 3] [--rounds 1]

Three child processes per model and round, interleaved so machine load hits each alike: the OpenVINO server
environment's ONNX Runtime (onnxruntime-openvino) with OpenVINOExecutionProvider on its CPU device (the
provider options the server passes: device_type CPU, precision FP32, num_of_threads), the same runtime's
CPUExecutionProvider, and the shipped server environment's CPUExecutionProvider (what Automatic runs
without OpenVINO). Each: one warm-up run (its outputs kept), then `--runs` timed runs. Printed per model:
median seconds and CPU seconds, OpenVINO ÷ each CPU provider, and the outputs' largest difference from the
shipped CPU provider's ÷ its range. `--openvino` defaults to the test cache's OpenVINO server environment
(tests/kit/server_env.py). Models: bench/models/ (bench/export_image_models.py): BEN2-shaped at 1024²
(fp32, and the fp16 file OpenVINO loads for BEN2_BASE, whose CPU sessions load the fp32 CPU copy instead:
compare OpenVINO on it with the CPU provider on the fp32 row, bench/fp16_cpu.py), x4v3 and x4plus at 256²;
MoGe-2 ViT-S-shaped at 518² when bench/export_moge_vits.py made it.
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
    "BEN2-shaped fp16 file": ("models/ben2-shaped-fp16.onnx", 1024),  # BEN2_BASE's layout: OpenVINO loads it
    "x4v3 (SRVGG)": ("models/realesr-general-x4v3.onnx", 256),
    "x4plus (RRDBNet)": ("models/realesrgan-x4plus.onnx", 256),
    "MoGe-2 ViT-S-shaped": ("models/moge2-vits-random.onnx", 518),
}
TOKENS = 1800

CHILD = Path(__file__).with_name("ort_timed_run.py")  # run with each environment's python


def measure(python: str, provider: str, path: Path, side: int, threads: int, runs: int, out: Path) -> dict:
    arguments = [str(path), str(side), str(threads), str(runs), str(out), str(TOKENS), provider]
    completed = subprocess.run([python, str(CHILD), *arguments], capture_output=True, text=True, check=False)
    if completed.returncode:
        raise SystemExit(f"{provider} in {python} failed: {completed.stderr.strip().splitlines()[-1:]}")
    result: dict = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def of_range(reference: Path, candidate: Path) -> float:
    """The largest |candidate - reference| over every output ÷ that output's range in the reference."""
    worst = 0.0
    with np.load(reference) as before, np.load(candidate) as after:
        for key in before.files:
            old, new = before[key].astype(np.float64), after[key].astype(np.float64)
            span = float(np.ptp(old)) or 1.0
            worst = max(worst, float(np.max(np.abs(new - old))) / span)
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--openvino", help="Python of an environment with onnxruntime-openvino")
    parser.add_argument("--shipped", help="Python of the shipped server environment (default: the test cache's)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", default="", help="comma-separated parts of case names")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE.parent))
    from tests.kit.server_env import cached_environment

    openvino = args.openvino or str(cached_environment("openvino") / ".venv" / "bin" / "python")
    shipped = args.shipped or str(cached_environment() / ".venv" / "bin" / "python")
    arms = {
        "openvino": (openvino, "OpenVINOExecutionProvider"),
        "cpu-same": (openvino, "CPUExecutionProvider"),
        "cpu-shipped": (shipped, "CPUExecutionProvider"),
    }
    scratch = Path(tempfile.mkdtemp(prefix="openvino-cpu-"))
    rows = {}
    print(f"load average before: {os.getloadavg()}", flush=True)
    for name, (pattern, side) in CASES.items():
        if args.only and not any(part in name for part in args.only.split(",")):
            continue
        found = sorted(HERE.glob(pattern))
        if not found:
            print(f"{name}: {pattern} missing, skipped")
            continue
        samples: dict[str, dict[str, list[float]]] = {arm: {"wall": [], "cpu": []} for arm in arms}
        versions = {}
        for _ in range(args.rounds):
            for arm, (python, provider) in arms.items():
                result = measure(python, provider, found[-1], side, args.threads, args.runs, scratch / f"{arm}.npz")
                versions[arm] = result["version"]
                for key in ("wall", "cpu"):
                    samples[arm][key] += result[key]
        medians = {arm: {key: statistics.median(got) for key, got in data.items()} for arm, data in samples.items()}
        difference = of_range(scratch / "cpu-shipped.npz", scratch / "openvino.npz")
        rows[name] = {"versions": versions, "medians": medians, "samples": samples, "openvino_of_range": difference}
        ov, same, ship = medians["openvino"], medians["cpu-same"], medians["cpu-shipped"]
        print(f"{name:22} OpenVINO {ov['wall']:6.2f} s (CPU {ov['cpu']:6.2f})  "
              f"CPU EP {versions['cpu-same']} {same['wall']:6.2f} s  CPU EP {versions['cpu-shipped']} "
              f"{ship['wall']:6.2f} s  OpenVINO ÷ CPU EP same runtime: wall {ov['wall'] / same['wall']:.2f}, "
              f"CPU {ov['cpu'] / same['cpu']:.2f}; ÷ shipped: wall {ov['wall'] / ship['wall']:.2f}, "
              f"CPU {ov['cpu'] / ship['cpu']:.2f}; max |OpenVINO - shipped| {difference:.2g} of range",
              flush=True)  # fmt: skip
    (HERE / "results").mkdir(exist_ok=True)
    payload = {"threads": args.threads, "load_after": os.getloadavg(), "rows": rows}
    (HERE / "results" / "openvino_cpu.json").write_text(json.dumps(payload, indent=1), encoding="utf-8")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
