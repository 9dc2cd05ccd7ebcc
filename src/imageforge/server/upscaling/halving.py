"""Halve an image streamed as row bands, with a Lanczos-3 filter, without ever holding the whole image.

Upscaling by 2 runs a 4× model and halves its output (Real-ESRGAN's own "outscale"): a good 2× from a 4×
model beats a blurry 2× model. The 4× output of a large image is the biggest array of the job, so it is
halved band by band as the tiler finishes rows: rows are filtered horizontally at once, and vertically as
soon as the 12 input rows an output row needs have arrived. The kernel and its border handling (weights
normalised over the taps inside the image) are Pillow's LANCZOS for a factor of 2, so the streamed result
equals Pillow resizing the whole image.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

Sink = Callable[[int, np.ndarray], None]  # (first output row, float32 rows [h, W, C])

LOBES = 3
FACTOR = 2
TAPS = 2 * LOBES * FACTOR  # input samples per output sample
PAD_BEFORE = LOBES * FACTOR - 1  # output k's taps are inputs FACTOR·k − PAD_BEFORE … FACTOR·k + LOBES·FACTOR
CHUNK_BYTES = 256 * 1024  # output rows are summed a chunk of about this size at a time, inside L2
PAD_AFTER = LOBES * FACTOR  # zero samples after the last input: the last output's taps reach 5 past it, 1 spare


def lanczos(x: np.ndarray) -> np.ndarray:
    x = np.abs(np.asarray(x, dtype=np.float64))
    return np.where(x < LOBES, np.sinc(x) * np.sinc(x / LOBES), 0.0)


def halving_taps(length: int) -> tuple[np.ndarray, np.ndarray]:
    """For each of the length // 2 outputs: the TAPS input indices (clamped) and their normalised weights."""
    outputs = np.arange(length // FACTOR)
    centres = (outputs + 0.5) * FACTOR
    first = _first_taps(outputs.shape[0])
    indices = first[:, None] + np.arange(TAPS)[None, :]
    weights = lanczos((indices - centres[:, None] + 0.5) / FACTOR)
    weights[(indices < 0) | (indices >= length)] = 0.0
    weights /= weights.sum(axis=1, keepdims=True)
    return np.clip(indices, 0, length - 1), weights.astype(np.float32)


def halve_rows(rows: np.ndarray, taps: tuple[np.ndarray, np.ndarray], out: np.ndarray | None = None) -> np.ndarray:
    """Filter and halve rows [h, W, C] along the width: [h, W // 2, C] float32 (written into `out` if given).

    Every output column uses the same 12 weights on input columns 2j − 5 … 2j + 6 of the zero-padded row, so
    the sum runs over views instead of gathers. The views are slices of the padded row's even and odd samples,
    each copied into its own contiguous array: a view taken every other pixel straight from [h, W, C] walks
    only C floats at a time, far slower per output than the vertical pass's contiguous rows. Rows go a few
    at a time (CHUNK_BYTES) so the 12 multiply-adds work in cache rather than memory. Border columns are then
    divided by the share of the weights that fell inside the image, which is exactly Pillow's normalisation
    over in-bounds taps. `out` lets BandHalver write into its row buffer directly.
    """
    indices, _ = taps
    height, outputs, channels = rows.shape[0], indices.shape[0], rows.shape[2]
    kernel, norm, interior = _kernel_and_norm(outputs, rows.shape[1])
    if out is None:
        out = np.empty((height, outputs, channels), dtype=np.float32)
    chunk = _chunk_rows(outputs * channels)
    length = outputs + TAPS // FACTOR  # samples per phase: the last output's last tap and one spare
    phases = [np.zeros((chunk, length, channels), dtype=np.float32) for _ in range(FACTOR)]
    scratch = np.empty((chunk, outputs, channels), dtype=np.float32)
    weights = list(kernel)
    for top in range(0, height, chunk):
        count = min(chunk, height - top)
        for phase in range(FACTOR):  # input columns phase, phase + FACTOR, … into padded sample phase + PAD_BEFORE, …
            padded_index = phase + PAD_BEFORE
            first = padded_index // FACTOR
            phases[padded_index % FACTOR][:count, first : first + outputs] = rows[top : top + count, phase::FACTOR]
        # output k's tap t is padded sample FACTOR·(k + t // FACTOR) + t % FACTOR
        views = (phases[tap % FACTOR][:count, tap // FACTOR : tap // FACTOR + outputs] for tap in range(TAPS))
        block = out[top : top + count]
        _sum_taps(views, weights, block, scratch[:count])
        # the same division per column as block /= norm[None, :, None], but the interior's one divisor is a
        # scalar over contiguous memory rather than a broadcast that steps C floats at a time
        block[:, interior] /= norm[interior.start]
        block[:, : interior.start] /= norm[: interior.start, None]
        block[:, interior.stop :] /= norm[interior.stop :, None]
    return out


def _chunk_rows(row_floats: int) -> int:
    """How many output rows of `row_floats` float32 values make one cache-sized chunk (at least one)."""
    return max(1, CHUNK_BYTES // (4 * row_floats))


def _sum_taps(views: Iterable[np.ndarray], weights: Sequence[np.ndarray], out: np.ndarray, scratch: np.ndarray) -> None:
    """out = Σ_tap weights[tap] · views[tap], added in tap order (`scratch` is out's size).

    The first product is written straight into `out` (the same sum as adding it to zeros, one pass less).
    """
    for tap, view in enumerate(views):
        if tap == 0:
            np.multiply(view, weights[tap], out=out)
        else:
            np.multiply(view, weights[tap], out=scratch)
            out += scratch


def _first_taps(outputs: int) -> np.ndarray:
    """The first input index (possibly negative) of each output's TAPS consecutive taps: FACTOR·k − PAD_BEFORE."""
    centres = (np.arange(outputs) + 0.5) * FACTOR
    first: np.ndarray = np.floor(centres - LOBES * FACTOR + 0.5).astype(np.int64)
    return first


def _kernel_and_norm(outputs: int, length: int) -> tuple[np.ndarray, np.ndarray, slice]:
    """The interior output's weights; per output, the fraction of them on in-bounds input samples; and the
    outputs whose taps are all in bounds (a run, empty for tiny lengths: they share one, identical, fraction).
    """
    kernel = lanczos((np.arange(TAPS) - (LOBES * FACTOR - 0.5)) / FACTOR)
    kernel = (kernel / kernel.sum()).astype(np.float32)
    positions = _first_taps(outputs)[:, None] + np.arange(TAPS)[None, :]
    inside = (positions >= 0) & (positions < length)
    full = np.flatnonzero(inside.all(axis=1))
    interior = slice(int(full[0]), int(full[-1]) + 1) if full.size else slice(0, 0)
    return kernel, (kernel[None, :] * inside).sum(axis=1).astype(np.float32), interior


class BandHalver:
    """Receives rows of a height × width image top to bottom (`push`) and sends the halved rows to `sink`.

    Each push halves the band horizontally straight into a fresh row buffer that starts with the rows earlier
    outputs left unused (at most 10) or, for the first band, PAD_BEFORE zero rows, and that ends, for the last
    band, with PAD_AFTER zero rows. The output rows the buffer completes are then summed like the horizontal
    pass, over strided views of the buffer (every other row), a cache-sized chunk of output rows at a time,
    with each row's own normalised weights: zero weights on the zero rows make this the same sum, product for
    product, as gathering the clamped rows one tap at a time did. No Python loop runs per row. Memory: one
    band's horizontally halved rows plus 10, the emitted rows, and chunk-sized scratch.
    """

    def __init__(self, height: int, width: int, sink: Sink):
        if height < FACTOR or width < FACTOR or height % FACTOR or width % FACTOR:
            raise ValueError(f"only even sizes of at least 2×2 are halved exactly, not {width}×{height}")
        self.height = height
        self.sink = sink
        self._columns = halving_taps(width)
        indices, self._rows_weights = halving_taps(height)
        self._last_needed = indices[:, -1]  # last in-bounds input row each output row needs (non-decreasing)
        self._first = _first_taps(height // FACTOR)
        self._buffer = np.zeros((0, width // FACTOR, 0), dtype=np.float32)
        self._buffer_top = -PAD_BEFORE  # input row index of _buffer[0]
        self._received = 0
        self._next_output = 0

    def push(self, top: int, rows: np.ndarray) -> None:
        if top != self._received:
            raise ValueError(f"rows must arrive in order: expected row {self._received}, got {top}")
        if top + rows.shape[0] > self.height:
            raise ValueError(f"rows {top}…{top + rows.shape[0] - 1} run past the image's {self.height} rows")
        first = top == 0
        last = top + rows.shape[0] == self.height
        carried = self._buffer.shape[0]
        before = PAD_BEFORE if first else carried
        after = PAD_AFTER if last else 0
        buffer = np.empty((before + rows.shape[0] + after, self._columns[0].shape[0], rows.shape[2]), np.float32)
        if first:
            buffer[:before] = 0.0
        else:
            buffer[:before] = self._buffer
        buffer[buffer.shape[0] - after :] = 0.0
        halve_rows(rows, self._columns, out=buffer[before : before + rows.shape[0]])
        self._buffer = buffer
        self._received += rows.shape[0]
        self._emit()

    def _emit(self) -> None:
        outputs = self._last_needed.shape[0]
        start = self._next_output
        ready = int(np.searchsorted(self._last_needed, self._received, side="left"))
        if ready == start:
            return
        count = ready - start
        offset = int(self._first[start]) - self._buffer_top  # buffer row of the first output's first tap
        out = np.empty((count, *self._buffer.shape[1:]), dtype=np.float32)
        chunk = _chunk_rows(out[0].size)
        scratch = np.empty((chunk, *out.shape[1:]), dtype=np.float32)
        for first in range(0, count, chunk):  # output rows first … first + n − 1, a cache-sized chunk at a time
            n = min(chunk, count - first)
            weights = self._rows_weights[start + first : start + first + n]
            rows = offset + FACTOR * first
            views = (self._buffer[rows + tap : rows + tap + FACTOR * n : FACTOR] for tap in range(TAPS))
            _sum_taps(views, [weights[:, tap, None, None] for tap in range(TAPS)], out[first : first + n], scratch[:n])
        self.sink(start, out)
        self._next_output = ready
        if ready < outputs:  # keep only the rows later outputs still need, copied so the band can be freed
            keep_from = int(self._first[ready])
            self._buffer = self._buffer[keep_from - self._buffer_top :].copy()
            self._buffer_top = keep_from
        else:
            self._buffer = self._buffer[:0]

    @property
    def finished(self) -> bool:
        return bool(self._next_output == self._last_needed.shape[0])
