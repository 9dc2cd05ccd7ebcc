"""MoGe-2 adapter: one still image in, one metric GeometryFrame (depth, points, normals, validity, intrinsics) out.

The model runs once per image, at most `max_input_size` on the long edge: MoGe-2 resamples to its own token grid
inside the graph (`num_tokens` sets its detail level) and returns maps at the size it was fed, so feeding more
pixels than that only costs time. Everything after the model (focal and shift recovery, metric depth,
re-projection) is NumPy in geometry/moge.py, because the published ONNX exports stop at the raw heads.

Input and output names and dtypes are read from the session, never assumed: exports differ in the dtype and rank
of `num_tokens` (a 0-d int64 in the official files, `[1]` in some community ones) and in whether a `normal` head
exists; without one, normals are derived from the metric points.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from ...contract import ModelUnavailableError
from ...contract.catalog import Family, ModelEntry
from ..geometry.frame import GeometryFrame
from ..geometry.moge import geometry_from_moge, num_tokens
from ..inference import SessionHandle
from ..media import fit_long_edge_size, resize
from .base import Adapter

_INTEGER_TYPES = {"tensor(int64)": np.int64, "tensor(int32)": np.int32}


def normals_from_points(points: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Unit surface normals (H, W, 3) of camera-space points, facing the camera (OpenCV axes).

    Central differences along the image rows and columns span the surface's tangent plane; their cross product,
    ordered so a fronto-parallel surface gets (0, 0, −1), is the geometric normal. Valid pixels without a valid
    neighbourhood get the camera-facing normal; invalid pixels get zero, as in geometry_from_moge.
    """
    along_x = np.gradient(points.astype(np.float64), axis=1)
    along_y = np.gradient(points.astype(np.float64), axis=0)
    normal = np.cross(along_y, along_x)
    length = np.linalg.norm(normal, axis=-1, keepdims=True)
    usable = valid & (length[..., 0] > 1e-12)
    # A pixel next to an invalid one differences against a zeroed point: not a surface.
    for axis in (0, 1):
        for shift in (-1, 1):
            usable &= np.roll(valid, shift, axis=axis)
    fallback = np.where(valid[..., None], (0.0, 0.0, -1.0), 0.0)
    normal = np.where(usable[..., None], normal / np.maximum(length, 1e-12), fallback)
    return normal.astype(np.float32)


@dataclass(frozen=True)
class MoGeResult:
    """One analysed image: the frame every writer consumes, and how it was made."""

    frame: GeometryFrame
    analysed_size: tuple[int, int]  # (width, height) fed to the model
    num_tokens: int
    timings: dict[str, float]  # seconds: preprocess, model, postprocess


class MoGe2Adapter(Adapter):
    name: ClassVar[str] = "moge2"
    family: ClassVar[Family] = Family("geometry")
    # Dynamic H/W and num_tokens partitions fail inside CoreML; static-shape-only keeps them on CPU.
    coreml_options: ClassVar[dict[str, str]] = {"RequireStaticInputShapes": "1"}

    def __init__(self, entry: ModelEntry, handle: SessionHandle) -> None:
        super().__init__(entry, handle)
        images = [
            item for item in self.inputs.values() if item.type.startswith("tensor(float") and len(item.shape) == 4
        ]
        tokens = [item for item in self.inputs.values() if item.type in _INTEGER_TYPES]
        if len(images) != 1 or len(tokens) > 1 or not {"points", "mask"} <= set(self.outputs):
            raise ModelUnavailableError(
                f"{entry.label} does not look like a MoGe-2 export (an image input and points and mask outputs)."
            )
        self.image_input = images[0].name
        self.tokens_input = tokens[0].name if tokens else None
        self._tokens_dtype = _INTEGER_TYPES[tokens[0].type] if tokens else np.int64
        self._tokens_shape: tuple[int, ...] = () if not tokens or len(tokens[0].shape) == 0 else (1,)

    def feeds(self, rgb: np.ndarray, resolution_level: int) -> dict[str, np.ndarray]:
        """The session inputs for an (H, W, 3) RGB image in [0, 1] (mean and std are applied in the graph)."""
        tensor = np.ascontiguousarray(rgb.transpose(2, 0, 1)[None], dtype=self.input_dtype(self.image_input))
        feeds = {self.image_input: tensor}
        if self.tokens_input is not None:
            tokens = np.asarray(num_tokens(resolution_level), dtype=self._tokens_dtype).reshape(self._tokens_shape)
            feeds[self.tokens_input] = tokens
        return feeds

    def prepare(self, rgb: np.ndarray, *, max_input_size: int, resolution_level: int) -> dict[str, np.ndarray]:
        """Session inputs for display RGB (models/display.py, over black), long edge at most `max_input_size`."""
        height, width = rgb.shape[:2]
        analysed = fit_long_edge_size((width, height), max_input_size)
        model_rgb = np.clip(resize(rgb, analysed), 0.0, 1.0) if analysed != (width, height) else rgb
        return self.feeds(model_rgb, resolution_level)

    def frame(self, outputs: Mapping[str, np.ndarray]) -> GeometryFrame:
        """The metric frame of one run's raw outputs (batch item 0)."""
        points = np.asarray(outputs["points"][0], dtype=np.float32)
        mask = np.asarray(outputs["mask"][0], dtype=np.float32)
        scale = float(np.asarray(outputs["metric_scale"]).reshape(-1)[0]) if "metric_scale" in outputs else 1.0
        if "normal" in outputs:
            return geometry_from_moge(points, np.asarray(outputs["normal"][0], dtype=np.float32), mask, scale)
        frame = geometry_from_moge(points, np.zeros_like(points), mask, scale)
        return replace(frame, normal=normals_from_points(frame.points, frame.valid))

    def analyse(
        self, rgb: np.ndarray, *, max_input_size: int, resolution_level: int, last_run: bool = True
    ) -> MoGeResult:
        """Run MoGe-2 once on display RGB and post-process one metric frame (raw outputs are not kept)."""
        started = time.perf_counter()
        feeds = self.prepare(rgb, max_input_size=max_input_size, resolution_level=resolution_level)
        prepared = time.perf_counter()
        outputs = self.run(feeds, last_run=last_run)
        del feeds
        ran = time.perf_counter()
        frame = self.frame(outputs)
        finished = time.perf_counter()
        return MoGeResult(
            frame=frame,
            analysed_size=frame.size,
            num_tokens=num_tokens(resolution_level),
            timings={"preprocess": prepared - started, "model": ran - prepared, "postprocess": finished - ran},
        )
