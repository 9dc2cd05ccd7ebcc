"""LaMa inpainting (Big-LaMa and exports like it): fill a hole in an image from its surroundings.

Signature of the published dynamic exports (g-ronimo/lama `lama.onnx`, `lama_fp16.onnx`): one input
[1, 4, H, W] float32 = RGB in [0, 1] with the hole zeroed, then the binary hole mask (1 = fill); one output
[1, 3, H, W] RGB in [0, 1]. H and W must be multiples of 32 (the network downsamples five times and its
Fourier units need even sizes at every level), so the adapter pads the image by mirroring its edge to the
next multiple (the padding is context, never hole) and crops the output back. Exports with a fixed input
size (the 512² variants) get the image resized to that size and the output resized back.

Tensor names and dtypes are read from the session. The output is clamped to [0, 1]. What the adapter
returns covers the whole array it was given; confining the result to the hole is the caller's job
(job_steps/hole_fill.py), so that pixels outside the hole are never touched.
"""

from __future__ import annotations

import numpy as np

from ...contract import ModelUnavailableError
from ...contract.catalog import Family, ModelEntry
from ..inference import SessionHandle
from ..media import resize
from .base import Adapter

MULTIPLE = 32


class LamaAdapter(Adapter):
    name = "lama"
    family = Family("inpaint")

    def __init__(self, entry: ModelEntry, handle: SessionHandle):
        super().__init__(entry, handle)
        if len(self.inputs) != 1 or not self.outputs:
            raise ModelUnavailableError(
                f"{entry.label} does not look like a LaMa export (one 4-channel image-and-mask input expected)."
            )
        (self.input_name,) = self.inputs
        self.output_name = self.outputs[0]
        shape = list(self.inputs[self.input_name].shape)
        if len(shape) != 4 or (isinstance(shape[1], int) and shape[1] != 4):
            raise ModelUnavailableError(f"{entry.label} does not look like a LaMa export (input is not [1, 4, H, W]).")
        height, width = shape[2:]
        static = isinstance(height, int) and isinstance(width, int) and height > 0 and width > 0
        self.fixed_size: tuple[int, int] | None = (width, height) if static else None  # (width, height)
        self.dtype = self.input_dtype(self.input_name)

    def inpaint(self, rgb: np.ndarray, hole: np.ndarray, *, last_run: bool) -> np.ndarray:
        """Display RGB (h, w, 3) in [0, 1] and a boolean hole (h, w) → the model's RGB (h, w, 3) in [0, 1]."""
        height, width = hole.shape
        if self.fixed_size is not None and self.fixed_size != (width, height):
            scaled = np.clip(resize(rgb, self.fixed_size), 0.0, 1.0)
            scaled_hole = resize(hole.astype(np.float32), self.fixed_size) > 0.0
            inpainted = self.inpaint(scaled, scaled_hole, last_run=last_run)
            filled: np.ndarray = np.clip(resize(inpainted, (width, height)), 0.0, 1.0)
            return filled
        padded_height, padded_width = padded_size(height, MULTIPLE), padded_size(width, MULTIPLE)
        pad = ((0, padded_height - height), (0, padded_width - width))
        colour = np.pad(rgb[..., :3], (*pad, (0, 0)), mode="symmetric")
        mask = np.pad(hole, pad, mode="constant", constant_values=False).astype(np.float32)
        colour = colour * (1.0 - mask[..., None])  # the hole is zeroed, as LaMa was trained
        feed = np.concatenate([colour, mask[..., None]], axis=2).transpose(2, 0, 1)[None]
        output = self.run({self.input_name: np.ascontiguousarray(feed, dtype=self.dtype)}, last_run=last_run)
        result = np.asarray(output[self.output_name], dtype=np.float32)
        expected = (1, 3, padded_height, padded_width)
        if result.shape != expected:
            raise ModelUnavailableError(
                f"{self.entry.label} returned shape {list(result.shape)}; expected {list(expected)}."
            )
        return np.clip(result[0, :, :height, :width].transpose(1, 2, 0), 0.0, 1.0)


def padded_size(length: int, multiple: int) -> int:
    return -(-length // multiple) * multiple
