"""Peak memory of every image job at the 16384² pixel limit, each job in its own guarded child process.

    .venv/bin/python bench/memory_at_limit.py                 # every job, one at a time
    .venv/bin/python bench/memory_at_limit.py --only depth    # the jobs whose name contains "depth"
    .venv/bin/python bench/memory_at_limit.py --only remove-background   # a whole case name: that case alone
    .venv/bin/python bench/memory_at_limit.py --cap-gib 6     # kill a child above 6 GiB ("over budget")
    .venv/bin/python bench/memory_at_limit.py --only remove-background --model-file /tmp/birefnet-shaped/x.onnx

The jobs run exactly as the server runs them (real handler, BlendJob JobContext, the server's resources) on
the kit's tiny ONNX models (tests/kit/onnx_models.py), with their default parameters, on a 16384 × 16384
RGB PNG: the model's own activations are negligible, so the peak is what the pipeline itself holds (decode,
resampling, mattes, maps, writers), which is what grows with the input. Each child is watched through
/proc/<pid>/status every 20 ms and killed above the cap (this machine is shared: a job that would need
24 GB is reported "over budget", not allowed to find out); a child that finishes reports its exact peak
(ru_maxrss from wait4). Results: bench/results/memory_at_limit.json and a table on stdout.

`--model-file` runs the background-family jobs that take a `model` (remove-background, refine-image-selection) on
that ONNX file instead of the kit's tiny BEN2 (a catalog entry BENCH_MODEL, `--adapter` birefnet or ben2, ImageNet
normalisation, the published files' last operation), so the peak adds that network's own activations at its
input size: the figure a user of that model sees. Its rows are named "<case> [<file name>]".
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results" / "memory"
SIZE = 16384
BOX = [4096.0, 4096.0, 12288.0, 12288.0]  # half the image's side, in its middle
MODEL_KEY = "BENCH_MODEL"  # --model-file's catalog entry
MODEL_JOBS = ("remove-background", "refine-image-selection")  # background jobs whose parameter `model` picks it
ADAPTER_OPTIONS = {
    "birefnet": {"normalization": "imagenet", "final_activation": "none"},
    "ben2": {"normalization": "imagenet"},
}

CASES: dict[str, tuple[str, dict]] = {
    "remove-background": ("remove-background", {}),
    "remove-background alpha": ("remove-background", {"output_kind": "alpha"}),
    "refine-image-selection": ("refine-image-selection", {"selection": {"box": BOX}}),
    "upscale-image": ("upscale-image", {}),
    "generate-depth-plane-geometry": ("generate-depth-plane-geometry", {}),
    "generate-cutout-artifacts flat": ("generate-cutout-artifacts", {"selection": {"box": BOX}}),
    "generate-cutout-artifacts refine+depth+normal": (
        "generate-cutout-artifacts",
        {"selection": {"box": BOX}, "refine": True, "generate_depth": True, "normal_mode": "object"},
    ),
    "inpaint-image": ("inpaint-image", {"selection": {"box": BOX}}),
    "generate-multiview-cameras 2 frames": ("generate-multiview-cameras", {"input": "frames"}),
    "debug-ben2 (refused above 4096²)": ("debug-ben2", {}),
}


# ---------------------------------------------------------------------------------------------- set-up


def storage_and_catalog(model_file: Path | None = None, model_adapter: str = "birefnet") -> tuple[Path, Path]:
    """The kit models in a storage root (as downloads land) and a catalog naming them as family defaults, plus
    BENCH_MODEL (not a default) linking `model_file` where one is given."""
    sys.path.insert(0, str(ROOT))
    from tests.kit.catalog import KIT_MODELS

    root = RESULTS / "storage"
    entries = []
    for key, (family, adapter, build, options) in KIT_MODELS.items():
        path = root / "models" / key.lower() / "model.onnx"
        if not path.exists():
            build(path)
        entries.append(
            {
                "key": key, "family": family, "adapter": adapter, "label": key, "license": "MIT",
                "repository": f"kit/{key.lower()}", "directory": key.lower(), "default": True,
                "files": [{"path": "model.onnx"}], **options,
            }
        )  # fmt: skip
    if model_file is not None:
        directory = f"{MODEL_KEY.lower()}-{model_file.stem}"  # one per file: storage remembers what it verified
        link = root / "models" / directory / "model.onnx"
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(model_file.resolve())
        entries.append(
            {
                "key": MODEL_KEY, "family": "background", "adapter": model_adapter, "label": model_file.name,
                "license": "MIT", "repository": "bench/model", "directory": directory, "default": False,
                "files": [{"path": "model.onnx"}], **ADAPTER_OPTIONS[model_adapter],
            }
        )  # fmt: skip
    catalog = RESULTS / "catalog.json"
    catalog.write_text(json.dumps({"models": entries}, indent=1), encoding="utf-8")
    return root, catalog


def photo() -> Path:
    """A 16384² RGB PNG (smooth colour, a disc, noise), written band by band so the parent stays small."""
    path = RESULTS / f"photo-{SIZE}.png"
    if path.exists():
        return path
    from imageforge.server.media.png_stream import PngStreamWriter

    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SIZE)
    x = np.linspace(0.0, 1.0, SIZE, dtype=np.float32)
    band = 512
    with PngStreamWriter(path, SIZE, SIZE, channels=3, bits=8) as png:
        for top in range(0, SIZE, band):
            y = np.linspace(top / SIZE, (top + band) / SIZE, band, endpoint=False, dtype=np.float32)[:, None]
            disc = (np.hypot(x[None, :] - 0.5, y - 0.5) < 0.3).astype(np.float32)
            rows = np.stack([x[None, :] * np.ones_like(y), y * np.ones_like(x[None, :]), 0.2 + 0.6 * disc], axis=2)
            rows += rng.normal(0.0, 0.02, rows.shape).astype(np.float32)
            png.write(np.clip(rows, 0.0, 1.0))
    return path


# ---------------------------------------------------------------------------------------------- child


def child(case: str, root: Path, image: Path, model: str | None = None) -> None:
    """Run one job through the real handler on the server's resources; print its outcome as JSON."""
    from blendjob.server import JobContext

    from imageforge.contract import JOB_SPECS, ImageForgeError, JobId
    from imageforge.server.app import create_server
    from imageforge.server.handler import make_handler
    from imageforge.server.jobs import JOB_RUNNERS

    job, extra = CASES[case]
    spec = JOB_SPECS[JobId(job)]
    parameters = {"input": str(image), **extra}
    if model:
        parameters["model"] = model
    if extra.get("input") == "frames":  # a sequence of two 16384² frames (links to the same photo)
        frames = root / "frames"
        frames.mkdir(exist_ok=True)
        for number in (1, 2):
            link = frames / f"frame_{number:04d}.png"
            if not link.exists():
                link.symlink_to(image)
        parameters["input"] = str(frames)
    server = create_server()
    server.bind(root)
    directory = root / "jobs" / "".join(c if c.isalnum() or c == "-" else "_" for c in case)
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.iterdir():
        old.unlink()
    context = JobContext(directory.name, job, parameters, server.resources, root, directory)
    started = time.perf_counter()
    try:
        result = make_handler(spec, JOB_RUNNERS[spec.id])(context, parameters)
        outcome = {"ok": True, "result": result}
    except ImageForgeError as error:
        outcome = {"ok": False, "error": str(error)}
    outcome["seconds"] = round(time.perf_counter() - started, 2)
    server.close()
    print(json.dumps(outcome))


# ---------------------------------------------------------------------------------------------- parent


def rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def measure(case: str, cap: int, root: Path, catalog: Path, image: Path, model: str | None = None) -> dict:
    environment = {**os.environ, "IMAGEFORGE_MODEL_CATALOG": str(catalog), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, __file__, "--child", case, "--root", str(root), "--image", str(image)]
    if model:
        command += ["--model", model]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment, text=True)
    polled, killed = 0, False
    while process.poll() is None:
        polled = max(polled, rss_bytes(process.pid))
        if polled > cap:
            os.kill(process.pid, signal.SIGKILL)
            killed = True
            break
        time.sleep(0.02)
    _pid, status, usage = os.wait4(process.pid, 0) if process.returncode is None else (0, 0, None)
    stdout, stderr = process.communicate()
    peak = max(polled, usage.ru_maxrss * 1024 if usage is not None else 0)
    row = {"case": case, "peak_bytes": peak, "over_budget": killed}
    if killed:
        row["outcome"] = f"over budget: killed above {cap / 2**30:.1f} GiB"
        return row
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if not lines:
        row["outcome"] = f"crashed (status {status}): {stderr.strip().splitlines()[-1:]}"
        return row
    outcome = json.loads(lines[-1])
    row["seconds"] = outcome["seconds"]
    row["outcome"] = "ok" if outcome["ok"] else f"refused: {outcome['error']}"
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated parts of case names")
    parser.add_argument("--cap-gib", type=float, default=8.0, help="kill a child above this RSS")
    parser.add_argument("--model-file", type=Path, help="run remove-background/refine on this ONNX file")
    parser.add_argument("--adapter", choices=sorted(ADAPTER_OPTIONS), default="birefnet", help="--model-file's")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    parser.add_argument("--image", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, Path(args.root), Path(args.image), args.model)
        return
    if args.model_file is not None and not args.model_file.is_file():
        parser.error(f"--model-file {args.model_file} is not a file.")
    root, catalog = storage_and_catalog(args.model_file, args.adapter)
    image = photo()
    parts = [part for part in args.only.split(",") if part]
    exact = [part for part in parts if part in CASES]  # a part that names a case selects that case alone
    cases = exact or [case for case in CASES if not parts or any(part in case for part in parts)]
    model = MODEL_KEY if args.model_file is not None else None
    if model:
        cases = [case for case in cases if CASES[case][0] in MODEL_JOBS]
    cap = int(args.cap_gib * 2**30)
    rows = []
    print(f"{'case':<48} {'peak RSS':>10}  {'s':>7}  outcome", flush=True)
    for case in cases:
        row = measure(case, cap, root, catalog, image, model)
        if model:
            row["case"] = case = f"{case} [{args.model_file.name}]"
        rows.append(row)
        seconds = f"{row['seconds']:7.1f}" if "seconds" in row else "      –"
        print(f"{case:<48} {row['peak_bytes'] / 2**20:>7.0f} MiB  {seconds}  {row['outcome']}", flush=True)
    out = RESULTS / "memory_at_limit.json"
    previous = json.loads(out.read_text()) if out.exists() else {}
    previous.update({row["case"]: row for row in rows})
    out.write_text(json.dumps(previous, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
