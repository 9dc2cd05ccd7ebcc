"""Tiles that keep a core each, with the model's context around it, blended without seams, streamed in bands.

A tile's *core* is the region whose result it keeps; `TileGrid.core` (the job's `tile_size`) bounds it. The
cores split each axis into equal parts (sizes differ by at most one pixel). Around its core a run sees
`context = margin + ⌈blend / 2⌉` more source pixels on every side that has a neighbour (none beyond the image
border, where the whole-image run sees no pixels either). Neighbouring results cross-fade linearly over
`blend` pixels centred on the seam between their cores, so every pixel a tile contributes to lies at least
`margin` pixels inside the pixels it saw: for a model whose receptive radius is ≤ margin the blended result
equals a whole-image run. The work a grid costs is (sum of the runs' areas) / (image area): about
(1 + 2·context / core)² for large images.

Output is assembled one row of tiles (a band) at a time: rows of the output are final once no later tile
row touches them, and are handed to a sink (e.g. written into a uint8 image) instead of keeping a float
copy of the whole output. Tiles of one row with equal sizes can be batched.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

Sink = Callable[[int, np.ndarray], None]  # (first output row, finished float32 rows [h, W, C])


def context_pixels(margin: int, blend: int) -> int:
    """Pixels a run sees beyond its core on each side that has a neighbour."""
    return margin + math.ceil(blend / 2)


@dataclass(frozen=True)
class Span:
    """One tile along one axis: the source pixels a run sees, and the core it keeps."""

    start: int
    size: int
    core_start: int
    core_end: int


@dataclass(frozen=True)
class TileGrid:
    height: int
    width: int
    core: int  # the largest core edge in source pixels (the job's tile_size; ≥ the image: one run)
    margin: int  # pixels a run sees beyond everything it contributes to (≥ the model's receptive radius)
    blend: int  # pixels over which neighbouring results cross-fade, centred on their cores' seam

    @property
    def context(self) -> int:
        return context_pixels(self.margin, self.blend)

    def spans(self, length: int) -> list[Span]:
        count = math.ceil(length / self.core)
        bounds = [round(index * length / count) for index in range(count + 1)]
        spans = []
        for core_start, core_end in zip(bounds, bounds[1:], strict=False):
            start = max(core_start - self.context, 0) if core_start > 0 else 0
            end = min(core_end + self.context, length) if core_end < length else length
            spans.append(Span(start, end - start, core_start, core_end))
        return spans

    @property
    def rows(self) -> list[Span]:
        return self.spans(self.height)

    @property
    def columns(self) -> list[Span]:
        return self.spans(self.width)

    @property
    def count(self) -> int:
        return len(self.rows) * len(self.columns)

    @property
    def largest_run(self) -> tuple[int, int]:
        """(height, width) of the largest run: what memory and batch sizes are planned for."""
        return max(span.size for span in self.rows), max(span.size for span in self.columns)

    @property
    def work_ratio(self) -> float:
        """Pixels the model processes per source pixel (≥ 1: the cost of the context around the cores)."""
        seen_rows = sum(span.size for span in self.rows)
        seen_columns = sum(span.size for span in self.columns)
        return seen_rows * seen_columns / (self.height * self.width)


def plan_tiles(height: int, width: int, *, core: int, margin: int, blend: int) -> TileGrid:
    """A grid whose cores are at most `core` pixels; cores must exceed the blend so cross-fades never meet."""
    if min(height, width) < 1 or core < 1 or margin < 0 or blend < 1:
        raise ValueError("invalid tiling request")
    if core <= blend and core < max(height, width):
        raise ValueError(f"a tile core of {core} is too small for a blend of {blend}")
    return TileGrid(height, width, core, margin, blend)


def axis_weight(span: Span, length: int, blend: int) -> np.ndarray:
    """1-D weight of one tile: 1 over its core, falling linearly to 0 across `blend` pixels centred on each
    seam with a neighbour, 0 beyond. A neighbour's ramp is the exact complement, so weights sum to 1."""
    centre = np.arange(span.start, span.start + span.size, dtype=np.float64) + 0.5
    weight = np.ones(span.size, dtype=np.float64)
    if span.core_start > 0:
        weight = np.minimum(weight, np.clip((centre - (span.core_start - blend / 2)) / blend, 0.0, 1.0))
    if span.core_end < length:
        weight = np.minimum(weight, np.clip(((span.core_end + blend / 2) - centre) / blend, 0.0, 1.0))
    return weight.astype(np.float32)


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
    """Run `model` ([n, C, h, w] float32 → [n, C, h·scale, w·scale]) over `image` [H, W, C] tile by tile.

    Finished output rows are passed to `sink` in order, band by band. `on_tile(done, total)` is called
    after each batch (cancellation checks belong there). A batch holds tiles of one row with equal widths.
    """
    height, width, channels = image.shape
    rows, columns = grid.rows, grid.columns
    row_weights = [np.repeat(axis_weight(span, height, grid.blend), scale) for span in rows]
    column_weights = [np.repeat(axis_weight(span, width, grid.blend), scale) for span in columns]
    out_w = width * scale
    done = 0
    band_top = 0  # first output row not yet handed to the sink
    band = np.zeros((0, out_w, channels), dtype=np.float32)
    band_weight = np.zeros((0, out_w, 1), dtype=np.float32)
    for row_index, row in enumerate(rows):
        out_top, out_bottom = row.start * scale, (row.start + row.size) * scale
        grow = out_bottom - (band_top + band.shape[0])
        if grow > 0:
            band = np.concatenate([band, np.zeros((grow, out_w, channels), dtype=np.float32)])
            band_weight = np.concatenate([band_weight, np.zeros((grow, out_w, 1), dtype=np.float32)])
        for chunk in _batches(list(enumerate(columns)), batch):
            tiles = np.stack(
                [
                    image[row.start : row.start + row.size, c.start : c.start + c.size].transpose(2, 0, 1)
                    for _, c in chunk
                ]
            )
            outputs = model(np.ascontiguousarray(tiles, dtype=np.float32))
            for (column_index, column), output in zip(chunk, outputs, strict=True):
                weight = np.outer(row_weights[row_index], column_weights[column_index])[..., None]
                rows_slice = slice(out_top - band_top, out_bottom - band_top)
                columns_slice = slice(column.start * scale, (column.start + column.size) * scale)
                band[rows_slice, columns_slice] += output.transpose(1, 2, 0) * weight
                band_weight[rows_slice, columns_slice] += weight
            done += len(chunk)
            on_tile(done, grid.count)
        next_top = rows[row_index + 1].start * scale if row_index + 1 < len(rows) else height * scale
        finished = next_top - band_top
        if finished > 0:
            sink(band_top, band[:finished] / band_weight[:finished])
            band, band_weight = band[finished:].copy(), band_weight[finished:].copy()
            band_top = next_top


def _batches(columns: list[tuple[int, Span]], size: int) -> Iterator[list[tuple[int, Span]]]:
    """Consecutive tiles of equal width, at most `size` at a time (a batch is one array)."""
    chunk: list[tuple[int, Span]] = []
    for item in columns:
        if chunk and (len(chunk) >= max(size, 1) or chunk[-1][1].size != item[1].size):
            yield chunk
            chunk = []
        chunk.append(item)
    if chunk:
        yield chunk
