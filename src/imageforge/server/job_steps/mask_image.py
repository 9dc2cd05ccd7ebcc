"""A grey or alpha image as a mask: Fill's `mask` parameter and a selection's `mask_file`.

An image with transparency gives its alpha (opaque = inside, e.g. a cutout); otherwise its grey value (white =
inside). Grey levels between are a soft edge. Fill accepts a mask of another size with the image's aspect ratio
(within 1 %) and resamples it; a selection's mask file must be of the image's size exactly, since a selection is
a region in the image's pixels.
"""

from __future__ import annotations

import numpy as np

from ...contract import InputError
from ..media import MediaSource, open_input, resize
from ..models.display import display_pixels

LUMA = np.array([0.2126, 0.7152, 0.0722], np.float32)
ASPECT_TOLERANCE = 0.01


def check_mask_shape(mask: MediaSource, size: tuple[int, int], *, resampled: bool = True) -> None:
    """A one-sentence InputError when `mask` cannot serve an image of `size` (width, height)."""
    width, height = size
    if (mask.width, mask.height) == size:
        return
    if not resampled or abs(mask.width / mask.height - width / height) > ASPECT_TOLERANCE * width / height:
        raise InputError(
            f"The mask is {mask.width}×{mask.height} pixels but the image is {width}×{height}; "
            f"use a mask of the image's {'shape' if resampled else 'size'}."
        )


def open_mask(path: str, size: tuple[int, int], *, resampled: bool = True) -> MediaSource:
    """The mask image at `path`, its header checked against the image's `size` (nothing decoded yet)."""
    mask = open_input(path, still_only=True)
    check_mask_shape(mask, size, resampled=resampled)
    return mask


def read_mask(mask: MediaSource, size: tuple[int, int]) -> np.ndarray:
    """The weight (H, W) in [0, 1] at `size`: the mask's alpha if it has transparency, else its grey."""
    pixels: np.ndarray = np.clip(display_pixels(mask.read_still()), 0.0, 1.0)
    weight: np.ndarray
    if pixels.shape[2] == 4 and float(pixels[..., 3].min()) < 1.0:
        weight = pixels[..., 3]
    elif np.array_equal(pixels[..., 0], pixels[..., 1]) and np.array_equal(pixels[..., 1], pixels[..., 2]):
        weight = pixels[..., 0]
    else:
        weight = pixels[..., :3] @ LUMA
    weight = np.ascontiguousarray(weight, dtype=np.float32)
    if weight.shape[::-1] != size:
        weight = np.clip(resize(weight, size), 0.0, 1.0)
    return weight
