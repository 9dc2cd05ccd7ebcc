"""generate-depth-plane-geometry: MoGe-2 metric geometry of one still, as the files Blender lands.

The source is composited on black and analysed once (long edge ≤ `max_input_size`). Results (docs/jobs.md):
- `depth`: float32 EXR at the analysed resolution, ZIP-compressed: R, G, B = camera-space X, Y, Z in metres
  (OpenCV axes: x right, y down, z forward), A = source alpha × validity. Points rather than bare depth, so
  the add-on needs no intrinsics to build the mesh and invalid pixels carry A = 0 instead of a magic value.
- `depth_metadata`: JSON with `image_size` and `analysed_size` [w, h], pixel intrinsics `fx`, `fy`, `cx`,
  `cy` at the source size, and `reference_depth` (median of the kept pixels, metres) for placing the plane.
- `normal`: RGB PNG at the source size, (n + 1) / 2 of camera-space normals (OpenCV axes, as the add-on
  expects), masked pixels flat (0.5, 0.5, 1). Sampled and written band by band (media/png_stream.py): at
  16384² the whole map as floats would be 3 GiB, and its bilinear sampling several times that.

The writers here are shared with the cutout job, which passes a region (its selection's bounds) and a
coverage (alpha × selection): every result is then cropped to that region, intrinsics included.

Cancellation is checked between the model run and each writer. A writer writes under a temporary name
(media/atomic.py), and `OutputSet` deletes what earlier writers finished if a later one fails or the job is
cancelled, so a job never leaves a depth file without its metadata.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ...contract import Device, InputError
from ...contract.catalog import Family
from ...contract.jobs import DepthPlaneParams, NormalMode
from ..geometry.frame import GeometryFrame
from ..media import Image, fit_long_edge_size, open_input, resize, sample_bilinear, write_exr, write_json
from ..media.png_stream import write_png_bands
from ..models.display import display_pixels, over_black, over_black_at
from ..models.moge2 import MoGe2Adapter, MoGeResult
from .image_job import JobProgress, log_model_time, prepare_adapter
from .outputs import OutputSet

FLAT = np.array([0.5, 0.5, 1.0], np.float32)  # the encoded colour of masked normal-map pixels
KEEP = 0.5  # coverage above which a pixel counts as part of the result


def run_generate_depth_plane_geometry(context: Any, params: DepthPlaneParams) -> dict[str, str]:
    source = open_input(params.input, still_only=True)  # headers only: a bad file fails before any download
    progress = JobProgress(context)
    adapter = load_geometry(context, progress, params.model, params.device)
    progress.stage(0.08, "Reading input")
    image = source.read_still()
    rgb = geometry_rgb(display_pixels(image), params.max_input_size)
    result = analyse(progress, adapter, rgb, params.max_input_size, params.resolution_level)
    size, coverage = image.size, alpha_of(image)
    del image, rgb  # the colour is analysed: only the alpha is needed at the source size (saves 3–4 GiB at 16384²)
    with OutputSet(Path(context.directory)) as outputs:
        write_geometry(
            progress,
            outputs,
            result.frame,
            source_size=size,
            coverage=coverage,
            region=Region.whole(size),
            depth=True,
            normals=NormalMode.OBJECT,
        )
    log_model_time(context, progress, adapter)
    return outputs.result


def geometry_rgb(pixels: np.ndarray, max_input_size: int) -> np.ndarray:
    """Display pixels over black at MoGe-2's analysis size: what the adapter's prepare makes of them (its own
    resize is then a no-op), composited per channel so no full-size RGB copy is made (3 GiB at 16384²)."""
    height, width = pixels.shape[:2]
    analysed = fit_long_edge_size((width, height), max_input_size)
    if analysed == (width, height):
        return over_black(pixels)
    return np.clip(over_black_at(pixels, analysed), 0.0, 1.0)


def load_geometry(context: Any, progress: JobProgress, model: str | None, device: Device) -> MoGe2Adapter:
    return prepare_adapter(context, progress, model, Family.GEOMETRY, device, MoGe2Adapter)


def analyse(
    progress: JobProgress, adapter: MoGe2Adapter, rgb: np.ndarray, max_input_size: int, resolution_level: int
) -> MoGeResult:
    """Run MoGe-2 once on display RGB composited over black, with a progress stage before and a check after."""
    progress.stage(0.1, f"Running {adapter.entry.label}")
    result = adapter.analyse(rgb, max_input_size=max_input_size, resolution_level=resolution_level)
    progress.context.log(
        f"Analysed {result.analysed_size[0]}×{result.analysed_size[1]} with {result.num_tokens} tokens; "
        f"valid {result.frame.valid.mean():.1%}; timings { ({k: round(v, 3) for k, v in result.timings.items()}) }"
    )
    progress.stage(0.8, "Writing result")
    return result


def alpha_of(image: Image) -> np.ndarray | None:
    """The source's straight alpha (H, W) in [0, 1], or None for an opaque image."""
    if not image.has_alpha:
        return None
    return np.clip(image.straight().pixels[..., 3], 0.0, 1.0)


@dataclass(frozen=True)
class Region:
    """A box of whole pixels, end-exclusive: columns x0 … x1 − 1 and rows y0 … y1 − 1."""

    x0: int
    y0: int
    x1: int
    y1: int

    @classmethod
    def whole(cls, size: tuple[int, int]) -> Region:
        return cls(0, 0, size[0], size[1])

    @property
    def size(self) -> tuple[int, int]:
        return (self.x1 - self.x0, self.y1 - self.y0)

    @property
    def slices(self) -> tuple[slice, slice]:
        return slice(self.y0, self.y1), slice(self.x0, self.x1)

    def scaled(self, size: tuple[int, int], target: tuple[int, int]) -> Region:
        """The smallest box of `target`-size pixels covering this box of `size`-size pixels."""
        sx, sy = target[0] / size[0], target[1] / size[1]
        x0, y0 = math.floor(self.x0 * sx + 1e-9), math.floor(self.y0 * sy + 1e-9)
        x1, y1 = math.ceil(self.x1 * sx - 1e-9), math.ceil(self.y1 * sy - 1e-9)
        return Region(max(0, x0), max(0, y0), min(target[0], max(x1, x0 + 1)), min(target[1], max(y1, y0 + 1)))


def write_geometry(
    progress: JobProgress,
    outputs: OutputSet,
    frame: GeometryFrame,
    *,
    source_size: tuple[int, int],
    coverage: np.ndarray | None,
    region: Region,
    depth: bool,
    normals: NormalMode,
    prefix: str = "",
) -> None:
    """Write `depth` + `depth_metadata` and/or `normal` for `region` of the source; `coverage` is (H, W) or None.

    `prefix` goes before each result name and file name (the cutout's `background_depth`)."""
    analysed_size = frame.size
    area = region.scaled(source_size, analysed_size)
    weight = frame.valid.astype(np.float32)
    if coverage is not None:
        scaled = coverage if analysed_size == source_size else np.clip(resize(coverage, analysed_size), 0.0, 1.0)
        weight *= scaled
    if depth:
        rows, columns = area.slices
        points, kept = frame.points[rows, columns], weight[rows, columns]
        progress.stage(0.84, "Writing depth")
        channels = {"R": points[..., 0], "G": points[..., 1], "B": points[..., 2], "A": kept}
        outputs.write(f"{prefix}depth", f"{prefix}depth.exr", lambda path: write_exr(path, channels))
        progress.stage(0.88, "Writing depth metadata")
        metadata = depth_metadata(frame, source_size, region, area, kept)
        outputs.write(
            f"{prefix}depth_metadata", f"{prefix}depth_metadata.json", lambda path: write_json(path, metadata)
        )
    if normals is not NormalMode.NONE:
        progress.stage(0.9, "Writing normal map")

        def normal_rows(top: int, bottom: int) -> np.ndarray:
            band = Region(region.x0, region.y0 + top, region.x1, region.y0 + bottom)
            return normal_map(frame, source_size, band, coverage, normals)

        write = partial(write_png_bands, size=region.size, rows=normal_rows, channels=3)
        outputs.write(f"{prefix}normal", f"{prefix}normal.png", write)


def depth_metadata(
    frame: GeometryFrame, source_size: tuple[int, int], region: Region, area: Region, kept: np.ndarray
) -> dict[str, Any]:
    """The JSON of docs/jobs.md for `region`: intrinsics in source pixels, shifted to the region's origin."""
    pixels = frame.intrinsics.in_pixels(*source_size)
    depth = frame.depth[area.slices]
    valid = frame.valid[area.slices]
    # The region's kept pixels; else its valid ones; else the whole image's (a cutout of sky still gets a plane).
    for values, chosen in ((depth, valid & (kept > KEEP)), (depth, valid), (frame.depth, frame.valid)):
        if chosen.any():
            reference = float(np.median(values[chosen]))
            break
    else:
        raise InputError("The geometry model found no usable depth in this image; try a clearer photo.")
    return {
        "image_size": list(region.size),
        "analysed_size": list(area.size),
        "fx": pixels["fx"],
        "fy": pixels["fy"],
        "cx": pixels["cx"] - region.x0,
        "cy": pixels["cy"] - region.y0,
        "reference_depth": reference,
    }


def normal_map(
    frame: GeometryFrame,
    source_size: tuple[int, int],
    region: Region,
    coverage: np.ndarray | None,
    mode: NormalMode,
) -> np.ndarray:
    """(h, w, 3) encoded normals of `region` at the source resolution.

    OBJECT: camera-space normals in OpenCV axes (the add-on turns them into Blender's camera axes). TANGENT:
    relative to a flat card facing the camera, in Blender's tangent convention (x right, y up, z out of the
    card), which is the OpenCV normal with y and z negated. Masked pixels are flat (0.5, 0.5, 1) either way.
    """
    normal, valid = sample_at_source(frame, source_size, region)
    keep = valid > KEEP
    if coverage is not None:
        keep &= coverage[region.slices] > KEEP
    if mode is NormalMode.TANGENT:
        normal = normal * np.array([1.0, -1.0, -1.0], np.float32)
    encoded = (normal + 1.0) / 2.0
    encoded[~keep] = FLAT
    return encoded


def sample_at_source(
    frame: GeometryFrame, source_size: tuple[int, int], region: Region
) -> tuple[np.ndarray, np.ndarray]:
    """Unit normals (h, w, 3) and validity (h, w) in [0, 1] at the source pixels of `region`.

    Bilinear at the exact source pixel centres, evaluated for the region only: a small cutout of a large photo
    never resamples the whole map, and the crop lines up with the source to a fraction of a pixel.
    """
    if frame.size == source_size:
        rows, columns = region.slices
        return frame.normal[rows, columns], frame.valid[rows, columns].astype(np.float32)
    (width, height), (analysed_w, analysed_h) = source_size, frame.size
    xs = (np.arange(region.x0, region.x1) + 0.5) * analysed_w / width - 0.5
    ys = (np.arange(region.y0, region.y1) + 0.5) * analysed_h / height - 0.5
    stacked = np.concatenate([frame.normal, frame.valid[..., None].astype(np.float32)], axis=2)
    sampled = sample_bilinear(stacked, xs, ys)
    normal = sampled[..., :3]
    normal /= np.maximum(np.linalg.norm(normal, axis=-1, keepdims=True), 1e-12)
    return normal.astype(np.float32), sampled[..., 3]
