"""Benchmark of the image jobs on architecture-faithful models (bench/export_image_models.py), CPU only.

    bash bench/run_image_jobs.sh            # everything, figures side by side, JSON in bench/results/
    BENCH_SKIP_HUGE=1 bash bench/run_image_jobs.sh   # without the 4096² → 16384² upscale (~10 min alone)

Every case runs in its own child process, so its peak RSS (from wait4) is its own. A job case runs the job
exactly as the server does (real handler, BlendJob JobContext, the server's resources, catalog and storage
root) twice on one warm server and times the second run, as an artist's second click would be; the first
(cold) run's time is reported too. A "pure" case runs the same ONNX file alone with the same thread count,
on the same input shapes the job fed it, after one untimed warm-up run. Figures:

- overhead = job total / pure model time (everything the pipeline adds: decode, resize, tiles, blending,
  encode, progress); the goal is ≤ 1.10 on CPU.
- tiling work = the pure time of all tiles / one run on the whole image (where the whole image fits in
  memory); `work×` is the pixels the model processed per source pixel.
- rembg = rembg 2.0.86's `ben_custom` session on the same ONNX file (throwaway venv, same ORT version and
  threads), total time of decode + remove + PNG encode, warm.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"
MODELS = BENCH / "models"
REMBG_PYTHON = ROOT / ".venv-bench-rembg" / "bin" / "python"

CATALOG = {
    "BENCH_BEN2": ("background", "ben2", "ben2-shaped.onnx", {"normalization": "imagenet"}),
    "BENCH_X4V3": ("upscale", "upscale", "realesr-general-x4v3.onnx", {"scale": 4, "tile_bytes_per_pixel": 1536}),
    "BENCH_X4PLUS": ("upscale", "upscale", "realesrgan-x4plus.onnx", {"scale": 4}),
}


# ---------------------------------------------------------------------------------------------- set-up


def storage_root() -> Path:
    """A storage root whose models folder links the exported files, and a catalog naming them."""
    root = RESULTS / "storage"
    for key, (_family, _adapter, file, _options) in CATALOG.items():
        target = root / "models" / key.lower() / file
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            target.symlink_to(MODELS / file)
    entries = [
        {
            "key": key, "family": family, "adapter": adapter, "label": key, "license": "MIT",
            "repository": f"bench/{key.lower()}", "directory": key.lower(), "default": False,
            "files": [{"path": file}], **options,
        }
        for key, (family, adapter, file, options) in CATALOG.items()
    ]  # fmt: skip
    (RESULTS / "catalog.json").write_text(json.dumps({"models": entries}, indent=1), encoding="utf-8")
    return root


def photo(size: int, width: int | None = None) -> Path:
    """A deterministic photo-like PNG: smooth colour fields, edges and fine noise (compresses like a photo)."""
    width = width or size
    path = RESULTS / "inputs" / f"photo-{width}x{size}.png"
    if path.exists():
        return path
    from PIL import Image, ImageFilter

    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(size)
    coarse = Image.fromarray(rng.integers(0, 256, (size // 64 + 2, width // 64 + 2, 3), dtype=np.uint8))
    base = np.asarray(coarse.resize((width, size), Image.Resampling.BICUBIC), dtype=np.int16)
    disc = np.hypot(*np.meshgrid(np.arange(width) - width / 2, np.arange(size) - size / 2)) < size / 3
    base[disc] = 255 - base[disc]  # a subject with a hard edge
    noisy = np.clip(base + rng.normal(0, 6, base.shape), 0, 255).astype(np.uint8)
    Image.fromarray(noisy).filter(ImageFilter.SMOOTH).save(path)
    return path


def clip(width: int, height: int, frames: int, rate: int = 24) -> Path:
    """An H.264 clip of `frames` frames of a moving photo, with an AAC audio track (copied by the jobs)."""
    import av

    path = RESULTS / "inputs" / f"clip-{width}x{height}-{frames}.mp4"
    if path.exists():
        return path
    from PIL import Image

    still = np.asarray(Image.open(photo(height * 2, width * 2)))
    with av.open(str(path), "w") as container:
        video = container.add_stream("libx264", rate=rate, options={"crf": "18"})
        video.width, video.height, video.pix_fmt = width, height, "yuv420p"
        audio = container.add_stream("aac", rate=48000)
        for index in range(frames):
            view = still[index * 4 : index * 4 + height, index * 6 : index * 6 + width]
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(view), format="rgb24")
            frame.pts = index
            for packet in video.encode(frame):
                container.mux(packet)
        for packet in video.encode(None):
            container.mux(packet)
        samples = 1024
        for start in range(0, 48000 * frames // rate, samples):
            sound = av.AudioFrame(format=audio.format.name, layout=audio.layout.name, samples=samples)
            for plane in sound.planes:
                plane.update(bytes(plane.buffer_size))
            sound.sample_rate, sound.pts = 48000, start
            for packet in audio.encode(sound):
                container.mux(packet)
        for packet in audio.encode(None):
            container.mux(packet)
    return path


# ---------------------------------------------------------------------------------------------- children


def child(arguments: list[str], python: str = sys.executable) -> tuple[dict, float]:
    """Run one case in a child process; returns (its JSON output, its peak RSS in MiB)."""
    environment = {**os.environ, "IMAGEFORGE_MODEL_CATALOG": str(RESULTS / "catalog.json"), "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([python, *arguments], stdout=subprocess.PIPE, env=environment, cwd=ROOT)
    _, status, usage = os.wait4(process.pid, 0)
    output = process.stdout.read().decode()
    process.stdout.close()
    if status != 0:
        raise RuntimeError(f"case {arguments} failed with status {status}: {output[-2000:]}")
    return json.loads(output.strip().splitlines()[-1]), usage.ru_maxrss / 1024


def run_job_case(job: str, parameters: dict, repeat: int) -> None:
    """Child: run `job` `repeat` times on one warm server; print timings of the first and last run."""
    from blendjob.server import JobContext

    from imageforge.contract import JOB_SPECS, JobId
    from imageforge.server.app import create_server
    from imageforge.server.handler import make_handler
    from imageforge.server.jobs import JOB_RUNNERS

    storage = RESULTS / "storage"
    server = create_server()
    server.bind(storage)
    spec = JOB_SPECS[JobId(job)]
    handler = make_handler(spec, JOB_RUNNERS[spec.id])
    times, logs = [], []
    for attempt in range(repeat):
        directory = storage / "jobs" / f"{job}-{os.getpid()}-{attempt}"
        directory.mkdir(parents=True)
        context = JobContext(directory.name, job, parameters, server.resources, storage, directory)
        started = time.perf_counter()
        handler(context, parameters)
        times.append(time.perf_counter() - started)
        logs.append((directory / "job.log").read_text(encoding="utf-8"))
    model = re.search(r"model ([\d.]+) s of", logs[-1])
    tiles = re.search(r"(\d+) tile\(s\) of (\d+)px.*work ×([\d.]+)", logs[-1])
    provider = re.search(r"on (\w+ExecutionProvider)", logs[-1])
    print(
        json.dumps(
            {
                "cold_s": times[0],
                "total_s": times[-1],
                "model_in_job_s": float(model.group(1)) if model else None,
                "tiles": int(tiles.group(1)) if tiles else None,
                "tile": int(tiles.group(2)) if tiles else None,
                "work_ratio": float(tiles.group(3)) if tiles else None,
                "provider": provider.group(1) if provider else None,
                "threads": server.resources["models"].threads,
            }
        )
    )
    server.close()


def run_pure_case(model: str, shapes: list[list[int]], threads: int) -> None:
    """Child: the ONNX file alone: one untimed warm-up per shape, then every shape once, timed."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(str(MODELS / model), options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    feeds = [np.random.default_rng(0).random(shape, dtype=np.float32) for shape in shapes]
    for shape in {tuple(shape) for shape in shapes}:
        session.run(None, {name: np.zeros(shape, np.float32)})
    started = time.perf_counter()
    for feed in feeds:
        session.run(None, {name: feed})
    print(json.dumps({"pure_s": time.perf_counter() - started, "runs": len(feeds)}))


# ---------------------------------------------------------------------------------------------- driver


def upscale_shapes(width: int, height: int, core: int, frames: int = 1) -> list[list[int]]:
    """The input shape of every run the job made: the upscaler's tiles (cores of `core` px with context)."""
    from imageforge.server.models.upscale import DEFAULT_BLEND, DEFAULT_MARGIN
    from imageforge.server.upscaling.tiling import plan_tiles

    grid = plan_tiles(height, width, core=core, margin=DEFAULT_MARGIN, blend=DEFAULT_BLEND)
    return [[1, 3, row.size, column.size] for row in grid.rows for column in grid.columns] * frames


def main() -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    storage_root()
    me = str(Path(__file__).resolve())
    rows = []

    only = os.environ.get("BENCH_ONLY", "")

    def job(name, label, job_id, parameters, *, repeat=2, pure=None, whole=None, rembg=None):
        if only and not any(part in name for part in only.split(",")):
            return
        print(f"… {name}", file=sys.stderr, flush=True)
        measured, rss = child([me, "job", job_id, json.dumps(parameters), str(repeat)])
        row = {"case": name, "job": label, **measured, "peak_rss_mib": round(rss)}
        if pure is not None:
            model, shapes = pure(measured)
            pure_out, _ = child([me, "pure", model, json.dumps(shapes), str(measured["threads"])])
            row["pure_s"] = pure_out["pure_s"]
            row["overhead"] = measured["total_s"] / pure_out["pure_s"]
        if whole is not None:
            model, shape = whole
            whole_out, _ = child([me, "pure", model, json.dumps([shape]), str(measured["threads"])])
            row["whole_image_s"] = whole_out["pure_s"]
            row["tiling_work"] = row["pure_s"] / whole_out["pure_s"]
        if rembg is not None and REMBG_PYTHON.exists():
            image, model = rembg
            output = RESULTS / "rembg-output.png"
            theirs, their_rss = child(
                [str(BENCH / "rembg_case.py"), str(MODELS / model), str(image), str(output), str(measured["threads"])],
                python=str(REMBG_PYTHON),
            )
            row["rembg_s"] = theirs["total_s"]
            row["rembg_model_s"] = theirs["model_s"]
            row["rembg_peak_rss_mib"] = round(their_rss)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)

    ben2 = ("ben2-shaped.onnx", [[1, 3, 1024, 1024]])
    x4v3, x4plus = "realesr-general-x4v3.onnx", "realesrgan-x4plus.onnx"
    for size in (1024, 2048):
        image = photo(size)
        parameters = {"input": str(image), "model": "BENCH_BEN2"}
        job(f"remove-background {size}²", "remove-background", "remove-background", parameters,
            pure=lambda _m: ben2, rembg=(image, "ben2-shaped.onnx"))  # fmt: skip
        box = [size // 4, size // 4, 3 * size // 4, 3 * size // 4]
        job(f"refine-selection {size}²", "refine-image-selection", "refine-image-selection",
            {**parameters, "selection": {"box": box}}, pure=lambda _m: ben2)  # fmt: skip
    frames = 12
    video = clip(1920, 1080, frames)
    job(f"remove-background 1080p clip ({frames} frames)", "remove-background", "remove-background",
        {"input": str(video), "model": "BENCH_BEN2"}, repeat=1,
        pure=lambda _m: ("ben2-shaped.onnx", [[1, 3, 1024, 1024]] * frames))  # fmt: skip

    for size in (1024, 2048):
        parameters = {"input": str(photo(size)), "model": "BENCH_X4V3", "max_input_size": 4096}

        def tiles(measured, s=size):
            return x4v3, upscale_shapes(s, s, measured["tile"])

        job(f"upscale x4v3 {size}²", "upscale-image", "upscale-image", parameters,
            pure=tiles, whole=(x4v3, [1, 3, size, size]))  # fmt: skip
        job(f"upscale x4v3 {size}² scale 2", "upscale-image", "upscale-image", {**parameters, "scale": 2},
            pure=tiles)  # fmt: skip
    tile_case = {"input": str(photo(1024)), "model": "BENCH_X4V3", "tile_size": 256}
    job("upscale x4v3 1024² tile 256", "upscale-image", "upscale-image", tile_case,
        pure=lambda m: (x4v3, upscale_shapes(1024, 1024, m["tile"])), whole=(x4v3, [1, 3, 1024, 1024]))  # fmt: skip
    job("upscale x4plus 512²", "upscale-image", "upscale-image",
        {"input": str(photo(512)), "model": "BENCH_X4PLUS"}, repeat=1,
        pure=lambda m: (x4plus, upscale_shapes(512, 512, m["tile"])),
        whole=(x4plus, [1, 3, 512, 512]))  # fmt: skip
    low = clip(480, 270, frames)
    job(f"upscale x4v3 270p→1080p clip ({frames} frames)", "upscale-image", "upscale-image",
        {"input": str(low), "model": "BENCH_X4V3"}, repeat=1,
        pure=lambda m: (x4v3, upscale_shapes(480, 270, m["tile"], frames)))  # fmt: skip
    if not os.environ.get("BENCH_SKIP_HUGE"):
        job("upscale x4v3 4096² → 16384²", "upscale-image", "upscale-image",
            {"input": str(photo(4096)), "model": "BENCH_X4V3", "max_input_size": 4096}, repeat=1)  # fmt: skip

    name = "image_jobs-subset.json" if only else "image_jobs.json"
    (RESULTS / name).write_text(json.dumps(rows, indent=2), encoding="utf-8")
    print_table(rows)


def print_table(rows: list[dict]) -> None:
    def cell(row, key, fmt="{:.2f}"):
        value = row.get(key)
        return "–" if value is None else fmt.format(value)

    header = ["case", "job s", "cold s", "pure s", "overhead", "tiles", "work×", "tiling work", "peak RSS MiB",
              "rembg s", "rembg RSS MiB"]  # fmt: skip
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        values = [
            row["case"], cell(row, "total_s"), cell(row, "cold_s"), cell(row, "pure_s"),
            cell(row, "overhead", "{:.3f}"),
            cell(row, "tiles", "{}"), cell(row, "work_ratio", "{:.3f}"), cell(row, "tiling_work", "{:.3f}"),
            cell(row, "peak_rss_mib", "{}"), cell(row, "rembg_s"), cell(row, "rembg_peak_rss_mib", "{}"),
        ]  # fmt: skip
        print("| " + " | ".join(values) + " |")
    threads = {row.get("threads") for row in rows}
    providers = {row.get("provider") for row in rows}
    print(f"\nthreads per session: {sorted(threads)}; providers: {sorted(p for p in providers if p)}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "job":
        run_job_case(sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4]))
    elif len(sys.argv) > 1 and sys.argv[1] == "pure":
        run_pure_case(sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4]))
    else:
        main()
