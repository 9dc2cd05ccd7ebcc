"""What every background-family adapter shares: display pixels → the model's input, its matte → alpha.

A background model (BEN2, BiRefNet) takes one RGB image at a fixed size and returns one matte channel. The
pipeline around it is its official code's, which differs per model only in a few settings a subclass declares:
- the resize to the model's size, done in 8 bits on the 8-bit image as the official code does it with PIL
  (`input_filter`: Lanczos for BEN2, bilinear for BiRefNet's torchvision `Resize`), from display pixels
  composited over black (display.py);
- the normalisation (catalog option `normalization`: `imagenet` or `none`, since exports differ);
- what turns the raw output into alpha at the caller's size (`postprocess`, per model);
- what the graph's last operation must be (catalog option `final_activation`), checked in the file on load.

Tensor names, the input size and dtypes are read from the session: published fp16 files may output float16,
and re-exports rename tensors. A graph whose output is not one matte channel is refused on load.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from PIL import Image as PILImage

from ...contract import ModelUnavailableError
from ...contract.catalog import Family, ModelEntry
from ..cpu_copies.onnx_messages import final_operator
from ..inference import SessionHandle
from .base import Adapter
from .display import over_black_8bit

IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
NORMALIZATIONS = ("imagenet", "none")
DEFAULT_SIZE = 1024  # used only when an export leaves the spatial dimensions symbolic


class BackgroundAdapter(Adapter):
    """Base of the background adapters. Subclasses set `name`, `input_filter`, `model_name` and
    `postprocess`; `final_activations` names what the catalog may declare as the graph's last operation."""

    family = Family("background")
    input_filter: ClassVar[PILImage.Resampling] = PILImage.Resampling.LANCZOS
    model_name: ClassVar[str] = "background"  # in refusals: "does not look like a BEN2 model"
    final_activations: ClassVar[tuple[str, ...]] = ("sigmoid",)

    def __init__(self, entry: ModelEntry, handle: SessionHandle):
        super().__init__(entry, handle)
        unlike = f"{entry.label} does not look like a {self.model_name} model"
        if len(self.inputs) != 1 or not self.outputs:
            raise ModelUnavailableError(f"{unlike} (one image input expected).")
        self.normalization = str(entry.options.get("normalization", "imagenet")).lower()
        if self.normalization not in NORMALIZATIONS:
            raise ModelUnavailableError(
                f"{entry.label} has normalization '{self.normalization}' in the catalog; use imagenet or none."
            )
        (self.input_name,) = self.inputs
        self.output_name = self.outputs[0]
        shape = list(self.inputs[self.input_name].shape)
        if len(shape) != 4 or (isinstance(shape[1], int) and shape[1] != 3):
            raise ModelUnavailableError(f"{unlike} (its input is not an NCHW RGB image).")
        output_shape = list(handle.session.get_outputs()[0].shape)
        if len(output_shape) not in (2, 3, 4) or (
            len(output_shape) == 4 and isinstance(output_shape[1], int) and output_shape[1] != 1
        ):
            raise ModelUnavailableError(f"{unlike} (its output {output_shape} is not a one-channel matte).")
        self.input_size = tuple(dim if isinstance(dim, int) and dim > 0 else DEFAULT_SIZE for dim in shape[2:])
        self.dtype = self.input_dtype(self.input_name)
        activation = entry.options.get("final_activation")
        self.final_activation = None if activation is None else str(activation).lower()
        if self.final_activation is not None:
            self._check_final_activation(self.final_activation)

    def _check_final_activation(self, expected: str) -> None:
        if expected not in self.final_activations:
            raise ModelUnavailableError(
                f"{self.entry.label} has final_activation '{expected}' in the catalog; "
                f"use {' or '.join(self.final_activations)}."
            )
        found = final_operator(self.handle.model_path, self.output_name) or ""
        ends_in_sigmoid = found.lower() == "sigmoid"
        if expected == "sigmoid" and not ends_in_sigmoid:
            raise ModelUnavailableError(
                f"{self.entry.label}'s file does not end in a sigmoid (its output comes from "
                f"{found or 'no operator'}); delete it in the Models panel and download it again."
            )
        if expected == "none" and ends_in_sigmoid:
            raise ModelUnavailableError(
                f"{self.entry.label}'s file already ends in a sigmoid, but its catalog entry says it outputs "
                "logits; correct final_activation in the catalog or use the model's published file."
            )

    def preprocess(self, pixels: np.ndarray) -> np.ndarray:
        """Display pixels (H, W, 3|4) in [0, 1], any size → the model's [1, 3, h, w] input, normalised.

        Composited over black, rounded to 8 bits and resized by PIL in 8 bits, as the official code does
        it to the 8-bit image it opens: for an 8-bit source the very same tensor (docs/parity.md).
        """
        height, width = self.input_size
        image = over_black_8bit(pixels)
        if image.size != (width, height):
            image = image.resize((width, height), self.input_filter)
        scaled = np.asarray(image, dtype=np.float32) / np.float32(255.0)
        if self.normalization == "imagenet":
            scaled = (scaled - IMAGENET_MEAN) / IMAGENET_STD
        return np.ascontiguousarray(scaled.transpose(2, 0, 1)[None], dtype=self.dtype)

    def infer(self, pixels: np.ndarray, *, last_run: bool) -> np.ndarray:
        """The model's raw matte output for display pixels (H, W, 3|4), as the session returned it."""
        outputs = self.run({self.input_name: self.preprocess(pixels)}, last_run=last_run)
        raw = outputs[self.output_name]
        if raw.ndim not in (2, 3, 4) or (raw.ndim >= 3 and int(np.prod(raw.shape[:-2])) != 1):
            raise ModelUnavailableError(
                f"{self.entry.label} returned {list(raw.shape)}, not a one-channel matte; "
                "it is not a background model this version can use."
            )
        return raw

    def postprocess(self, raw: np.ndarray, size: tuple[int, int], source_alpha: np.ndarray | None) -> np.ndarray:
        """Raw output → float32 (H, W) alpha in [0, 1] at `size` (width, height), times the source alpha."""
        raise NotImplementedError

    def matte(
        self, pixels: np.ndarray, size: tuple[int, int], source_alpha: np.ndarray | None, *, last_run: bool
    ) -> np.ndarray:
        """Analyse display pixels (any size) and return the alpha at `size` (width, height)."""
        return self.postprocess(self.infer(pixels, last_run=last_run), size, source_alpha)


def matte_plane(raw: np.ndarray) -> np.ndarray:
    """The (h, w) float32 plane of a model's [1, 1, h, w] (or [1, h, w], [h, w]) output."""
    matte = np.asarray(raw, dtype=np.float32)
    while matte.ndim > 2:
        matte = matte[0]
    return matte
