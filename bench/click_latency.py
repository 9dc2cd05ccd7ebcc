"""Click Select's latency on the real SAM 2.1 Tiny architecture (random weights), CPU, through a real job server.

    uv run --locked --no-sync python bench/click_latency.py [--clicks 40] [--size 1920x1080]

Set-up: the Tiny export is made once by the converter (src/imageforge/converter/sam2_export.py) in the torch
environment PARITY_PYTHON names (bench/parity/README.md), into bench/models/sam2-tiny/; the storage root gets the
test kit's server environment. Then, as the add-on does:

1. segment-image once through the job queue (server start, model load, the image's encoding, one mask): the cold
   figure, with the encoder's own time read from the job log;
2. `--clicks` clicks through the click route (`ImageForgeServerController.click`, the add-on's call), each timed
   from the call to the mask as a (height, width) array, and the server's own decoder + upsampling time;
3. the same prompts as queued segment-image jobs (embedding kept, so only the decoder runs) polled as fast as
   the client allows (50 ms), for the side-by-side ratio the click route exists for.

Prints p50/p95 of each and the ratio; JSON in bench/results/click_latency.json. Goal: click-to-mask p50 ≤ 150 ms
with Tiny on this CPU after the first encode.
"""

from __future__ import annotations

import argparse
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
sys.path[:0] = [str(ROOT), str(ROOT / "src")]
RESULTS = BENCH / "results"
MODELS = BENCH / "models" / "sam2-tiny"
STORAGE = RESULTS / "click-storage"
KEY = "BENCH_SAM2_TINY"
PARITY_PYTHON = os.environ.get("PARITY_PYTHON", "/work/venvs/parity/bin/python")


def export_model() -> None:
    if (MODELS / "encoder.onnx").is_file() and (MODELS / "decoder.onnx").is_file():
        return
    exporter = ROOT / "src" / "imageforge" / "converter" / "sam2_export.py"
    command = [PARITY_PYTHON, str(exporter), "--model", "tiny", "--random-weights", "3", "--output", str(MODELS)]
    subprocess.run(command, check=True, cwd=ROOT)


def prepare() -> Path:
    from tests.kit.server_env import install_server_environment

    install_server_environment(STORAGE)
    for name in ("encoder.onnx", "decoder.onnx"):
        target = STORAGE / "models" / KEY.lower() / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            target.symlink_to(MODELS / name)
    catalog = RESULTS / "click-catalog.json"
    entry = {
        "key": KEY, "family": "segment", "adapter": "sam2", "label": "SAM 2.1 Tiny (random weights)",
        "license": "Apache-2.0", "repository": "bench/sam2-tiny", "directory": KEY.lower(), "default": True,
        "files": [{"path": "encoder.onnx"}, {"path": "decoder.onnx"}],
        "encoder": "encoder.onnx", "decoder": "decoder.onnx",
    }  # fmt: skip
    catalog.write_text(json.dumps({"models": [entry]}), encoding="utf-8")
    os.environ["IMAGEFORGE_MODEL_CATALOG"] = str(catalog)
    return catalog


def photo(width: int, height: int) -> Path:
    from PIL import Image

    rng = np.random.default_rng(5)
    ys, xs = np.mgrid[0:height, 0:width]
    pixels = np.stack([xs / width, ys / height, 0.5 + 0.0 * xs], axis=-1)
    for _ in range(6):
        cx, cy, radius = rng.uniform(0, width), rng.uniform(0, height), rng.uniform(0.05, 0.2) * height
        pixels[np.hypot(xs - cx, ys - cy) < radius] = rng.uniform(0, 1, 3)
    path = RESULTS / f"click-photo-{width}x{height}.png"
    Image.fromarray((pixels * 255).astype(np.uint8)).save(path)
    return path


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clicks", type=int, default=40)
    parser.add_argument("--size", default="1920x1080")
    args = parser.parse_args()
    width, height = (int(value) for value in args.size.split("x"))
    RESULTS.mkdir(parents=True, exist_ok=True)
    export_model()
    prepare()
    image = photo(width, height)

    from imageforge.client.job_runner import make_runtime, run_job
    from imageforge.contract.segment_click import ClickRequest, ClickState, SegmentResult
    from imageforge.contract.segment_prompts import Clicks

    runtime = make_runtime(STORAGE)
    rng = np.random.default_rng(11)
    prompts = [
        [[float(rng.uniform(0, width)), float(rng.uniform(0, height)), 1]]
        + ([[float(rng.uniform(0, width)), float(rng.uniform(0, height)), 0]] if index % 2 else [])
        for index in range(args.clicks)
    ]
    try:
        started = time.perf_counter()
        first = run_job(runtime, "segment-image", {"input": str(image), "points": prompts[0], "device": "cpu"})
        cold = time.perf_counter() - started
        log = (Path(first.directory) / "job.log").read_text(encoding="utf-8")
        model_seconds = float(re.search(r"model ([0-9.]+) s of", log).group(1))
        segment = SegmentResult.from_json(json.loads(Path(first.file("segment")).read_text(encoding="utf-8")))
        print(f"first segment-image (server start, load, encode, one mask): {cold:.2f} s; model {model_seconds:.2f} s")

        clicks, server_side = [], []
        for points in prompts:
            request = ClickRequest(segment.image_sha256, segment.model, segment.device, Clicks.parse("p", points))
            began = time.perf_counter()
            answer = runtime.server.click(request)
            if answer.state is not ClickState.OK:
                raise RuntimeError(f"click answered {answer.state}: {answer.why}")
            if answer.selection is not None and answer.selection.mask is not None:
                mask = np.frombuffer(answer.selection.mask.to_bytes(), np.uint8).reshape(height, width)
                assert mask.shape == (height, width)
            clicks.append(time.perf_counter() - began)
            server_side.append(answer.decoder_seconds)

        queued = []
        for points in prompts[: max(5, args.clicks // 4)]:
            began = time.perf_counter()
            run_job(runtime, "segment-image", {"input": str(image), "points": points, "device": "cpu"})
            queued.append(time.perf_counter() - began)
    finally:
        runtime.server.stop()

    figures = {
        "image": f"{width}x{height}",
        "clicks": len(clicks),
        "first_job_seconds": cold,
        "first_job_model_seconds": model_seconds,
        "click_p50_ms": 1000 * percentile(clicks, 50),
        "click_p95_ms": 1000 * percentile(clicks, 95),
        "server_decoder_p50_ms": 1000 * percentile(server_side, 50),
        "server_decoder_p95_ms": 1000 * percentile(server_side, 95),
        "queued_job_p50_ms": 1000 * percentile(queued, 50),
        "queued_job_p95_ms": 1000 * percentile(queued, 95),
        "load_average": os.getloadavg()[0],
    }
    figures["queued_over_click_p50"] = figures["queued_job_p50_ms"] / figures["click_p50_ms"]
    print(
        f"click → mask ({len(clicks)} clicks, {width}×{height}): p50 {figures['click_p50_ms']:.0f} ms, "
        f"p95 {figures['click_p95_ms']:.0f} ms (server: decoder + upsampling p50 {figures['server_decoder_p50_ms']:.0f}"
        f" ms, p95 {figures['server_decoder_p95_ms']:.0f} ms)"
    )
    print(
        f"the same prompt as a queued job: p50 {figures['queued_job_p50_ms']:.0f} ms, p95 "
        f"{figures['queued_job_p95_ms']:.0f} ms = {figures['queued_over_click_p50']:.1f}× the click route"
    )
    print(f"goal click p50 ≤ 150 ms: {'met' if figures['click_p50_ms'] <= 150 else 'NOT met'} "
          f"(1-minute load average {figures['load_average']:.1f} on {os.cpu_count()} cores)")  # fmt: skip
    (RESULTS / "click_latency.json").write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
