"""The last chunk of a long clip with and without seeking, side by side (docs/farm.md's scale figures).

    uv run --locked --no-sync python bench/video_seek.py [--frames 2000] [--size 320x180] [--chunk 10]
        [--rounds 3] [--command]

A photo-like H.264 clip (x264's defaults: a keyframe at most every 250 frames, B-frames) is made once under
bench/results/video_seek/. Then, interleaved round after round:

- the chunk's frames as a job reads them (`MediaSource.frames(range)`: decode and RGB conversion of the range),
  for the first chunk and the last, with `IMAGEFORGE_VIDEO_SEEK=0` (decode from the first frame, as before)
  and with seeking; and the part seeking adds that still grows with the clip: reading the stream's packets up
  to the last chunk (`read_timeline`, demux only);
- with `--command` (needs bench/models/realesr-general-x4v3.onnx: bench/export_image_models.py), the real farm
  task `imageforge run upscale-image … --into DIR --frames A-B` of the last chunk, each side on its own warm
  server (two storage roots; the server reads IMAGEFORGE_VIDEO_SEEK when it starts).

Prints one JSON line per measurement and the ratios; results in bench/results/video_seek/video_seek.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results" / "video_seek"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from bench.farm_scale import catalog, clip, imageforge, place_models  # noqa: E402


def frames_seconds(path: Path, positions: range, seek: bool) -> tuple[float, list[str]]:
    from imageforge.server.media import open_input

    os.environ["IMAGEFORGE_VIDEO_SEEK"] = "1" if seek else "0"
    told: list[str] = []
    started = time.perf_counter()
    source = open_input(str(path))
    count = sum(1 for _ in source.frames(positions, note=told.append))
    elapsed = time.perf_counter() - started
    assert count == len(positions)
    return elapsed, told


def timeline_seconds(path: Path, through: int) -> float:
    from imageforge.server.media.video_read import probe_video
    from imageforge.server.media.video_seek import read_timeline

    info = probe_video(path)
    started = time.perf_counter()
    read_timeline(path, info.codec, info.frame_count, through=through)
    return time.perf_counter() - started


def command_seconds(envs: dict[bool, dict[str, str]], source: Path, frames: str, rounds: int) -> dict[str, object]:
    words = ["upscale-image", f"input={source}", "model=BENCH_X4V3", "scale=2"]
    for env in envs.values():  # start each server and load its session: the rounds below are warm
        imageforge(env, "run", *words, "--into", str(RESULTS / "warm-up"), "--frames", "1-1")
    times: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(rounds):
        for seek, env in envs.items():
            into = RESULTS / f"frames-seek-{int(seek)}"
            shutil.rmtree(into, ignore_errors=True)
            seconds, _ = imageforge(env, "run", *words, "--into", str(into), "--frames", frames)
            times[seek].append(seconds)
    off, on = statistics.median(times[False]), statistics.median(times[True])
    return {"chunk": frames, "from_start_seconds": round(off, 2), "seek_seconds": round(on, 2),
            "ratio": round(off / on, 2), "rounds": times}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=2000)
    parser.add_argument("--size", default="320x180")
    parser.add_argument("--chunk", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--command", action="store_true", help="also time the real farm task (bench/models)")
    args = parser.parse_args()
    width, height = (int(part) for part in args.size.split("x"))
    RESULTS.mkdir(parents=True, exist_ok=True)
    source = clip(RESULTS / f"clip-{width}x{height}-{args.frames}.mp4", (width, height), args.frames)
    chunks = {"first": range(0, args.chunk), "last": range(args.frames - args.chunk, args.frames)}
    times: dict[tuple[str, bool], list[float]] = {(name, seek): [] for name in chunks for seek in (False, True)}
    timeline: list[float] = []
    notes: list[str] = []
    for _ in range(args.rounds):
        for name, positions in chunks.items():
            for seek in (False, True):
                seconds, told = frames_seconds(source, positions, seek)
                times[name, seek].append(seconds)
                notes.extend(line for line in told if seek)
        timeline.append(timeline_seconds(source, chunks["last"].start))
    report: dict[str, object] = {
        "clip": {"frames": args.frames, "size": [width, height], "bytes": source.stat().st_size},
        "load_average": os.getloadavg()[0],
        "notes": sorted(set(notes)),
        "timeline_seconds": round(statistics.median(timeline), 4),
        "timeline_ms_per_1000_frames": round(statistics.median(timeline) / args.frames * 1e6, 2),
    }
    for name in chunks:
        off, on = statistics.median(times[name, False]), statistics.median(times[name, True])
        report[f"{name}_chunk"] = {
            "frames": [chunks[name].start + 1, chunks[name].stop],
            "from_start_seconds": round(off, 3),
            "seek_seconds": round(on, 3),
            "ratio": round(off / on, 2),
        }
        print(json.dumps({name: report[f"{name}_chunk"]}), flush=True)
    print(json.dumps({key: report[key] for key in ("timeline_seconds", "timeline_ms_per_1000_frames", "notes")}))
    if args.command:
        from tests.kit.server_env import install_server_environment

        models = BENCH / "models" / "realesr-general-x4v3.onnx"
        if not models.is_file():
            raise SystemExit("bench/models lacks realesr-general-x4v3.onnx: run bench/export_image_models.py first")
        envs = {}
        for seek in (False, True):
            root = install_server_environment(RESULTS / f"storage-seek-{int(seek)}")
            place_models(root)
            envs[seek] = {
                **os.environ,
                "IMAGEFORGE_STORAGE_ROOT": str(root),
                "IMAGEFORGE_SERVER_LINGER": "120",
                "IMAGEFORGE_MODEL_CATALOG": str(catalog(RESULTS)),
                "IMAGEFORGE_VIDEO_SEEK": str(int(seek)),
            }
        last = chunks["last"]
        report["command"] = command_seconds(envs, source, f"{last.start + 1}-{last.stop}", args.rounds)
        print(json.dumps({"command": report["command"]}), flush=True)
    (RESULTS / "video_seek.json").write_text(json.dumps(report, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
