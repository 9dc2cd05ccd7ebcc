"""Depth Anything 3 adapter (multiview family): frames in, per-view depth and, where the export has them, cameras.

Two kinds of export exist, and the session says which one was downloaded:
- the camera-decoder export: `image [1, N, 3, H, W]` → `depth`, `depth_conf` `[1, N, H, W]`, `extrinsics
  [1, N, 3, 4]` (world → camera, OpenCV axes) and `intrinsics [1, N, 3, 3]` in pixels of the H × W input;
- depth-only exports: `image [batch, 3, H, W]` → `depth [batch, 1, H, W]`, one view per run.

Exports whose height and width are dynamic are fed what the official pipeline feeds the model
(`upper_bound_resize`): the frame resized so its longest side is the process resolution S (504 by default),
the aspect kept, both sides rounded to the nearest multiple of DINOv2's 14-pixel patch, no padding. Exports
fixed at one size (the community depth-only files: 504 × 504; per-aspect conversions: e.g. 504 × 280 for 16:9)
get the official resize for frames whose official size is exactly theirs; other frames are letterboxed:
scaled to fit with their aspect kept and centred on padding (the model then sees a different picture than the
official pipeline would: the reason to prefer a dynamic export, or one made for the footage's aspect).
`ViewPlacement` remembers where the picture sits in what the model saw, so depth is cut back out and resized
to the frame's size, and intrinsics are re-expressed in the frame's own pixels. Extrinsics stay world → camera
with OpenCV axes (x right, y down, z forward); the multiview job chooses the world.

A fixed-size export letterboxing a frame is never silent: `letterbox_warning` says so (the jobs put it in their
log and provenance, and the add-on reports it), naming the export that avoids it (a dynamic-size conversion).

Reference view. DA3 moves a data-chosen reference view first, but only for three views or more; a camera
export traced with three keeps the choice for two views as well (issue 21: rotations 66–130° off when it picks
the second view). The converter's exports since revision 2 (ONNX metadata `imageforge.da3_export`) gate it
inside the graph; through an earlier export `check_view_count` refuses fewer than three views, saying how to
get a current one.

Inputs are ImageNet-normalised unless the catalog entry says `"normalization": "none"`; attention heads for
the memory estimate come from the entry's `attention_heads` (default 6, DA3 Small's); `image_size` is the
process resolution of dynamic exports (default 504, the official one).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ...contract import InputError, ModelUnavailableError
from ...contract.catalog import Family, ModelEntry
from ..geometry.attention import PATCH_SIZE, AttentionEstimate
from ..inference import SessionHandle
from ..media import resize
from .base import Adapter

DEFAULT_SIZE = 504
DEFAULT_HEADS = 6
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], np.float32)
REVISION_KEY = "imageforge.da3_export"  # the converter's ONNX metadata (converter/da3_export.py)
GATED_REVISION = 2  # the first revision whose graph skips the reference-view choice below three views
REFERENCE_VIEWS = 3  # DA3's THRESH_FOR_REF_SELECTION


def nearest_patch_multiple(length: int) -> int:
    """The official rounding to the patch grid: the nearer multiple of 14, ties upwards, at least one patch."""
    down = length // PATCH_SIZE * PATCH_SIZE
    up = down + PATCH_SIZE
    return max(PATCH_SIZE, up if up - length <= length - down else down)


def upper_bound_size(source_size: tuple[int, int], longest: int) -> tuple[int, int]:
    """(width, height) the official `upper_bound_resize` gives a `source_size` frame at process resolution `longest`."""
    width, height = source_size
    scale = longest / max(width, height)
    return (nearest_patch_multiple(max(1, round(width * scale))), nearest_patch_multiple(max(1, round(height * scale))))


@dataclass(frozen=True)
class ViewPlacement:
    """Where a `source_size` frame sits in the model's `canvas` (width, height): its content box in pixels."""

    canvas: tuple[int, int]  # (width, height) of the model input
    source_size: tuple[int, int]  # (width, height)
    box: tuple[int, int, int, int]  # x0, y0, width, height of the picture inside the canvas

    @classmethod
    def letterbox(cls, source_size: tuple[int, int], canvas: tuple[int, int]) -> ViewPlacement:
        """Fit into a fixed (width, height) canvas, aspect kept, centred on padding (exports of another aspect)."""
        width, height = source_size
        scale = min(canvas[0] / width, canvas[1] / height)
        inner = (max(1, min(canvas[0], round(width * scale))), max(1, min(canvas[1], round(height * scale))))
        box = ((canvas[0] - inner[0]) // 2, (canvas[1] - inner[1]) // 2, *inner)
        return cls(canvas, (width, height), box)

    @classmethod
    def upper_bound(cls, source_size: tuple[int, int], longest: int) -> ViewPlacement:
        """The official `upper_bound_resize`: the whole canvas is the picture, no padding."""
        canvas = upper_bound_size(source_size, longest)
        return cls(canvas, source_size, (0, 0, *canvas))

    def place(self, rgb: np.ndarray) -> np.ndarray:
        """(H, W, 3) source RGB → the canvas (h, w, 3) with the picture resized into its box and zeros around it."""
        x0, y0, width, height = self.box
        canvas = np.zeros((self.canvas[1], self.canvas[0], 3), np.float32)
        canvas[y0 : y0 + height, x0 : x0 + width] = resize(rgb, (width, height))
        return canvas

    def crop_to_source(self, plane: np.ndarray) -> np.ndarray:
        """A model map on the canvas → the frame's (H, W): the picture's box cut out and resized back."""
        x0, y0, width, height = self.box
        return resize(np.ascontiguousarray(plane[y0 : y0 + height, x0 : x0 + width], np.float32), self.source_size)

    def crop(self, plane: np.ndarray) -> np.ndarray:
        """An (…, h, w) model map → its picture box at model resolution (no resampling)."""
        x0, y0, width, height = self.box
        return plane[..., y0 : y0 + height, x0 : x0 + width]

    def intrinsics_to_source(self, matrix: np.ndarray) -> dict[str, float]:
        """3×3 intrinsics in canvas pixels → fx, fy, cx, cy in the frame's pixels (continuous, centres at +0.5)."""
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
    """One model run over N views, in the pixels of the model's canvas."""

    depth: np.ndarray  # (N, h, w) on the canvas
    confidence: np.ndarray | None  # (N, h, w), None for depth-only exports without it
    extrinsics: np.ndarray | None  # (N, 3, 4) world → camera, float64; None for depth-only exports
    intrinsics: np.ndarray | None  # (N, 3, 3) in canvas pixels
    outputs: dict[str, np.ndarray]  # raw outputs (the last run's, for depth-only exports)
    seconds: float


class DepthAnything3Adapter(Adapter):
    name: ClassVar[str] = "da3"
    family: ClassVar[Family] = Family("multiview")

    def __init__(self, entry: ModelEntry, handle: SessionHandle) -> None:
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
        declared = images[0].shape[-2:]
        self.dynamic = not all(isinstance(dim, int) for dim in declared)
        self.canvas = None if self.dynamic else (int(declared[1]), int(declared[0]))  # (width, height) when fixed
        self.size = int(entry.options.get("image_size", DEFAULT_SIZE)) if self.canvas is None else max(self.canvas)
        if self.size % PATCH_SIZE:
            raise ModelUnavailableError(f"{entry.label} expects {self.size} px, not a multiple of {PATCH_SIZE}.")
        self.heads = int(entry.options.get("attention_heads", DEFAULT_HEADS))
        self.revision = export_revision(handle.session)
        # views one run may take and give what DA3's own code gives: any number through a gated export
        self.min_views = 1 if not self.has_cameras or self.revision >= GATED_REVISION else REFERENCE_VIEWS
        self.normalize = str(entry.options.get("normalization", "imagenet")).lower() == "imagenet"

    def placement(self, source_size: tuple[int, int]) -> ViewPlacement:
        """Where a frame of `source_size` goes: the official upper-bound resize wherever the export can take it
        (any frame when H and W are dynamic; frames of the export's own aspect when they are fixed), else a
        letterbox into the fixed canvas."""
        official = ViewPlacement.upper_bound(source_size, self.size)
        if self.canvas is None or official.canvas == self.canvas:
            return official
        return ViewPlacement.letterbox(source_size, self.canvas)

    def letterbox_warning(self, source_size: tuple[int, int]) -> str | None:
        """The one sentence a job warns with when frames of `source_size` are letterboxed (None when they are not)."""
        placement = self.placement(source_size)
        if placement.box == (0, 0, *placement.canvas):
            return None
        width, height = source_size
        canvas = "×".join(map(str, placement.canvas))
        return (
            f"{self.entry.label} takes {canvas} pictures only, so the {width}×{height} frames were letterboxed "
            "(padded) and the model saw another picture than Depth Anything 3's own pipeline gives it: depth and "
            "cameras are less accurate. A converted model takes every size: Prepare DA3 camera model… in the "
            "Models panel "
            "(or 'imageforge models convert DA3_SMALL')."
        )

    def check_view_count(self, views: int) -> None:
        """Refuse a run the export cannot give DA3's own answer for (two views through an ungated export)."""
        if views < self.min_views:
            raise InputError(
                f"{self.entry.label} was converted before two-frame clips were handled: it reorders {views} "
                f"view{'s' if views != 1 else ''} where Depth Anything 3 does not, and the cameras would be wrong. "
                f"Use {REFERENCE_VIEWS} or more frames, or convert the model again (Models panel: Prepare DA3 camera "
                "model…, or 'imageforge models convert DA3_SMALL')."
            )

    def place_view(self, rgb: np.ndarray) -> tuple[np.ndarray, ViewPlacement]:
        """(H, W, 3) display RGB → the (3, h, w) model tensor of one view and where the picture sits in it."""
        placement = self.placement((rgb.shape[1], rgb.shape[0]))
        canvas = placement.place(rgb)
        if self.normalize:
            canvas = (canvas - IMAGENET_MEAN) / IMAGENET_STD
            x0, y0, width, height = placement.box
            padding = np.ones(canvas.shape[:2], bool)
            padding[y0 : y0 + height, x0 : x0 + width] = False
            canvas[padding] = 0.0  # padding is the mean colour, which normalises to zero
        return np.ascontiguousarray(canvas.transpose(2, 0, 1)), placement

    def attention(self, views: int) -> AttentionEstimate:
        """The attention memory one run over `views` views needs (global attention spans all of them)."""
        return AttentionEstimate(views=views if self.has_cameras else 1, image_size=self.size, heads=self.heads)

    def infer(self, views: np.ndarray, *, last_run: bool) -> ViewsResult:
        """Run (N, 3, h, w) placed views: together through a camera export, one by one otherwise."""
        dtype = self.input_dtype(self.image_input)
        started = time.perf_counter()
        height, width = views.shape[-2:]
        if self.has_cameras:
            self.check_view_count(views.shape[0])
            outputs = self.run({self.image_input: np.ascontiguousarray(views[None], dtype=dtype)}, last_run=last_run)
            count = views.shape[0]
            confidence = outputs.get("depth_conf")
            return ViewsResult(
                depth=np.asarray(outputs["depth"], np.float32).reshape(count, height, width),
                confidence=None
                if confidence is None
                else np.asarray(confidence, np.float32).reshape(count, height, width),
                extrinsics=np.asarray(outputs["extrinsics"], np.float64).reshape(count, -1, 4)[:, :3, :4],
                intrinsics=np.asarray(outputs["intrinsics"], np.float64).reshape(count, 3, 3),
                outputs={name: np.asarray(value) for name, value in outputs.items()},
                seconds=time.perf_counter() - started,
            )
        depths, confidences, outputs = [], [], {}
        for index, view in enumerate(views):
            feeds = {self.image_input: np.ascontiguousarray(view[None], dtype=dtype)}
            outputs = self.run(feeds, last_run=last_run and index == len(views) - 1)
            depths.append(np.asarray(outputs[self.depth_output], np.float32).reshape(height, width))
            if "depth_conf" in outputs:
                confidences.append(np.asarray(outputs["depth_conf"], np.float32).reshape(height, width))
        return ViewsResult(
            depth=np.stack(depths),
            confidence=np.stack(confidences) if confidences else None,
            extrinsics=None,
            intrinsics=None,
            outputs={name: np.asarray(value) for name, value in outputs.items()},
            seconds=time.perf_counter() - started,
        )


def export_revision(session: object) -> int:
    """The converter's export revision in the ONNX metadata (0: none, an earlier or a foreign export)."""
    try:
        metadata = session.get_modelmeta().custom_metadata_map  # type: ignore[attr-defined]
        return int(metadata.get(REVISION_KEY, 0))
    except (AttributeError, TypeError, ValueError):
        return 0
