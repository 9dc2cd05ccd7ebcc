"""A two-layer depth scene (a card in front of a wall) for the depth-mesh tests, and the server's files for it."""

from __future__ import annotations

import numpy as np
from result_files import write_exr, write_json, write_png_rgb

from imageforge.contract.depth_metadata import DepthMetadata

WIDTH, HEIGHT = 32, 24
FX = FY = 30.0
NEAR, FAR = 2.0, 5.0  # a card 2 m away in front of a wall 5 m away
CARD = (slice(6, 18), slice(8, 20))  # rows, columns of the card in the depth map


def two_layers(width: int = WIDTH, height: int = HEIGHT) -> np.ndarray:
    """Camera-space points (OpenCV axes): a wall at FAR with a card at NEAR in front of it."""
    ys, xs = np.mgrid[0:height, 0:width] + 0.5
    z = np.full((height, width), FAR)
    z[CARD] = NEAR
    return np.stack([(xs - width / 2) * z / FX, (ys - height / 2) * z / FY, z], axis=-1).astype(np.float32)


def produce_two_layers(parameters, directory):
    depth = np.concatenate([two_layers(), np.ones((HEIGHT, WIDTH, 1), np.float32)], axis=-1)
    write_exr(directory / "depth.exr", depth)
    metadata = DepthMetadata((WIDTH, HEIGHT), (WIDTH, HEIGHT), FX, FY, WIDTH / 2, HEIGHT / 2, FAR)
    write_json(directory / "depth.json", metadata.to_json())
    normal = np.full((HEIGHT, WIDTH, 3), (0.5, 0.5, 0.0), np.float32)
    write_png_rgb(directory / "normal.png", normal)
    return {"depth": "depth.exr", "depth_metadata": "depth.json", "normal": "normal.png"}
