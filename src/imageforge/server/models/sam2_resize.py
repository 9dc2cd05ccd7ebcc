"""The two resamplings SAM 2's image predictor does, reproduced in NumPy to the float.

- Into the model: torchvision's `Resize((1024, 1024))` on a float tensor, which is `F.interpolate(mode="bilinear",
  antialias=True, align_corners=False)`: a separable triangle filter whose support widens with the reduction
  (PIL's BILINEAR), weights normalised per output pixel. Enlarging, it is plain bilinear with half-pixel centres.
- Out of it: the low-resolution mask logits (256²) to the image's size with `F.interpolate(mode="bilinear",
  align_corners=False)` and no antialiasing: source position (i + 0.5)·in/out − 0.5, clamped at 0.

Both work on a (height, width, channels) or (height, width) float32 array, one axis after the other.
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
    source = np.maximum((np.arange(output, dtype=np.float32) + 0.5) * np.float32(length / output) - 0.5, 0.0)
    low = np.floor(source).astype(np.int64)
    high = np.minimum(low + 1, length - 1)
    fraction = (source - low).astype(np.float32)
    moved = np.moveaxis(image, axis, 0).astype(np.float32, copy=False)
    shape = (output,) + (1,) * (moved.ndim - 1)
    result = moved[low] * (1.0 - fraction).reshape(shape) + moved[high] * fraction.reshape(shape)
    return np.moveaxis(result, 0, axis)
