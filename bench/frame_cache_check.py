"""What the frame cache's proof of the same input costs per frame, side by side with what a frame job already
pays for that frame: decoding it, and storing / reading back its result (job_steps/frame_cache.py).

The proof is one SHA-256 of the decoded float32 frame (`frame_key`), once per frame whether the frame is then
reused or computed. Decode is the media layer's own (`open_input(...).frames()`) on an H.264 clip written here.

    uv run --locked --no-sync python bench/frame_cache_check.py [--frames 6]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from imageforge.server.job_steps.frame_cache import FrameCache, frame_key
from imageforge.server.media import Frame, open_input

SIZES = ((1280, 720), (1920, 1080), (3840, 2160))


def write_clip(path: Path, width: int, height: int, frames: int) -> Path:
    rng = np.random.default_rng(0)
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=Fraction(24), options={"crf": "18", "preset": "ultrafast"})
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for index in range(frames):
            picture = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
            frame = av.VideoFrame.from_ndarray(picture, format="rgb24")
            frame.pts = index
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return path


def median_ms(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000.0


def store_and_read(cache: FrameCache, frame: Frame) -> tuple[float, float]:
    """Milliseconds to store and to read back a result the size of its input (remove-background's foreground)."""
    key = frame_key(frame)
    return median_ms(lambda: cache.put(key, frame.image.pixels), 3), median_ms(lambda: cache.get(key), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=6)
    args = parser.parse_args()
    print(
        f"{'frame':>11} {'decode ms':>9} {'proof ms':>8} {'put ms':>7} {'get ms':>7} "
        f"{'proof/decode':>12} {'proof/(put+get)':>15}"
    )
    with tempfile.TemporaryDirectory() as folder:
        for width, height in SIZES:
            clip = write_clip(Path(folder) / f"clip-{width}.mp4", width, height, args.frames)
            source = open_input(clip)
            started = time.perf_counter()
            frames = list(source.frames())
            decode = (time.perf_counter() - started) * 1000.0 / len(frames)
            proof = statistics.median(median_ms(lambda frame=frame: frame_key(frame), 3) for frame in frames)
            put, get = store_and_read(FrameCache(Path(folder) / f"cache-{width}"), frames[0])
            print(
                f"{f'{width}×{height}':>11} {decode:>9.1f} {proof:>8.1f} {put:>7.1f} {get:>7.1f} "
                f"{proof / decode:>12.2f} {proof / (put + get):>15.3f}"
            )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
