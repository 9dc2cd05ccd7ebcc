"""Writing MoGe-2's geometry as the files Blender lands: `depth` (EXR of camera-space points, alpha = coverage ×
validity), `depth_metadata` (contract/depth_metadata.py: sizes, pixel intrinsics, reference depth) and `normal`
(PNG), for a region of the source (docs/jobs.md has the formats).

The depth-plane job writes the whole image; the cutout job passes a region (its matte's bounds) and a
coverage (alpha × matte), and every result is then cropped to that region, intrinsics included. The normal map
is sampled and written band by band (media/png_stream.py): at 16384² the whole map as floats would be 3 GiB,
and its bilinear sampling several times that. A failing later writer leaves earlier files behind only until
the handler clears the job's outputs (server/handler.py), so a partial set is never a result.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...contract import InputError
from ...contract.depth_metadata import DepthMetadata
from ...contract.jobs import NormalMode
from ...contract.results import SUBJECT_GEOMETRY, GeometryResults, ResultName
from ..geometry.frame import GeometryFrame
from ..media import Image, resize, sample_bilinear, write_exr, write_json
from ..media.png_stream import write_png_bands
from .progress import JobProgress
from .region import Region

FLAT = np.array([0.5, 0.5, 1.0], np.float32)  # the encoded colour of masked normal-map pixels
KEEP = 0.5  # coverage above which a pixel counts as part of the result


def alpha_of(image: Image) -> np.ndarray | None:
    """The source's straight alpha (H, W) in [0, 1], or None for an opaque image."""
    if not image.has_alpha:
        return None
    alpha: np.ndarray = np.clip(image.straight().pixels[..., 3], 0.0, 1.0)
    return alpha


def write_geometry(
    progress: JobProgress,
    directory: Path,
    frame: GeometryFrame,
    *,
    source_size: tuple[int, int],
    coverage: np.ndarray | None,
    region: Region,
    depth: bool,
    normals: NormalMode,
    names: GeometryResults = SUBJECT_GEOMETRY,
) -> dict[ResultName, str]:
    """Write `depth` + `depth_metadata` and/or `normal` for `region` of the source into `directory`; `coverage`
    is (H, W) or None. Returns the results written (name → file name).

    `names` are the results written, each file named after its result (the cutout's BACKGROUND_GEOMETRY)."""
    analysed_size = frame.size
    area = region.scaled(source_size, analysed_size)
    weight = frame.valid.astype(np.float32)
    if coverage is not None:
        scaled = coverage if analysed_size == source_size else np.clip(resize(coverage, analysed_size), 0.0, 1.0)
        weight *= scaled
    written: dict[ResultName, str] = {}
    if depth:
        rows, columns = area.slices
        points, kept = frame.points[rows, columns], weight[rows, columns]
        progress.writing("Writing depth")
        channels = {"R": points[..., 0], "G": points[..., 1], "B": points[..., 2], "A": kept}
        written[names.depth] = f"{names.depth}.exr"
        write_exr(directory / written[names.depth], channels)
        progress.writing("Writing depth metadata")
        metadata = depth_metadata(frame, source_size, region, area, kept)
        written[names.depth_metadata] = f"{names.depth_metadata}.json"
        write_json(directory / written[names.depth_metadata], metadata.to_json())
    if normals is not NormalMode.NONE:
        progress.writing("Writing normal map")

        def normal_rows(top: int, bottom: int) -> np.ndarray:
            band = Region(region.x0, region.y0 + top, region.x1, region.y0 + bottom)
            return normal_map(frame, source_size, band, coverage, normals)

        written[names.normal] = f"{names.normal}.png"
        write_png_bands(directory / written[names.normal], size=region.size, rows=normal_rows, channels=3)
    return written


def depth_metadata(
    frame: GeometryFrame, source_size: tuple[int, int], region: Region, area: Region, kept: np.ndarray
) -> DepthMetadata:
    """The camera of `region`: intrinsics in source pixels, shifted to the region's origin."""
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
    return DepthMetadata(
        image_size=region.size,
        analysed_size=area.size,
        fx=pixels["fx"],
        fy=pixels["fy"],
        cx=pixels["cx"] - region.x0,
        cy=pixels["cy"] - region.y0,
        reference_depth=reference,
    )


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
