"""The two resamplings SAM 2's image predictor does, reproduced in NumPy to the float.

- Into the model: torchvision's `Resize((1024, 1024))` on a float tensor, which is `F.interpolate(mode="bilinear",
  antialias=True, align_corners=False)`: a separable triangle filter whose support widens with the reduction
  (PIL's BILINEAR), weights normalised per output pixel. Enlarging, it is plain bilinear with half-pixel centres.
- Out of it: the low-resolution mask logits (256²) to the image's size with `F.interpolate(mode="bilinear",
  align_corners=False)` and no antialiasing: source position (i + 0.5)·in/out − 0.5, clamped at 0.

Both work on a (height, width, channels) or (height, width) float32 array, one axis after the other.

`positive_mask` is the second one thresholded at 0, computed only where the result can be positive: a bilinear
value is a convex combination of its (at most) four source neighbours, so a pixel none of whose neighbours is
positive is not positive either. Inside that rectangle it runs the same float32 operations as `bilinear`, so the
mask is the same bit for bit (tests/server/models/test_sam2_resize.py); outside it is False. A click's mask
covers a part of the image, so most of the 2 Mpx of a 1080p upsampling are never computed.
"""

from __future__ import annotations

import numpy as np


def antialiased_bilinear(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """`image` (H, W[, C]) float32 resampled to `size` (width, height) as torchvision's antialiased Resize."""
    width, height = size
    across = _filter_axis(image, width, axis=1)
    return _filter_axis(across, height, axis=0)


def bilinear(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """`image` (H, W[, C]) float32 resampled to `size` (width, height) as F.interpolate's bilinear, no antialias."""
    width, height = size
    across = _linear_axis(image, width, axis=1)
    return _linear_axis(across, height, axis=0)


def positive_mask(logits: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """(height, width) booleans: `bilinear(logits, size) > 0` for a (H, W) float32 plane, computed only where it
    can be true."""
    width, height = size
    mask = np.zeros((height, width), bool)
    rows, columns = np.nonzero(logits > 0.0)
    if not rows.size:
        return mask
    across = _linear_taps(logits.shape[1], width) if logits.shape[1] != width else None
    down = _linear_taps(logits.shape[0], height) if logits.shape[0] != height else None
    ys = _reached(down, int(np.min(rows)), int(np.max(rows)))
    xs = _reached(across, int(np.min(columns)), int(np.max(columns)))
    if ys is None or xs is None:  # shrinking, no output pixel reads a positive one
        return mask
    plane: np.ndarray = logits.astype(np.float32, copy=False)
    if across is not None:  # for the source rows the wanted output rows read
        low, high, fraction = across
        first, stop = (int(np.min(down[0][ys])), int(np.max(down[1][ys])) + 1) if down else (ys.start, ys.stop)
        part = plane[first:stop]
        plane = np.zeros((logits.shape[0], xs.stop - xs.start), np.float32)
        plane[first:stop] = part[:, low[xs]] * (1.0 - fraction[xs]) + part[:, high[xs]] * fraction[xs]
    else:
        plane = plane[:, xs]
    if down is not None:
        low, high, fraction = down
        column = (slice(None), None)
        plane = plane[low[ys]] * (1.0 - fraction[ys])[column] + plane[high[ys]] * fraction[ys][column]
    else:
        plane = plane[ys]
    mask[ys, xs] = plane > 0.0
    return mask


Taps = tuple[np.ndarray, np.ndarray, np.ndarray]  # per output pixel: first source pixel, second, its weight


def _reached(taps: Taps | None, first: int, last: int) -> slice | None:
    """The output pixels whose bilinear taps touch source pixels `first`..`last` (taps None: the axis keeps its
    size): a contiguous range, since the taps only move forward along the axis (None: none does, which can happen
    when shrinking)."""
    if taps is None:
        return slice(first, last + 1)
    low, high, _ = taps
    reached = np.nonzero((high >= first) & (low <= last))[0]
    if not reached.size:
        return None
    return slice(int(reached[0]), int(reached[-1]) + 1)


def _linear_taps(length: int, output: int) -> Taps:
    """Per output pixel along one axis: the two source pixels and the weight of the second (F.interpolate's
    half-pixel centres, clamped at 0)."""
    source = np.maximum((np.arange(output, dtype=np.float32) + 0.5) * np.float32(length / output) - 0.5, 0.0)
    low = np.floor(source).astype(np.int64)
    high = np.minimum(low + 1, length - 1)
    return low, high, (source - low).astype(np.float32)


def _filter_axis(image: np.ndarray, output: int, *, axis: int) -> np.ndarray:
    length = image.shape[axis]
    if length == output:
        return image
    scale = length / output
    support = max(scale, 1.0)  # the bilinear filter reaches one input pixel, widened by the reduction
    inverse = 1.0 / support
    centres = (np.arange(output) + 0.5) * scale
    first = np.maximum((centres - support + 0.5).astype(np.int64), 0)  # int() truncates, as the kernels do
    stop = np.minimum((centres + support + 0.5).astype(np.int64), length)
    taps = int((stop - first).max())
    offsets = np.arange(taps)
    weights = 1.0 - np.abs((first[:, None] + offsets[None, :] - centres[:, None] + 0.5) * inverse)
    weights = np.where(offsets[None, :] < (stop - first)[:, None], np.maximum(weights, 0.0), 0.0)
    weights /= weights.sum(axis=1, keepdims=True)
    indices = np.minimum(first[:, None] + offsets[None, :], length - 1)
    moved = np.moveaxis(image, axis, 0).astype(np.float32, copy=False)
    result = np.zeros((output, *moved.shape[1:]), np.float32)
    shape = (output,) + (1,) * (moved.ndim - 1)
    for tap in range(taps):
        result += moved[indices[:, tap]] * weights[:, tap].astype(np.float32).reshape(shape)
    return np.moveaxis(result, 0, axis)


def _linear_axis(image: np.ndarray, output: int, *, axis: int) -> np.ndarray:
    length = image.shape[axis]
    if length == output:
        return image
    low, high, fraction = _linear_taps(length, output)
    moved = np.moveaxis(image, axis, 0).astype(np.float32, copy=False)
    shape = (output,) + (1,) * (moved.ndim - 1)
    result = moved[low] * (1.0 - fraction).reshape(shape) + moved[high] * fraction.reshape(shape)
    return np.moveaxis(result, 0, axis)
