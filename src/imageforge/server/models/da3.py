"""Depth Anything 3 adapter (multiview family): frames in, per-view depth and, where the export has them, cameras.

Two kinds of export exist, and the session says which one was downloaded:
- the camera-decoder export: `image [1, N, 3, S, S]` → `depth`, `depth_conf` `[1, N, S, S]`, `extrinsics
  [1, N, 3, 4]` (world → camera, OpenCV axes) and `intrinsics [1, N, 3, 3]` in pixels of the S × S input;
- depth-only exports: `image [batch, 3, H, W]` → `depth [batch, 1, H, W]`, one view per run.

S is fixed at export (504 by default, a multiple of DINOv2's 14-pixel patch), so every frame is letterboxed:
scaled to fit S × S with its aspect ratio kept and centred on padding. `Letterbox` remembers where the picture
sits, so depth is cropped back out and resized to the frame's size, and intrinsics are re-expressed in the
frame's own pixels. Extrinsics stay world → camera with OpenCV axes (x right, y down, z forward); the
multiview job chooses the world.

Inputs are ImageNet-normalised unless the catalog entry says `"normalization": "none"`; attention heads for
the memory estimate come from the entry's `attention_heads` (default 6, DA3 Small's).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ...contract import ModelUnavailableError
from ...contract.catalog import Family
from ..geometry.attention import PATCH_SIZE, AttentionEstimate
from ..media import resize
from .base import Adapter

DEFAULT_SIZE = 504
DEFAULT_HEADS = 6
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], np.float32)


@dataclass(frozen=True)
class Letterbox:
    """Where a `source_size` frame sits inside the model's `size` × `size` square (content box in pixels)."""

    size: int
    source_size: tuple[int, int]  # (width, height)
    box: tuple[int, int, int, int]  # x0, y0, width, height of the picture inside the square

    @classmethod
    def fit(cls, source_size: tuple[int, int], size: int) -> Letterbox:
        width, height = source_size
        scale = size / max(width, height)
        inner = (max(1, min(size, round(width * scale))), max(1, min(size, round(height * scale))))
        return cls(size, (width, height), ((size - inner[0]) // 2, (size - inner[1]) // 2, *inner))

    def place(self, rgb: np.ndarray) -> np.ndarray:
        """(H, W, 3) source RGB → (S, S, 3) with the picture resized into its box and zeros around it."""
        x0, y0, width, height = self.box
        square = np.zeros((self.size, self.size, 3), np.float32)
        square[y0 : y0 + height, x0 : x0 + width] = resize(rgb, (width, height))
        return square

    def crop_to_source(self, plane: np.ndarray) -> np.ndarray:
        """An (S, S) model map → the frame's (H, W): the picture's box cut out and resized back."""
        x0, y0, width, height = self.box
        return resize(np.ascontiguousarray(plane[y0 : y0 + height, x0 : x0 + width], np.float32), self.source_size)

    def crop(self, plane: np.ndarray) -> np.ndarray:
        """An (…, S, S) model map → its picture box at model resolution (no resampling)."""
        x0, y0, width, height = self.box
        return plane[..., y0 : y0 + height, x0 : x0 + width]

    def intrinsics_to_source(self, matrix: np.ndarray) -> dict[str, float]:
        """3×3 intrinsics in square pixels → fx, fy, cx, cy in the frame's pixels (continuous, centres at +0.5)."""
        x0, y0, width, height = self.box
        scale_x, scale_y = width / self.source_size[0], height / self.source_size[1]
        return {
            "fx": float(matrix[0, 0] / scale_x),
            "fy": float(matrix[1, 1] / scale_y),
            "cx": float((matrix[0, 2] - x0) / scale_x),
            "cy": float((matrix[1, 2] - y0) / scale_y),
        }


@dataclass(frozen=True)
class ViewsResult:
    """One model run over N views, in the model's S × S pixels."""

    depth: np.ndarray  # (N, S, S)
    confidence: np.ndarray | None  # (N, S, S), None for depth-only exports without it
    extrinsics: np.ndarray | None  # (N, 3, 4) world → camera, float64; None for depth-only exports
    intrinsics: np.ndarray | None  # (N, 3, 3) in S × S pixels
    outputs: dict[str, np.ndarray]  # raw outputs (the last run's, for depth-only exports)
    seconds: float


class DepthAnything3Adapter(Adapter):
    name: ClassVar[str] = "da3"
    family: ClassVar[Family] = Family.MULTIVIEW

    def __init__(self, entry, handle) -> None:
        super().__init__(entry, handle)
        images = [item for item in self.inputs.values() if item.type.startswith("tensor(float")]
        if len(self.inputs) != 1 or len(images) != 1 or len(images[0].shape) not in (4, 5) or not self.outputs:
            raise ModelUnavailableError(f"{entry.label} does not look like a Depth Anything 3 export.")
        self.image_input = images[0].name
        rank = len(images[0].shape)
        self.has_cameras = rank == 5
        if self.has_cameras and not {"depth", "extrinsics", "intrinsics"} <= set(self.outputs):
            raise ModelUnavailableError(f"{entry.label} takes several views but lacks depth or camera outputs.")
        self.depth_output = "depth" if "depth" in self.outputs else self.outputs[0]
        declared = images[0].shape[-1]
        self.size = declared if isinstance(declared, int) else int(entry.options.get("image_size", DEFAULT_SIZE))
        if self.size % PATCH_SIZE:
            raise ModelUnavailableError(f"{entry.label} expects {self.size} px, not a multiple of {PATCH_SIZE}.")
        self.heads = int(entry.options.get("attention_heads", DEFAULT_HEADS))
        self.normalize = str(entry.options.get("normalization", "imagenet")).lower() == "imagenet"

    def letterbox(self, rgb: np.ndarray) -> tuple[np.ndarray, Letterbox]:
        """(H, W, 3) display RGB → the (3, S, S) model tensor of one view and where the picture sits in it."""
        placement = Letterbox.fit((rgb.shape[1], rgb.shape[0]), self.size)
        square = placement.place(rgb)
        if self.normalize:
            square = (square - IMAGENET_MEAN) / IMAGENET_STD
            x0, y0, width, height = placement.box
            padding = np.ones(square.shape[:2], bool)
            padding[y0 : y0 + height, x0 : x0 + width] = False
            square[padding] = 0.0  # padding is the mean colour, which normalises to zero
        return np.ascontiguousarray(square.transpose(2, 0, 1)), placement

    def attention(self, views: int) -> AttentionEstimate:
        """The attention memory one run over `views` views needs (global attention spans all of them)."""
        return AttentionEstimate(views=views if self.has_cameras else 1, image_size=self.size, heads=self.heads)

    def infer(self, views: np.ndarray, *, last_run: bool) -> ViewsResult:
        """Run (N, 3, S, S) letterboxed views: together through a camera export, one by one otherwise."""
        dtype = self.input_dtype(self.image_input)
        started = time.perf_counter()
        if self.has_cameras:
            outputs = self.run({self.image_input: np.ascontiguousarray(views[None], dtype=dtype)}, last_run=last_run)
            count = views.shape[0]
            confidence = outputs.get("depth_conf")
            return ViewsResult(
                depth=np.asarray(outputs["depth"], np.float32).reshape(count, self.size, self.size),
                confidence=None
                if confidence is None
                else np.asarray(confidence, np.float32).reshape(count, self.size, self.size),
                extrinsics=np.asarray(outputs["extrinsics"], np.float64).reshape(count, -1, 4)[:, :3, :4],
                intrinsics=np.asarray(outputs["intrinsics"], np.float64).reshape(count, 3, 3),
                outputs={name: np.asarray(value) for name, value in outputs.items()},
                seconds=time.perf_counter() - started,
            )
        depths, confidences, outputs = [], [], {}
        for index, view in enumerate(views):
            feeds = {self.image_input: np.ascontiguousarray(view[None], dtype=dtype)}
            outputs = self.run(feeds, last_run=last_run and index == len(views) - 1)
            depths.append(np.asarray(outputs[self.depth_output], np.float32).reshape(self.size, self.size))
            if "depth_conf" in outputs:
                confidences.append(np.asarray(outputs["depth_conf"], np.float32).reshape(self.size, self.size))
        return ViewsResult(
            depth=np.stack(depths),
            confidence=np.stack(confidences) if confidences else None,
            extrinsics=None,
            intrinsics=None,
            outputs={name: np.asarray(value) for name, value in outputs.items()},
            seconds=time.perf_counter() - started,
        )
