"""What a render farm costs per frame, per chunk and per worker, measured here (docs/farm.md's figures).

    uv run --locked --no-sync python bench/farm_scale.py [--frames 8] [--chunk 2] [--skip-setup]

Needs bench/models/ (bench/export_image_models.py: the BEN2-shaped network and Real-ESRGAN x4v3, random
weights) and, for the first-time set-up, tests/sync's server wheelhouse (.cache/server-wheelhouse). Every step is
the real command a farm task runs, in its own process:

- per job (720p remove-background, 320×180 → ×4 upscale): one `imageforge run` of the clip (the single-machine
  reference, warm server), the same clip as chunks (`imageforge run … --into DIR --frames A-B`, one process per
  chunk, the server warm as on a worker that runs one chunk after another) and `imageforge farm assemble`;
  seconds per frame, model seconds per frame (provenance), the per-chunk overhead, bytes each chunk reads and
  writes, the assemble step's seconds per frame;
- per worker: the first set-up (a fresh storage root: `imageforge setup --wheelhouse`, `imageforge models
  import` of the job's model, verified), then `imageforge farm setup-worker` cold (model files verified, first
  frame) and warm.

Results: bench/results/farm_scale.json and a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
MODELS = BENCH / "models"
RESULTS = BENCH / "results" / "farm"
sys.path.insert(0, str(ROOT))

CATALOG = {
    "BENCH_BEN2": ("background", "ben2", "ben2-shaped.onnx", {"normalization": "imagenet"}),
    "BENCH_X4V3": ("upscale", "upscale", "realesr-general-x4v3.onnx", {"scale": 4, "tile_bytes_per_pixel": 1536}),
}
JOBS = {
    "remove-background 1280×720": ("remove-background", "BENCH_BEN2", (1280, 720), []),
    "upscale ×4 320×180": ("upscale-image", "BENCH_X4V3", (320, 180), ["scale=4"]),
}


def catalog(folder: Path) -> Path:
    import hashlib

    entries = []
    for key, (family, adapter, file, options) in CATALOG.items():
        data = (MODELS / file).read_bytes()
        entries.append({
            "key": key, "family": family, "adapter": adapter, "label": key, "license": "MIT",
            "repository": f"bench/{key.lower()}", "directory": key.lower(), "default": False,
            "files": [{"path": file, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}], **options,
        })  # fmt: skip
    path = folder / "catalog.json"
    path.write_text(json.dumps({"models": entries}, indent=1), encoding="utf-8")
    return path


def place_models(root: Path) -> None:
    for key, (_family, _adapter, file, _options) in CATALOG.items():
        target = root / "models" / key.lower() / file
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            shutil.copyfile(MODELS / file, target)


def clip(path: Path, size: tuple[int, int], frames: int) -> Path:
    """A photo-like H.264 clip (smooth fields, an edge that moves, fine noise) with AAC silence, 25 fps."""
    import av
    import numpy as np
    from tests.server.media.makers import _silence

    if path.exists():
        return path
    width, height = size
    rng = np.random.default_rng(26)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=25, options={"crf": "18"})
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        audio = container.add_stream("aac", rate=48000)
        container.start_encoding()
        for index in range(frames):
            edge = (x > width * (0.3 + 0.02 * index)).astype(np.float32)
            base = np.stack([x / width, y / height, 0.5 + 0.3 * edge], axis=2)
            values = np.clip(base * 255 + rng.normal(0, 6, (height, width, 3)), 0, 255).astype(np.uint8)
            frame = av.VideoFrame.from_ndarray(values, format="rgb24")
            frame.pts, frame.time_base = index, Fraction(1, 25)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
        _silence(container, audio, seconds=Fraction(frames, 25))
    return path


def imageforge(env: dict[str, str], *args: str) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "imageforge.cli.main", *args], capture_output=True, text=True,
                          env=env, timeout=7200)  # fmt: skip
    elapsed = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"imageforge {' '.join(args)} failed: {done.stderr[-2000:]}")
    return elapsed, done


def model_seconds(result_json: str) -> float:
    provenance = Path(json.loads(result_json)["provenance"])
    return sum(model["model_seconds"] for model in json.loads(provenance.read_text())["models"])


def folder_bytes(folder: Path, names: set[str] | None = None) -> int:
    return sum(path.stat().st_size for path in folder.iterdir() if names is None or path.name in names)


def measure_job(env: dict[str, str], label: str, frames: int, chunk: int) -> dict[str, object]:
    job, model, size, settings = JOBS[label]
    source = clip(RESULTS / f"clip-{size[0]}x{size[1]}-{frames}.mp4", size, frames)
    words = [job, f"input={source}", f"model={model}", *settings]
    imageforge(env, "run", *words, "--output", str(RESULTS / "warm-up"))  # loads the session: the rest is warm
    single, done = imageforge(env, "run", *words, "--output", str(RESULTS / f"single-{job}"))
    model_time = model_seconds(done.stdout)
    into = RESULTS / f"frames-{job}"
    shutil.rmtree(into, ignore_errors=True)
    chunks = []
    for first in range(1, frames + 1, chunk):
        last = min(first + chunk - 1, frames)
        before = set(path.name for path in into.glob("*.png")) if into.exists() else set()
        seconds, _ = imageforge(env, "run", *words, "--into", str(into), "--frames", f"{first}-{last}")
        written = {path.name for path in into.glob("*.png")} - before
        chunks.append({"frames": f"{first}-{last}", "seconds": seconds, "bytes_written": folder_bytes(into, written)})
    assembled, _ = imageforge(env, "farm", "assemble", *words, "--into", str(into), "--output",
                              str(RESULTS / f"assembled-{job}"))  # fmt: skip
    shutil.rmtree(RESULTS / f"assembled-{job}", ignore_errors=True)
    rerun, _ = imageforge(env, "run", *words, "--into", str(into), "--frames", f"1-{chunk}")  # every frame there
    chunk_seconds = sum(item["seconds"] for item in chunks)
    per_frame_chunked = chunk_seconds / frames
    return {
        "job": label,
        "frames": frames,
        "chunk_size": chunk,
        "single_run_seconds": round(single, 2),
        "single_seconds_per_frame": round(single / frames, 3),
        "model_seconds_per_frame": round(model_time / frames, 3),
        "chunked_seconds_per_frame": round(per_frame_chunked, 3),
        "overhead_per_chunk_seconds": round((chunk_seconds - single) / len(chunks), 2),
        "assemble_seconds": round(assembled, 2),
        "assemble_seconds_per_frame": round(assembled / frames, 3),
        "complete_chunk_rerun_seconds": round(rerun, 2),
        "input_bytes": source.stat().st_size,
        "bytes_written_per_frame": round(sum(item["bytes_written"] for item in chunks) / frames),
        "chunks": chunks,
    }


def measure_setup(env: dict[str, str], label: str) -> dict[str, object]:
    """A worker's first set-up in a fresh storage root, then `farm setup-worker` cold and warm."""
    job, model, size, settings = JOBS[label]
    root = RESULTS / "worker-root"
    shutil.rmtree(root, ignore_errors=True)
    fresh = {**env, "IMAGEFORGE_STORAGE_ROOT": str(root)}
    wheelhouse = ROOT / ".cache" / "server-wheelhouse"
    environment, _ = imageforge(fresh, "setup", "--wheelhouse", str(wheelhouse))
    shared = RESULTS / "studio-models"
    if not shared.exists():  # the studio's shared folder, as `imageforge models export` writes it
        place_models(shared)
    started = time.perf_counter()
    imported, _ = imageforge(fresh, "models", "import", str(shared / "models"))
    del started
    source = clip(RESULTS / f"clip-{size[0]}x{size[1]}-8.mp4", size, 8)
    words = [job, f"input={source}", f"model={model}", *settings]
    cold, _ = imageforge(fresh, "farm", "setup-worker", *words)
    warm, _ = imageforge(fresh, "farm", "setup-worker", *words)
    return {
        "job": label,
        "environment_seconds": round(environment, 1),
        "model_import_seconds": round(imported, 1),
        "model_bytes": (MODELS / CATALOG[model][2]).stat().st_size,
        "setup_worker_cold_seconds": round(cold, 1),
        "setup_worker_warm_seconds": round(warm, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=8)
    parser.add_argument("--chunk", type=int, default=2)
    parser.add_argument("--skip-setup", action="store_true")
    parser.add_argument("--only", default="", help="run the jobs whose label contains this")
    args = parser.parse_args()
    missing = [file for _f, _a, file, _o in CATALOG.values() if not (MODELS / file).is_file()]
    if missing:
        raise SystemExit(f"bench/models lacks {', '.join(missing)}: run bench/export_image_models.py first")
    RESULTS.mkdir(parents=True, exist_ok=True)
    from tests.kit.server_env import install_server_environment

    root = install_server_environment(RESULTS / "storage")
    place_models(root)
    env = {**os.environ, "IMAGEFORGE_STORAGE_ROOT": str(root), "IMAGEFORGE_MODEL_CATALOG": str(catalog(RESULTS)),
           "IMAGEFORGE_SERVER_LINGER": "60"}  # fmt: skip
    report: dict[str, object] = {"jobs": [], "setup": []}
    for label in JOBS:
        if args.only in label:
            row = measure_job(env, label, args.frames, args.chunk)
            report["jobs"].append(row)  # type: ignore[attr-defined]
            print(json.dumps({key: value for key, value in row.items() if key != "chunks"}), flush=True)
    if not args.skip_setup:
        row = measure_setup(env, next(label for label in JOBS if args.only in label))
        report["setup"].append(row)  # type: ignore[attr-defined]
        print(json.dumps(row), flush=True)
    (RESULTS / "farm_scale.json").write_text(json.dumps(report, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
