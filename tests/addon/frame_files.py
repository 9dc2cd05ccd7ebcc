"""PNG frame sequences for the frame-tool tests: a source sequence on disk, and the server's result sequence."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from result_files import write_png_rgba


def write_frames(folder: Path, numbers, name: str = "shot") -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for number in numbers:
        pixels = np.zeros((6, 8, 4), dtype=np.float32)
        pixels[..., 0], pixels[..., 3] = number / 10, 1.0
        paths.append(write_png_rgba(folder / f"{name}_{number:04d}.png", pixels))
    return paths


def sequence_producer(result: str, *, size=(8, 6)):
    """Writes the PNG sequence the server would: one frame per requested position, numbered like the source."""

    def produce(parameters, directory):
        folder = directory / result
        folder.mkdir()
        first, count = parameters["first_frame"], parameters["frame_count"]
        numbers = [position + 1 for position in range(first, first + count)]
        width, height = size
        for number in numbers:
            pixels = np.full((height, width, 4), 0.5, dtype=np.float32)
            pixels[..., 3] = 0.25
            write_png_rgba(folder / f"frame_{number:04d}.png", pixels)
        return {result: f"{result}/frame_{numbers[0]:04d}.png"}

    return produce
