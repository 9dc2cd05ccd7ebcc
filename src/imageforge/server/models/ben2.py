"""BEN2 background removal: a fixed-size matte model (1024² in the published export).

Pre-processing: the image, composited over black and display-encoded (display.py), is resized to the
model's input size with Lanczos whether it shrinks or grows (as BEN2.py's PIL resize does) and normalised
per the catalog entry's `normalization` option, because public sources disagree on ImageNet mean/std versus
none and the right choice belongs to the exported file, not the code.
Post-processing is the official BEN2 pipeline's (BEN2.py `postprocess_image`), in its order: the sigmoid
matte is resized to the size the caller wants with PyTorch-style bilinear (half-pixel centres, no
antialiasing), then min–max normalised over that result; then it is multiplied with the source alpha so
transparent pixels stay so. docs/parity.md has the measured agreement (and what the earlier normalise-first,
Lanczos/bicubic order cost at the edges).

The published graph ends in a sigmoid, which the min–max stretch assumes; a catalog entry that declares
`"final_activation": "sigmoid"` has its file checked when it loads, and an export that ends otherwise is
refused with a clear message instead of giving a wrongly scaled matte.

Tensor names, the input size and dtypes are read from the session: the published fp16 file outputs
float16, and re-exports rename tensors.
"""

from __future__ import annotations

import numpy as np

from ...contract import ModelUnavailableError
from ...contract.catalog import Family, ModelEntry
from ..cpu_copies.onnx_messages import final_operator
from ..inference import SessionHandle
from ..media import resize, resize_bilinear
from .base import Adapter

IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
NORMALIZATIONS = ("imagenet", "none")
DEFAULT_SIZE = 1024  # used only when an export leaves the spatial dimensions symbolic
FLAT_RANGE = 1e-6  # a matte whose values span less than this has no contrast to stretch


class Ben2Adapter(Adapter):
    name = "ben2"
    family = Family("background")

    def __init__(self, entry: ModelEntry, handle: SessionHandle):
        super().__init__(entry, handle)
        if len(self.inputs) != 1 or not self.outputs:
            raise ModelUnavailableError(f"{entry.label} does not look like a BEN2 model (one image input expected).")
        self.normalization = str(entry.options.get("normalization", "imagenet")).lower()
        if self.normalization not in NORMALIZATIONS:
            raise ModelUnavailableError(
                f"{entry.label} has normalization '{self.normalization}' in the catalog; use imagenet or none."
            )
        (self.input_name,) = self.inputs
        self.output_name = self.outputs[0]
        shape = list(self.inputs[self.input_name].shape)
        if len(shape) != 4:
            raise ModelUnavailableError(f"{entry.label} does not look like a BEN2 model (its input is not NCHW).")
        self.input_size = tuple(dim if isinstance(dim, int) and dim > 0 else DEFAULT_SIZE for dim in shape[2:])
        self.dtype = self.input_dtype(self.input_name)
        activation = entry.options.get("final_activation")
        if activation is not None:
            self._check_final_activation(str(activation))

    def _check_final_activation(self, expected: str) -> None:
        found = final_operator(self.handle.model_path, self.output_name)
        if (found or "").lower() != expected.lower():
            raise ModelUnavailableError(
                f"{self.entry.label}'s file does not end in a {expected} (its output comes from "
                f"{found or 'no operator'}); delete it in the Models panel and download it again."
            )

    def preprocess(self, rgb: np.ndarray) -> np.ndarray:
        """Display RGB (H, W, 3) in [0, 1] → the model's [1, 3, h, w] input, normalised."""
        height, width = self.input_size
        scaled = np.clip(resize(rgb, (width, height), lanczos=True), 0.0, 1.0)  # BEN2.py: PIL Lanczos both ways
        if self.normalization == "imagenet":
            scaled = (scaled - IMAGENET_MEAN) / IMAGENET_STD
        return np.ascontiguousarray(scaled.transpose(2, 0, 1)[None], dtype=self.dtype)

    def infer(self, rgb: np.ndarray, *, last_run: bool) -> np.ndarray:
        """The model's raw matte output for display RGB (H, W, 3), as the session returned it."""
        outputs = self.run({self.input_name: self.preprocess(rgb)}, last_run=last_run)
        return outputs[self.output_name]

    def postprocess(self, raw: np.ndarray, size: tuple[int, int], source_alpha: np.ndarray | None) -> np.ndarray:
        """Raw output → float32 (H, W) alpha in [0, 1] at `size` (width, height), times the source alpha.

        Resize first (bilinear), then stretch the resized matte's own range to [0, 1], as BEN2.py does.
        """
        matte = np.asarray(raw, dtype=np.float32)
        while matte.ndim > 2:
            matte = matte[0]
        alpha = resize_bilinear(matte, size)
        low, high = float(alpha.min()), float(alpha.max())
        if high - low < FLAT_RANGE:
            np.clip(alpha, 0.0, 1.0, out=alpha)
        else:
            alpha -= low
            alpha *= 1.0 / (high - low)
        if source_alpha is not None:
            alpha *= source_alpha
        return alpha

    def matte(
        self, rgb: np.ndarray, size: tuple[int, int], source_alpha: np.ndarray | None, *, last_run: bool
    ) -> np.ndarray:
        """Analyse display RGB (any size) and return the alpha at `size` (width, height)."""
        return self.postprocess(self.infer(rgb, last_run=last_run), size, source_alpha)
