"""generate-multiview-cameras: Depth Anything 3 over a video or frame sequence → one camera path and per-frame depth.

Memory guard. The ONNX exports compute global attention naively, so one run over N views at S px needs about
heads × (N × (S/14)²)² × 4 bytes (geometry/attention.py). That is estimated before any frame is decoded: above
`memory_budget_gib` the job refuses with a message that says how many frames would fit, or, with `windowed`,
splits the sequence into overlapping windows of as many frames as fit.

Windows. Each window has its own world and scale. Window k+1 shares four fifths of its frames with window k; the
similarity that maps the shared cameras of k+1 onto their averages so far (geometry/alignment.py: rotation from
the shared cameras, scale from the shared frames' depth maps) is applied to all of k+1's cameras and its depth
is scaled by the same factor, so the whole sequence ends up in the first window's world: one consistent path.
A frame's camera is the average over every window that contains it; its depth comes from the first
(drift measured in docs/benchmarks.md, bench/window_drift.py).

Results (docs/jobs.md):
- `cameras` (cameras.json, contract/cameras.py's versioned `MultiviewCameras`): per frame, world-to-camera 3×4
  extrinsics [R | t] with OpenCV camera axes (x right, y down, z forward), the world being the first frame's
  camera, and pixel intrinsics fx, fy, cx, cy at the source size; translations and depth share the model's units.
- `depth` (depth.npz): float32 `depth` and `confidence` [frames, height, width] at the source size, and the
  source frame numbers `frames`. They are streamed through memory-mapped .npy files into the archive, so a
  long 4K sequence never needs all its depth maps in memory at once.
- with `points` (or `export=colmap`): `points` (points.ply), the confident depth pixels in the cameras' world;
  with `export=colmap`: `colmap` (colmap.zip), a COLMAP text model with the frames as its images
  (job_steps/reconstruction.py).
"""

from __future__ import annotations

import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...contract import InputError, ModelUnavailableError, ResourceExhaustedError
from ...contract.cameras import FrameCamera, MultiviewCameras
from ...contract.jobs import GENERATE_MULTIVIEW_CAMERAS, MultiviewParams, SceneExport
from ...contract.results import ResultName
from .. import provenance
from ..geometry.alignment import PoseAverage, align_windows
from ..geometry.attention import GIB, AttentionEstimate
from ..geometry.point_cloud import PointOptions
from ..job_context import JobContext, JobResults
from ..job_runners import runs
from ..job_steps.model_loading import log_model_time, prepare_adapter
from ..job_steps.progress import PREPARING, JobProgress, JobStages, Stage
from ..job_steps.reconstruction import AnalysedFrames, write_reconstruction
from ..media import MediaKind, MediaSource, atomic_file, open_input, write_json
from ..models.da3 import DepthAnything3Adapter, ViewPlacement, ViewsResult
from ..models.display import display_pixels, over_black

# two shared frames to align through and at least one new frame per window; also DA3's reference-view threshold,
# so every window runs as DA3's own code would run it, whichever export
MIN_WINDOW = 3
# the share of a window's frames the next window repeats: every frame is then seen by about five windows and its
# camera is their average, which halves the drift at the default budget against sharing half (docs/benchmarks.md,
# bench/window_drift.py), for 2.5 times the model runs of half
WINDOW_OVERLAP = 0.8
POINTS_FILE = "points.ply"
COLMAP_FILE = "colmap.zip"
CONVENTION = (
    "world-to-camera [R | t], OpenCV camera axes (x right, y down, z forward); "
    "the world is the first frame's camera; translations in the model's depth units"
)


@dataclass(frozen=True)
class Views:
    """ViewPlacemented frames ready for the model, and where each picture sits in its square."""

    tensors: list[np.ndarray]  # (3, h, w) float16 each: half the memory, far below the model's precision
    placements: list[ViewPlacement]
    numbers: list[int]  # source frame numbers
    source_size: tuple[int, int]


READING_FRAMES = Stage("Reading frames", 20)
ESTIMATING = Stage("Running model", 50)  # every window, and their alignment
POINTS = Stage("Point cloud", 17)  # with points or export=colmap
STAGES = JobStages(PREPARING, READING_FRAMES, ESTIMATING)
STAGES_WITH_POINTS = JobStages(PREPARING, READING_FRAMES, ESTIMATING, POINTS)


@runs(GENERATE_MULTIVIEW_CAMERAS)
def run_generate_multiview_cameras(context: JobContext, params: MultiviewParams) -> JobResults:
    source = open_input(params.input)
    expected = selected_count(source, params.frame_step, params.max_frames)
    progress = JobProgress(context, STAGES_WITH_POINTS if wants_points(params) else STAGES)
    adapter = prepare_adapter(context, progress, params.model, params.device, DepthAnything3Adapter)
    if not adapter.has_cameras:
        raise ModelUnavailableError(
            f"{adapter.entry.label} predicts depth only; camera paths need a Depth Anything 3 model with cameras, "
            "which the Models panel's Prepare DA3 camera model… (or 'imageforge models convert DA3_SMALL') makes once."
        )
    adapter.check_view_count(expected)
    plan_windows(adapter, expected, params.memory_budget_gib, params.windowed)  # refuse before decoding
    views = read_views(progress, source, adapter, params.frame_step, params.max_frames)
    letterbox = adapter.letterbox_warning(views.source_size)
    if letterbox is not None:
        provenance.note_input_warning(context, letterbox)
    windows = plan_windows(adapter, len(views.numbers), params.memory_budget_gib, params.windowed)
    context.log(f"{len(views.numbers)} frames in {len(windows)} window(s): {[(w.start, w.stop - 1) for w in windows]}")
    directory = Path(context.directory)
    frames, (width, height) = len(views.numbers), views.source_size
    with tempfile.TemporaryDirectory(dir=directory, prefix=".depth-") as scratch:
        members = {name: Path(scratch) / f"{name}.npy" for name in ("depth", "confidence", "frames")}
        depth, confidence = (
            np.lib.format.open_memmap(members[name], mode="w+", dtype=np.float32, shape=(frames, height, width))
            for name in ("depth", "confidence")
        )
        extrinsics, intrinsics = solve_windows(progress, adapter, views, windows, depth, confidence)
        extrinsics = rebase_on_first(extrinsics)
        if wants_points(params):
            analysed = AnalysedFrames(views.numbers, params.frame_step, extrinsics, intrinsics, depth, confidence)
            colmap = COLMAP_FILE if params.export is SceneExport.COLMAP else None
            options = PointOptions(
                params.point_frame_step, params.point_confidence, params.max_points, params.point_tear_ratio
            )
            write_reconstruction(progress, POINTS, source, analysed, options, directory, points_file=POINTS_FILE,
                                 colmap_file=colmap)  # fmt: skip
        depth.flush()
        confidence.flush()
        del depth, confidence  # unmapped before the archive reads the files
        np.save(members["frames"], np.asarray(views.numbers, np.int64))
        progress.writing("Writing cameras")
        document = cameras_document(adapter, views, windows, extrinsics, intrinsics)
        write_json(directory / "cameras.json", document.to_json())
        progress.writing("Writing depth")
        stream_npz(directory / "depth.npz", members)
    log_model_time(context, progress, adapter)
    results = {ResultName.CAMERAS: "cameras.json", ResultName.DEPTH: "depth.npz"}
    if wants_points(params):
        results[ResultName.POINTS] = POINTS_FILE
    if params.export is SceneExport.COLMAP:
        results[ResultName.COLMAP] = COLMAP_FILE
    return results


def wants_points(params: MultiviewParams) -> bool:
    return params.points or params.export is SceneExport.COLMAP


def selected_count(source: MediaSource, step: int, max_frames: int) -> int:
    """How many frames the job will use; a still or a one-frame selection is the user's mistake."""
    if source.kind is MediaKind.STILL:
        raise InputError(
            f"'{source.path.name}' is a single image; camera paths need a video or a frame sequence of two or more."
        )
    count = -(-source.frame_count // step)
    if max_frames:
        count = min(count, max_frames)
    if count < 2:
        raise InputError(
            f"'{source.path.name}' gives {count} frame at frame step {step}; camera paths need two or more frames."
        )
    return count


def plan_windows(
    adapter: DepthAnything3Adapter, count: int, budget_gib: float, windowed: bool, *, overlap: float = WINDOW_OVERLAP
) -> list[range]:
    """One window of every frame when its attention fits the budget, else windows that repeat `overlap` of the
    previous one's frames (at least two, at most all but one), or a refusal."""
    estimate = adapter.attention(count)
    if estimate.bytes <= budget_gib * GIB:
        return [range(count)]
    if not windowed:
        raise ResourceExhaustedError(estimate.over_budget_message(budget_gib))
    size = estimate.max_views(budget_gib * GIB)
    if size < MIN_WINDOW:  # MIN_WINDOW ≥ the adapter's min_views: every window is one DA3 itself would run
        needed = AttentionEstimate(MIN_WINDOW, adapter.size, adapter.heads).bytes / GIB
        raise ResourceExhaustedError(
            f"Windowed processing needs {MIN_WINDOW} frames per window, which at {adapter.size} px takes about "
            f"{needed:.2f} GiB of attention memory: raise the memory budget to at least that."
        )
    shared = min(size - 1, max(2, round(size * overlap)))
    windows, start = [], 0
    while start + size < count:
        windows.append(range(start, start + size))
        start += size - shared
    windows.append(range(count - size, count))  # the last window ends on the last frame, sharing more if need be
    assert all(len(window) == size >= MIN_WINDOW for window in windows)
    return windows


def read_views(
    progress: JobProgress, source: MediaSource, adapter: DepthAnything3Adapter, step: int, max_frames: int
) -> Views:
    """Decode every `step`-th frame (at most `max_frames`, 0 = all) and place it for the model."""
    tensors: list[np.ndarray] = []
    placements: list[ViewPlacement] = []
    numbers: list[int] = []
    total = selected_count(source, step, max_frames)
    for frame in source.frames():
        if frame.index % step:
            continue
        progress.within(READING_FRAMES, len(numbers) / total, f"Reading frame {len(numbers) + 1}/{total}")
        tensor, placement = adapter.place_view(over_black(display_pixels(frame.image)))
        tensors.append(tensor.astype(np.float16))
        placements.append(placement)
        numbers.append(frame.number)
        if max_frames and len(numbers) >= max_frames:
            break
    if len(numbers) < 2:
        raise InputError(f"'{source.path.name}' holds fewer than two readable frames; camera paths need two or more.")
    return Views(tensors, placements, numbers, (source.width, source.height))


def solve_windows(
    progress: JobProgress,
    adapter: DepthAnything3Adapter,
    views: Views,
    windows: list[range],
    depth: np.ndarray,
    confidence: np.ndarray,
) -> tuple[np.ndarray, list[dict[str, float]]]:
    """Run every window, bring each into the first window's world, fill `depth` and `confidence` in place.

    Returns world-to-camera extrinsics (frames × 3 × 4) in the first window's world, and source-pixel intrinsics.
    """
    count = len(views.numbers)
    cameras = PoseAverage(count)
    intrinsics: list[dict[str, float]] = [{}] * count
    earlier: list[tuple[range, ViewsResult, float]] = []  # the windows that still share frames, each with its scale
    scale = 1.0
    for number, window in enumerate(windows):
        progress.within(ESTIMATING, number / len(windows), f"Running model: window {number + 1}/{len(windows)}")
        batch = np.stack([views.tensors[index].astype(np.float32) for index in window])
        result = adapter.infer(batch, last_run=number == len(windows) - 1)
        poses = result.extrinsics
        assert poses is not None and result.intrinsics is not None
        earlier = [entry for entry in earlier if entry[0].stop > window.start]
        if earlier:
            progress.within(ESTIMATING, (number + 0.5) / len(windows), "Aligning windows")
            shared = [index for index in window if cameras.seen[index]]
            pairs = [(i, before) for i in shared for before in earlier if i in before[0]]  # every earlier sight
            similarity = align_windows(
                cameras.extrinsics(shared),
                poses[[window.index(index) for index in shared]],
                reference_depth=np.stack(
                    [
                        _picture(views, i, run.depth[seen_in.index(i)]) * run_scale
                        for i, (seen_in, run, run_scale) in pairs
                    ]
                ),
                moving_depth=np.stack([_picture(views, i, result.depth[window.index(i)]) for i, _ in pairs]),
            )
            poses = similarity.apply_to_extrinsics(poses)
            scale = similarity.scale
        for position, index in enumerate(window):
            if not cameras.seen[index]:  # depth and intrinsics from the first window that saw the frame
                placement = views.placements[index]
                intrinsics[index] = placement.intrinsics_to_source(result.intrinsics[position])
                depth[index] = placement.crop_to_source(result.depth[position]) * scale
                confidence[index] = (
                    placement.crop_to_source(result.confidence[position]) if result.confidence is not None else 1.0
                )
            cameras.add(index, poses[position])
        earlier.append((window, result, scale))
    return cameras.extrinsics(list(range(count))), intrinsics


def _picture(views: Views, index: int, plane: np.ndarray) -> np.ndarray:
    return views.placements[index].crop(plane)


def rebase_on_first(extrinsics: np.ndarray) -> np.ndarray:
    """World-to-camera extrinsics re-expressed with the first camera as the world (a rigid change: depth stays)."""
    first = np.eye(4)
    first[:3] = extrinsics[0]
    homogeneous = np.concatenate([extrinsics, np.tile([[[0.0, 0.0, 0.0, 1.0]]], (len(extrinsics), 1, 1))], axis=1)
    rebased: np.ndarray = (homogeneous @ np.linalg.inv(first))[:, :3]
    return rebased


def cameras_document(
    adapter: DepthAnything3Adapter,
    views: Views,
    windows: list[range],
    extrinsics: np.ndarray,
    intrinsics: list[dict[str, float]],
) -> MultiviewCameras:
    return MultiviewCameras(
        convention=CONVENTION,
        model=adapter.entry.key,
        image_size=views.source_size,
        model_size=adapter.size,
        windows=tuple((window.start, window.stop - 1) for window in windows),
        frames=tuple(
            FrameCamera(
                frame=number,
                extrinsics=tuple(tuple(row) for row in np.round(pose, 9).tolist()),
                fx=camera["fx"],
                fy=camera["fy"],
                cx=camera["cx"],
                cy=camera["cy"],
            )
            for number, pose, camera in zip(views.numbers, extrinsics, intrinsics, strict=True)
        ),
    )


def stream_npz(path: Path, members: dict[str, Path]) -> Path:
    """Atomically pack existing .npy files into an .npz (deflated, fast level) without loading them."""
    with (
        atomic_file(path) as temporary,
        zipfile.ZipFile(temporary, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive,
    ):
        for name, member in members.items():
            archive.write(member, arcname=f"{name}.npy")
    return path
