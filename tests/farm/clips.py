"""Small textured clips and sequences for the farm tests, and ways to read results back frame by frame."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np
from PIL import Image

from tests.server.media.makers import _silence


def textured_clip(
    path: Path, *, frames: int = 7, size: tuple[int, int] = (32, 24), pixel_aspect: Fraction = Fraction(4, 3)
) -> Path:
    """An H.264 MP4 of noise frames (every pixel differs, so any mix-up shows), 25 fps, AAC silence, anamorphic;
    a keyframe every 3 frames and B-frames between, so that a chunk after the first seeks (media/video_seek.py)."""
    width, height = size
    rng = np.random.default_rng(26)
    rate = Fraction(25)
    with av.open(str(path), "w") as container:
        stream = container.add_stream(
            "libx264", rate=rate, options={"crf": "10", "preset": "ultrafast", "g": "3", "bf": "2"}
        )
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.codec_context.sample_aspect_ratio = pixel_aspect
        audio = container.add_stream("aac", rate=48000)
        container.start_encoding()
        for index in range(frames):
            values = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
            frame = av.VideoFrame.from_ndarray(values, format="rgb24")
            frame.pts, frame.time_base = index, 1 / rate
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
        _silence(container, audio, seconds=frames / rate)
    return path


def textured_sequence(folder: Path, numbers: range, *, size: tuple[int, int] = (24, 16)) -> Path:
    """PNG frames `shot_<number>.png` of noise; returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(27)
    for number in numbers:
        values = rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
        Image.fromarray(values).save(folder / f"shot_{number:04d}.png")
    return folder


def decoded_frames(path: Path) -> list[tuple[int | None, np.ndarray]]:
    """(pts, RGB pixels) of every frame of a video, in presentation order."""
    with av.open(str(path)) as container:
        return [(frame.pts, frame.to_ndarray(format="rgb24")) for frame in container.decode(video=0)]


def stream_facts(path: Path) -> dict[str, object]:
    with av.open(str(path)) as container:
        video = container.streams.video[0]
        return {
            "codec": video.codec_context.name,
            "size": (video.codec_context.width, video.codec_context.height),
            "rate": video.average_rate,
            "pixel_aspect": video.sample_aspect_ratio,
            "audio": [stream.codec_context.name for stream in container.streams.audio],
        }


def assert_same_video_frames(ours: Path, theirs: Path, count: int) -> None:
    """Both videos have `count` frames, the same timestamps and exactly the same pixels."""
    mine, reference = decoded_frames(ours), decoded_frames(theirs)
    assert len(mine) == len(reference) == count
    for (pts, pixels), (their_pts, their_pixels) in zip(mine, reference, strict=True):
        assert pts == their_pts
        np.testing.assert_array_equal(pixels, their_pixels)
