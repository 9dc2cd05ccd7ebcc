"""Overlapping tiles with feathered, seam-free blending, streamed in bands to bound memory.

Every tile has the same size (the last tile on each axis is pulled inward to the image edge), so tiles can
be batched. Neighbouring tiles overlap by at least `2·margin + blend` source pixels. A tile's weight is 0
within `margin` pixels of an inner edge and ramps up over `blend` pixels (feathering); blended output is
the weight-normalised sum. So every pixel a tile contributes to lies more than `margin` pixels inside that
tile: for a model whose receptive radius is ≤ margin the blended result equals a whole-image run.

Output is assembled one row of tiles (a band) at a time: rows of the output are final once no later tile
row touches them, and are handed to a sink (e.g. written into a uint8 image) instead of keeping a float
copy of the whole output.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

Sink = Callable[[int, np.ndarray], None]  # (first output row, finished float32 rows [h, W, C])


@dataclass(frozen=True)
class TileGrid:
    height: int
    width: int
    tile: int  # edge of a (square) tile in source pixels, ≤ the image's edges
    margin: int
    blend: int

    @property
    def overlap(self) -> int:
        return 2 * self.margin + self.blend

    def starts(self, length: int) -> list[int]:
        size = min(self.tile, length)
        if size == length:
            return [0]
        stride = size - self.overlap
        starts = list(range(0, length - size, stride))
        starts.append(length - size)
        return starts

    @property
    def rows(self) -> list[int]:
        return self.starts(self.height)

    @property
    def columns(self) -> list[int]:
        return self.starts(self.width)

    @property
    def count(self) -> int:
        return len(self.rows) * len(self.columns)

    @property
    def work_ratio(self) -> float:
        """Pixels the model processes per source pixel (≥ 1: the cost of overlap)."""
        tile_h, tile_w = min(self.tile, self.height), min(self.tile, self.width)
        return self.count * tile_h * tile_w / (self.height * self.width)


def plan_tiles(height: int, width: int, *, tile: int, margin: int, blend: int) -> TileGrid:
    """A grid of equal tiles; consecutive tiles overlap by at least 2·margin + blend (so stride > 0)."""
    overlap = 2 * margin + blend
    if min(height, width) < 1 or tile < 1 or margin < 0 or blend < 1:
        raise ValueError("invalid tiling request")
    if overlap >= tile and tile < max(height, width):
        raise ValueError(f"tile {tile} is too small for an overlap of {overlap}")
    return TileGrid(height, width, tile, margin, blend)


def axis_weight(start: int, size: int, length: int, margin: int, blend: int) -> np.ndarray:
    """1-D weight of one tile: 0 within `margin` of an inner edge, rising linearly over `blend`, 1 inside.

    Edges on the image border get no ramp. Blended output is normalised by the summed weights, so the
    number of tiles meeting at a pixel does not matter; any pixel in an overlap of ≥ 2·margin + blend is
    more than `margin` inside at least one tile, so its weight sum is positive.
    """
    inside = np.arange(size, dtype=np.float32) + 0.5
    weight = np.ones(size, dtype=np.float32)
    if start > 0:
        weight = np.minimum(weight, np.clip((inside - margin) / blend, 0.0, 1.0))
    if start + size < length:
        weight = np.minimum(weight, np.clip((size - inside - margin) / blend, 0.0, 1.0))
    return weight


def run_tiled(
    image: np.ndarray,
    grid: TileGrid,
    model: Callable[[np.ndarray], np.ndarray],
    *,
    scale: int,
    sink: Sink,
    batch: int = 1,
    on_tile: Callable[[int, int], None] = lambda _done, _total: None,
) -> None:
    """Run `model` ([n, C, t, t] float32 → [n, C, t·scale, t·scale]) over `image` [H, W, C] tile by tile.

    Finished output rows are passed to `sink` in order, band by band. `on_tile(done, total)` is called
    after each batch (cancellation checks belong there).
    """
    height, width, channels = image.shape
    rows, columns = grid.rows, grid.columns
    tile_h, tile_w = min(grid.tile, height), min(grid.tile, width)
    row_weights = [np.repeat(axis_weight(top, tile_h, height, grid.margin, grid.blend), scale) for top in rows]
    column_weights = [np.repeat(axis_weight(left, tile_w, width, grid.margin, grid.blend), scale) for left in columns]
    out_w = width * scale
    done = 0
    band_top = 0  # first output row not yet handed to the sink
    band = np.zeros((0, out_w, channels), dtype=np.float32)
    band_weight = np.zeros((0, out_w, 1), dtype=np.float32)
    for row_index, top in enumerate(rows):
        out_top, out_bottom = top * scale, (top + tile_h) * scale
        grow = out_bottom - (band_top + band.shape[0])
        if grow > 0:
            band = np.concatenate([band, np.zeros((grow, out_w, channels), dtype=np.float32)])
            band_weight = np.concatenate([band_weight, np.zeros((grow, out_w, 1), dtype=np.float32)])
        positions = [(left, column_index) for column_index, left in enumerate(columns)]
        for chunk in _chunks(positions, batch):
            tiles = np.stack([image[top : top + tile_h, x : x + tile_w].transpose(2, 0, 1) for x, _ in chunk])
            outputs = model(np.ascontiguousarray(tiles, dtype=np.float32))
            for (left, column_index), output in zip(chunk, outputs, strict=True):
                weight = np.outer(row_weights[row_index], column_weights[column_index])[..., None]
                rows_slice = slice(out_top - band_top, out_bottom - band_top)
                columns_slice = slice(left * scale, (left + tile_w) * scale)
                band[rows_slice, columns_slice] += output.transpose(1, 2, 0) * weight
                band_weight[rows_slice, columns_slice] += weight
            done += len(chunk)
            on_tile(done, grid.count)
        next_top = rows[row_index + 1] * scale if row_index + 1 < len(rows) else height * scale
        finished = next_top - band_top
        if finished > 0:
            sink(band_top, band[:finished] / band_weight[:finished])
            band, band_weight = band[finished:].copy(), band_weight[finished:].copy()
            band_top = next_top


def _chunks(items: list, size: int) -> Iterator[list]:
    for start in range(0, len(items), max(size, 1)):
        yield items[start : start + max(size, 1)]
