"""What generate-multiview-cameras returns besides cameras and depth: the point cloud and the COLMAP model.

One second pass over the analysed frames (the first kept only the model's small tensors): every point frame's
kept pixels are back-projected (geometry/point_cloud.py) and coloured from the frame itself; with the COLMAP
export every analysed frame is also written as an 8-bit PNG beside the model. Results:
- `points` → points.ply (media/ply.py): x y z in the camera path's world, red green blue.
- `colmap` → colmap.zip: `sparse/0/cameras.txt`, `images.txt`, `points3D.txt` (geometry/colmap.py) and
  `images/frame_NNNNNN.png` (the source frame numbers), the layout COLMAP and the splatting trainers read.
"""

from __future__ import annotations

import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..geometry.colmap import ColmapImage, write_colmap_text
from ..geometry.point_cloud import FramePoints, PointOptions, frame_points, quotas
from ..media import MediaSource, atomic_file, write_png
from ..media.ply import write_points_ply
from ..media.source import Frame
from ..models.display import display_pixels, over_black
from .progress import JobProgress, Stage

SEED = 0  # the same job gives the same cloud


@dataclass(frozen=True)
class AnalysedFrames:
    """Which source frames the job analysed, and what it found for them."""

    numbers: Sequence[int]  # source frame numbers, one per analysed frame
    step: int  # the job's frame_step
    extrinsics: np.ndarray  # (n, 3, 4) world-to-camera
    intrinsics: Sequence[dict[str, float]]  # fx, fy, cx, cy per frame, source pixels
    depth: np.ndarray  # (n, H, W), may be a memory map
    confidence: np.ndarray  # (n, H, W)


def write_reconstruction(
    progress: JobProgress,
    stage: Stage,
    source: MediaSource,
    analysed: AnalysedFrames,
    options: PointOptions,
    directory: Path,
    *,
    points_file: str,
    colmap_file: str | None,
) -> None:
    """points.ply (always) and, when `colmap_file` is named, the COLMAP archive, into `directory`; the frames
    fill the job's `stage`."""
    count = len(analysed.numbers)
    chosen = set(options.frames(count))
    quota = quotas(len(chosen), options.max_points)
    rng = np.random.default_rng(SEED)
    found: list[FramePoints] = []
    colours: list[np.ndarray] = []
    with tempfile.TemporaryDirectory(dir=directory, prefix=".colmap-") as scratch:
        images = Path(scratch) / "images"
        if colmap_file:
            images.mkdir()
        for position, frame in enumerate(_analysed(source, analysed)):
            progress.within(stage, position / count, f"Point cloud: frame {position + 1}/{count}")
            rgb = over_black(display_pixels(frame.image))[..., :3]
            if colmap_file:
                write_png(images / image_name(analysed.numbers[position]), rgb)
            if position not in chosen:
                continue
            camera = analysed.intrinsics[position]
            points = frame_points(
                position,
                np.asarray(analysed.depth[position]),
                np.asarray(analysed.confidence[position]),
                analysed.extrinsics[position],
                (camera["fx"], camera["fy"], camera["cx"], camera["cy"]),
                options,
                quota,
                rng,
            )
            found.append(points)
            sampled = rgb[points.pixels[:, 1], points.pixels[:, 0]]
            colours.append(np.clip(np.round(sampled * 255), 0, 255).astype(np.uint8))
        cloud = np.concatenate([item.points for item in found]) if found else np.zeros((0, 3))
        colour = np.concatenate(colours) if colours else np.zeros((0, 3), np.uint8)
        write_points_ply(directory / points_file, cloud.astype(np.float32), colour)
        if colmap_file:
            _write_colmap(Path(scratch), analysed, found, cloud, colour, (source.width, source.height))
            _pack(directory / colmap_file, Path(scratch))


def image_name(number: int) -> str:
    return f"frame_{number:06d}.png"


def _analysed(source: MediaSource, analysed: AnalysedFrames) -> Iterator[Frame]:
    """The source frames the job analysed, in order (every `step`-th, as many as were analysed)."""
    wanted = iter(analysed.numbers)
    number = next(wanted, None)
    for frame in source.frames():
        if number is None:
            return
        if frame.index % analysed.step == 0 and frame.number == number:
            yield frame
            number = next(wanted, None)


def _write_colmap(
    folder: Path,
    analysed: AnalysedFrames,
    found: list[FramePoints],
    cloud: np.ndarray,
    colour: np.ndarray,
    size: tuple[int, int],
) -> None:
    by_frame = {item.frame: item for item in found}
    observers = np.concatenate([np.full(len(item.points), item.frame) for item in found]) if found else np.zeros(0)
    first_id = 1
    images = []
    for position, number in enumerate(analysed.numbers):
        item = by_frame.get(position)
        seen = 0 if item is None else len(item.points)
        camera = analysed.intrinsics[position]
        images.append(
            ColmapImage(
                name=image_name(number),
                extrinsics=analysed.extrinsics[position],
                intrinsics=(camera["fx"], camera["fy"], camera["cx"], camera["cy"]),
                size=size,
                pixels=np.zeros((0, 2), np.int64) if item is None else item.pixels,
                point_ids=np.arange(first_id, first_id + seen),
            )
        )
        first_id += seen
    write_colmap_text(folder / "sparse" / "0", images, cloud, colour, observers.astype(np.int64))


def _pack(path: Path, folder: Path) -> None:
    """The COLMAP folder as one archive (PNGs stored, text deflated), written atomically."""
    with atomic_file(path) as temporary, zipfile.ZipFile(temporary, "w") as archive:
        for member in sorted(folder.rglob("*")):
            if member.is_file():
                compression = zipfile.ZIP_STORED if member.suffix == ".png" else zipfile.ZIP_DEFLATED
                archive.write(member, member.relative_to(folder).as_posix(), compress_type=compression)
