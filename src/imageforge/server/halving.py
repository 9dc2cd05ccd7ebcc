"""Halve an image streamed as row bands, with a Lanczos-3 filter, without ever holding the whole image.

Upscaling by 2 runs a 4× model and halves its output (Real-ESRGAN's own "outscale"): a good 2× from a 4×
model beats a blurry 2× model. The 4× output of a large image is the biggest array of the job, so it is
halved band by band as the tiler finishes rows: rows are filtered horizontally at once, and vertically as
soon as the 12 input rows an output row needs have arrived. The kernel and its border handling (weights
normalised over the taps inside the image) are Pillow's LANCZOS for a factor of 2, so the streamed result
equals Pillow resizing the whole image.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

Sink = Callable[[int, np.ndarray], None]  # (first output row, float32 rows [h, W, C])

LOBES = 3
FACTOR = 2
TAPS = 2 * LOBES * FACTOR  # input samples per output sample


def lanczos(x: np.ndarray) -> np.ndarray:
    x = np.abs(np.asarray(x, dtype=np.float64))
    return np.where(x < LOBES, np.sinc(x) * np.sinc(x / LOBES), 0.0)


def halving_taps(length: int) -> tuple[np.ndarray, np.ndarray]:
    """For each of the length // 2 outputs: the TAPS input indices (clamped) and their normalised weights."""
    outputs = np.arange(length // FACTOR)
    centres = (outputs + 0.5) * FACTOR
    first = np.floor(centres - LOBES * FACTOR + 0.5).astype(np.int64)
    indices = first[:, None] + np.arange(TAPS)[None, :]
    weights = lanczos((indices - centres[:, None] + 0.5) / FACTOR)
    weights[(indices < 0) | (indices >= length)] = 0.0
    weights /= weights.sum(axis=1, keepdims=True)
    return np.clip(indices, 0, length - 1), weights.astype(np.float32)


def halve_rows(rows: np.ndarray, taps: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Filter and halve rows [h, W, C] along the width: [h, W // 2, C] float32.

    Every output column uses the same 12 weights on input columns 2j − 5 … 2j + 6, so the sum runs over
    strided views of a zero-padded copy (no gathers); border columns are then divided by the share of the
    weights that fell inside the image, which is exactly Pillow's normalisation over in-bounds taps.
    """
    indices, _ = taps
    outputs = indices.shape[0]
    kernel, norm = _kernel_and_norm(outputs, rows.shape[1])
    padded = np.pad(rows, ((0, 0), (LOBES * FACTOR - 1, LOBES * FACTOR), (0, 0)))
    out = np.zeros((rows.shape[0], outputs, rows.shape[2]), dtype=np.float32)
    scratch = np.empty_like(out)
    for tap in range(TAPS):
        np.multiply(padded[:, tap : tap + FACTOR * outputs : FACTOR], kernel[tap], out=scratch)
        out += scratch
    out /= norm[None, :, None]
    return out


def _kernel_and_norm(outputs: int, length: int) -> tuple[np.ndarray, np.ndarray]:
    """The interior output's weights and, per output, the fraction of them on in-bounds input samples."""
    centres = (np.arange(outputs) + 0.5) * FACTOR
    first = np.floor(centres - LOBES * FACTOR + 0.5).astype(np.int64)
    kernel = lanczos((np.arange(TAPS) - (LOBES * FACTOR - 0.5)) / FACTOR)
    kernel = (kernel / kernel.sum()).astype(np.float32)
    positions = first[:, None] + np.arange(TAPS)[None, :]
    inside = (positions >= 0) & (positions < length)
    return kernel, (kernel[None, :] * inside).sum(axis=1).astype(np.float32)


class BandHalver:
    """Receives rows of a height × width image top to bottom (`push`) and sends the halved rows to `sink`.

    Memory: the horizontally halved rows not yet used by every output row (at most a band plus 10 rows).
    """

    def __init__(self, height: int, width: int, sink: Sink):
        if height < FACTOR or width < FACTOR or height % FACTOR or width % FACTOR:
            raise ValueError(f"only even sizes of at least 2×2 are halved exactly, not {width}×{height}")
        self.height = height
        self.sink = sink
        self._columns = halving_taps(width)
        self._rows_indices, self._rows_weights = halving_taps(height)
        self._buffer = np.zeros((0, width // FACTOR, 0), dtype=np.float32)
        self._buffer_top = 0  # input row index of _buffer[0]
        self._received = 0
        self._next_output = 0

    def push(self, top: int, rows: np.ndarray) -> None:
        if top != self._received:
            raise ValueError(f"rows must arrive in order: expected row {self._received}, got {top}")
        halved = halve_rows(rows, self._columns)
        self._buffer = halved if self._buffer.shape[0] == 0 else np.concatenate([self._buffer, halved])
        self._received += rows.shape[0]
        self._emit()

    def _emit(self) -> None:
        outputs = self._rows_indices.shape[0]
        ready = self._next_output
        while ready < outputs and self._rows_indices[ready].max() < self._received:
            ready += 1
        if ready == self._next_output:
            return
        chosen = slice(self._next_output, ready)
        local = self._rows_indices[chosen] - self._buffer_top
        weights = self._rows_weights[chosen]
        out = np.zeros((ready - self._next_output, *self._buffer.shape[1:]), dtype=np.float32)
        for tap in range(TAPS):
            out += self._buffer[local[:, tap]] * weights[:, tap, None, None]
        self.sink(self._next_output, out)
        self._next_output = ready
        if ready < outputs:  # drop rows no later output needs
            keep_from = int(self._rows_indices[ready:].min())
            self._buffer = self._buffer[keep_from - self._buffer_top :].copy()
            self._buffer_top = keep_from

    @property
    def finished(self) -> bool:
        return self._next_output == self._rows_indices.shape[0]
