"""Frames as fast as the model: a frame job's time over its model's time, side by side in one run.

    uv run --locked --no-sync python bench/frame_overhead.py [--frames 48] [--matte-frames 12]

Two cases (issue 26): a 320×180 → ×4 video upscale (Real-ESRGAN x4v3 shape) and a 1280×720 matte (the
BEN2-shaped network), as videos with video output and the frame cache on (a normal run). Each runs twice on
one warm server: with the frame loop's writes in line (`IMAGEFORGE_FRAME_WRITE_BEHIND=0`, how it ran before) and
written beside the next frame's model run (the default); the ratio is the job's time over the model's time,
both from the job's own log ("model X s of Y s job time"). It also times the frame cache's encoding of one
result frame as it was (16-bit codes, numpy's savez_compressed) and as it is (the result's depth, deflate 1).
Needs bench/models/ (bench/export_image_models.py). Results: bench/results/farm/frame_overhead.json.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from farm_scale import RESULTS, catalog, clip, imageforge, place_models  # noqa: E402

CASES = {
    "upscale 320×180 → ×4": ("upscale-image", "BENCH_X4V3", (320, 180), ["scale=4"], "frames"),
    "matte 1280×720": ("remove-background", "BENCH_BEN2", (1280, 720), [], "matte_frames"),
}
MODEL_TIME = re.compile(r"model ([0-9.]+) s of ([0-9.]+) s job time")


def job_times(storage: Path, before: set[str]) -> tuple[float, float]:
    (folder,) = [path for path in (storage / "jobs").iterdir() if path.name not in before and
                 MODEL_TIME.search((path / "job.log").read_text())]  # fmt: skip
    model, job = MODEL_TIME.search((folder / "job.log").read_text()).groups()  # type: ignore[union-attr]
    return float(job), float(model)


def cache_encoding(size: tuple[int, int], channels: int) -> dict[str, float]:
    import numpy as np

    from imageforge.server.job_steps.frame_cache import FrameCache, FrameKey

    rng = np.random.default_rng(1)
    pixels = rng.random((size[1], size[0], channels), dtype=np.float32)
    key = FrameKey(0, bytes(32))
    started = time.perf_counter()
    for _ in range(3):
        buffer = io.BytesIO()
        codes = np.rint(np.clip(pixels, 0.0, 1.0) * 65535.0).astype(np.uint16)
        np.savez_compressed(buffer, pixels=codes, input_sha256=np.zeros(32, np.uint8))
    before = (time.perf_counter() - started) / 3
    cache = FrameCache(RESULTS / "cache-encoding")
    started = time.perf_counter()
    for _ in range(3):
        cache.put(key, pixels, bits=8)
    after = (time.perf_counter() - started) / 3
    cache.discard()
    return {"savez_compressed_16bit_s": round(before, 3), "deflate1_result_depth_s": round(after, 3)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=48)
    parser.add_argument("--matte-frames", type=int, default=12)
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    from tests.kit.server_env import install_server_environment

    rows: dict[str, dict[str, object]] = {}
    for mode, value in (("in line", "0"), ("write-behind", "1")):  # a server each: it reads the variable
        storage = install_server_environment(RESULTS / f"storage-{value}")
        place_models(storage)
        env = {
            **os.environ,
            "IMAGEFORGE_STORAGE_ROOT": str(storage),
            "IMAGEFORGE_MODEL_CATALOG": str(catalog(RESULTS)),
            "IMAGEFORGE_SERVER_LINGER": "60",
            "IMAGEFORGE_FRAME_WRITE_BEHIND": value,
        }
        for label, (job, model, size, settings, count) in CASES.items():
            frames = getattr(args, count)
            source = clip(RESULTS / f"clip-{size[0]}x{size[1]}-{frames}.mp4", size, frames)
            words = [job, f"input={source}", f"model={model}", *settings]
            imageforge(env, "run", *words, "frame_count=1")  # warm: the session loads outside the timings
            before = {path.name for path in (storage / "jobs").iterdir()}
            imageforge(env, "run", *words)
            job_seconds, model_seconds = job_times(storage, before)
            row = rows.setdefault(label, {"case": label, "frames": frames})
            row[mode] = {"job_s": job_seconds, "model_s": model_seconds, "ratio": round(job_seconds / model_seconds, 3)}
            print(json.dumps({"case": label, "mode": mode, **row[mode]}), flush=True)  # type: ignore[dict-item]
    encoding = cache_encoding((1280, 720), 3)
    print(json.dumps({"cache encoding, one 1280×720 RGB frame": encoding}), flush=True)
    (RESULTS / "frame_overhead.json").write_text(
        json.dumps({"cases": list(rows.values()), "cache": encoding}, indent=2)
    )


if __name__ == "__main__":
    main()
