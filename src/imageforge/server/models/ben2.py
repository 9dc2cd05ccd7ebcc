"""BEN2 background removal: a fixed-size matte model (1024² in the published export).

Pre-processing (background.py): the image, composited over black and display-encoded (display.py), rounded
to 8 bits and resized to the model's input size with PIL's 8-bit Lanczos whether it shrinks or grows, as
BEN2.py's `image.resize(..., Image.LANCZOS)` does on the 8-bit image it opened; normalised per the catalog
entry's `normalization` option, because public sources disagree on ImageNet mean/std versus none and the right
choice belongs to the exported file, not the code.
Post-processing is the official BEN2 pipeline's (BEN2.py `postprocess_image`), in its order: the sigmoid
matte is resized to the size the caller wants with PyTorch-style bilinear (half-pixel centres, no
antialiasing), then min–max normalised over that result; then it is multiplied with the source alpha so
transparent pixels stay so. docs/parity.md has the measured agreement (and what the earlier normalise-first,
Lanczos/bicubic order and the float resize cost).

The published graph ends in a sigmoid, which the min–max stretch assumes; a catalog entry that declares
`"final_activation": "sigmoid"` has its file checked when it loads, and an export that ends otherwise is
refused with a clear message instead of giving a wrongly scaled matte.
"""

from __future__ import annotations

import numpy as np
from PIL import Image as PILImage

from ..media import resize_bilinear
from .background import IMAGENET_MEAN, IMAGENET_STD, NORMALIZATIONS, BackgroundAdapter, matte_plane

__all__ = ["IMAGENET_MEAN", "IMAGENET_STD", "NORMALIZATIONS", "Ben2Adapter"]

FLAT_RANGE = 1e-6  # a matte whose values span less than this has no contrast to stretch


class Ben2Adapter(BackgroundAdapter):
    name = "ben2"
    model_name = "BEN2"
    input_filter = PILImage.Resampling.LANCZOS

    def postprocess(self, raw: np.ndarray, size: tuple[int, int], source_alpha: np.ndarray | None) -> np.ndarray:
        """Raw output → float32 (H, W) alpha in [0, 1] at `size` (width, height), times the source alpha.

        Resize first (bilinear), then stretch the resized matte's own range to [0, 1], as BEN2.py does.
        """
        alpha = resize_bilinear(matte_plane(raw), size)
        low, high = float(alpha.min()), float(alpha.max())
        if high - low < FLAT_RANGE:
            np.clip(alpha, 0.0, 1.0, out=alpha)
        else:
            alpha -= low
            alpha *= 1.0 / (high - low)
        if source_alpha is not None:
            alpha *= source_alpha
        return alpha
