"""Every job ImageForge's server runs: its id, typed parameters and result files.

docs/jobs.md is the prose version of this module; tests/contract keeps the two in step.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, TypeVar

from .devices import Device
from .parameters import Selection, param
from .results import ResultName, ResultSpec, expected_results
from .segment_prompts import Clicks, MultimaskMode, PromptBox


class JobId(StrEnum):
    DOWNLOAD_MODEL = "download-model"
    DOWNLOAD_REQUIRED_MODELS = "download-required-models"
    CONVERT_MODEL = "convert-model"
    REMOVE_BACKGROUND = "remove-background"
    UPSCALE_IMAGE = "upscale-image"
    REFINE_IMAGE_SELECTION = "refine-image-selection"
    GENERATE_DEPTH_PLANE_GEOMETRY = "generate-depth-plane-geometry"
    GENERATE_CUTOUT_ARTIFACTS = "generate-cutout-artifacts"
    GENERATE_MULTIVIEW_CAMERAS = "generate-multiview-cameras"
    INPAINT_IMAGE = "inpaint-image"
    INSPECT_INPUT = "inspect-input"
    ASSEMBLE_FRAMES = "assemble-frames"
    SEGMENT_IMAGE = "segment-image"
    DEBUG_BEN2 = "debug-ben2"
    DEBUG_UPSCALE = "debug-upscale"
    DEBUG_MOGE = "debug-moge"
    DEBUG_DA3 = "debug-da3"


class OutputKind(StrEnum):
    FOREGROUND = "foreground"
    ALPHA = "alpha"


class SequenceOutput(StrEnum):
    VIDEO = "video"
    PNG_SEQUENCE = "png_sequence"


class SceneExport(StrEnum):
    """What generate-multiview-cameras writes besides cameras and depth for other tools."""

    NONE = "none"
    COLMAP = "colmap"  # a COLMAP text model with the frames as its images, and the points as a binary PLY


class NormalMode(StrEnum):
    NONE = "none"
    TANGENT = "tangent"
    OBJECT = "object"


# Limits the add-on's preferences offer and the server enforces: one home (addon/choices.py imports them).
MAX_INPUT_SIZE_DEFAULT = 2048
MAX_INPUT_SIZE_LIMIT = 8192  # the longest edge any job analyses
RESOLUTION_LEVEL_DEFAULT = 9
RESOLUTION_LEVEL_MAX = 9  # MoGe-2's finest token budget
INPAINT_INPUT_SIZE_DEFAULT = 1024  # LaMa is trained at 256² and holds up to about 2k; CPU cost grows with area
REFINE_PADDING_DEFAULT = 32  # context pixels around a refined selection (the cutout job refines with it too)
MEMORY_BUDGET_GIB_DEFAULT = 4.0  # attention memory per DA3 run (the debug job's guard uses it too)

# Fields shared by every inference job. Declared once; each job's dataclass lists them explicitly
# (dataclass inheritance would put defaulted fields before required ones).
_INPUT_DOC = "Path of a still image, a video, or a frame-sequence folder/pattern."
_MODEL_DOC = "Catalog key of the model; null picks the family's default."
_DEVICE_DOC = "Where the model runs; an unavailable device falls back to CPU with a warning."
_SIZE_DOC = "Longest image edge (px) the model analyses."


def _first_frame() -> int:
    return param(0, doc="First frame to process: 0-based position in the video or sequence.", minimum=0, maximum=10**7)


def _frame_count() -> int:
    return param(0, doc="Frames to process from first_frame; 0 runs to the end.", minimum=0, maximum=10**7)


def _device() -> Device:
    return param(Device.AUTO, doc=_DEVICE_DOC, setting="device")


def _estimate_foreground() -> bool:
    return param(
        True,
        doc="Replace the colour of soft edge pixels with the object's own colour, so no fringe of the old "
        "background shows on a new one (multi-level foreground estimation).",
    )


def _max_input_size() -> int:
    return param(
        MAX_INPUT_SIZE_DEFAULT, doc=_SIZE_DOC, minimum=1, maximum=MAX_INPUT_SIZE_LIMIT, setting="max_input_size"
    )


def _model(family: str) -> str | None:
    return param(None, doc=_MODEL_DOC, family=family)


def _resolution_level(doc: str) -> int:
    return param(RESOLUTION_LEVEL_DEFAULT, doc=doc, minimum=0, maximum=RESOLUTION_LEVEL_MAX, setting="resolution_level")


@dataclass(frozen=True)
class DownloadModelParams:
    model: str = param(doc="Catalog key of the model to download, e.g. BEN2_BASE.")


@dataclass(frozen=True)
class DownloadRequiredModelsParams:
    models: list[str] | None = param(None, doc="Catalog keys; null downloads the catalog's defaults.")


@dataclass(frozen=True)
class ConvertModelParams:
    model: str = param(doc="What to convert (contract/conversions.json): DA3_SMALL or DA3_BASE.")


@dataclass(frozen=True)
class RemoveBackgroundParams:
    input: str = param(doc=_INPUT_DOC, path=True)
    output_kind: OutputKind = param(OutputKind.FOREGROUND, doc="foreground: RGBA image; alpha: float matte.")
    sequence_output: SequenceOutput = param(SequenceOutput.VIDEO, doc="For videos and sequences.")
    first_frame: int = _first_frame()
    frame_count: int = _frame_count()
    steady_edges: bool = param(False, doc="Videos: smooth the matte over time where the picture does not move.")
    estimate_foreground: bool = _estimate_foreground()
    premultiplied: bool = param(
        False, doc="foreground: write the colour multiplied by alpha (premultiplied) instead of straight."
    )
    background_color: str | None = param(
        None, doc="foreground: #RRGGBB to composite the cut-out over, written as an opaque image; null keeps alpha."
    )
    model: str | None = _model("background")
    device: Device = _device()
    max_input_size: int = _max_input_size()


@dataclass(frozen=True)
class UpscaleImageParams:
    input: str = param(doc=_INPUT_DOC, path=True)
    scale: int = param(4, doc="Output scale factor.", choices=(2, 4))
    tile_size: int = param(
        0,
        doc="Core each tile run keeps, in source pixels (context comes on top); 0 chooses from memory.",
        minimum=0,
        maximum=4096,
    )
    sequence_output: SequenceOutput = param(SequenceOutput.VIDEO, doc="For videos and sequences.")
    first_frame: int = _first_frame()
    frame_count: int = _frame_count()
    model: str | None = _model("upscale")
    device: Device = _device()
    max_input_size: int = _max_input_size()


@dataclass(frozen=True)
class RefineImageSelectionParams:
    input: str = param(doc="Path of a still image.", path=True)
    selection: Selection = param(doc="Region to refine, in image pixels.")
    padding: int = param(
        REFINE_PADDING_DEFAULT, doc="Context pixels added around the selection.", minimum=0, maximum=4096
    )
    estimate_foreground: bool = _estimate_foreground()
    model: str | None = _model("background")
    device: Device = _device()
    max_input_size: int = _max_input_size()


@dataclass(frozen=True)
class DepthPlaneParams:
    input: str = param(doc="Path of a still image.", path=True)
    resolution_level: int = _resolution_level("MoGe-2 detail level (token budget).")
    model: str | None = _model("geometry")
    device: Device = _device()
    max_input_size: int = _max_input_size()


@dataclass(frozen=True)
class CutoutParams:
    input: str = param(doc="Path of a still image.", path=True)
    selection: Selection | None = param(None, doc="Region to cut out; null cuts out the whole image.")
    refine: bool = param(False, doc="Refine the selection with the background model first.")
    estimate_foreground: bool = _estimate_foreground()
    generate_depth: bool = param(False, doc="Also write depth for a displaced cutout.")
    normal_mode: NormalMode = param(NormalMode.NONE, doc="Normal map to write, if any.")
    resolution_level: int = _resolution_level("MoGe-2 detail level.")
    geometry_model: str | None = param(None, doc="Catalog key of the geometry model; null: default.", family="geometry")
    background_model: str | None = param(
        None, doc="Catalog key of the background model; null: default.", family="background"
    )
    fill_behind: bool = param(
        False, doc="Also write the clean plate (the cut-out region inpainted) and, with depth, the background depth."
    )
    inpaint_model: str | None = param(None, doc="Catalog key of the inpainting model; null: default.", family="inpaint")
    device: Device = _device()
    max_input_size: int = _max_input_size()


@dataclass(frozen=True)
class InpaintImageParams:
    input: str = param(doc="Path of a still image.", path=True)
    mask: str | None = param(
        None, doc="Path of a grey or alpha image of the input's shape: white (or opaque) = fill.", path=True
    )
    selection: Selection | None = param(None, doc="Region to fill, in image pixels (instead of a mask).")
    model: str | None = _model("inpaint")
    device: Device = _device()
    max_input_size: int = param(INPAINT_INPUT_SIZE_DEFAULT, doc=_SIZE_DOC, minimum=32, maximum=MAX_INPUT_SIZE_LIMIT)


@dataclass(frozen=True)
class SegmentImageParams:
    input: str = param(doc="Path of a still image.", path=True)
    points: Clicks = param(
        Clicks(), doc="Clicks [[x, y, label], ...] in image pixels: label 1 on the object, 0 on what is not it."
    )
    box: PromptBox | None = param(None, doc="A box [x0, y0, x1, y1] around the object, in image pixels.")
    multimask: MultimaskMode = param(
        MultimaskMode.AUTO, doc="auto: three candidates (the best-scored kept) for a single point without a box."
    )
    model: str | None = _model("segment")
    device: Device = _device()


@dataclass(frozen=True)
class MultiviewParams:
    input: str = param(doc="A video or a frame-sequence folder/pattern (two or more frames).", path=True)
    frame_step: int = param(1, doc="Use every n-th frame.", minimum=1, maximum=1000)
    max_frames: int = param(0, doc="At most this many frames; 0 uses all of them.", minimum=0, maximum=100_000)
    windowed: bool = param(False, doc="Process long sequences in overlapping windows aligned to each other.")
    memory_budget_gib: float = param(
        MEMORY_BUDGET_GIB_DEFAULT, doc="Attention memory allowed per model run (GiB).", minimum=0.1, maximum=1024
    )
    model: str | None = _model("multiview")
    device: Device = _device()
    points: bool = param(False, doc="Also return the confident depth pixels as one point cloud (binary PLY).")
    point_frame_step: int = param(
        0,
        doc="Points from every n-th analysed frame; 0 spreads about 24 frames over the clip.",
        minimum=0,
        maximum=10_000,
    )
    point_confidence: float = param(
        0.3, doc="Drop this fraction of each frame's least confident pixels (0 keeps all).", minimum=0.0, maximum=0.99
    )
    max_points: int = param(
        200_000, doc="At most this many points, spread evenly over the frames.", minimum=1, maximum=20_000_000
    )
    point_tear_ratio: float = param(
        1.2,
        doc="Drop pixels at depth jumps (far/near between neighbours above this; 0 keeps them).",
        minimum=0.0,
        maximum=100.0,
    )
    export: SceneExport = param(
        SceneExport.NONE, doc="colmap: also a COLMAP text model (zip) with the frames as images."
    )


@dataclass(frozen=True)
class InspectInputParams:
    input: str = param(doc=_INPUT_DOC, path=True)


@dataclass(frozen=True)
class AssembleFramesParams:
    input: str = param(doc="The video or frame sequence the frames were made from (a frame job's input).", path=True)
    frames: str = param(
        doc="Folder of the frames a frame job wrote with `imageforge run --into` (frame_0001.png…).", path=True
    )
    sequence_output: SequenceOutput = param(
        SequenceOutput.VIDEO, doc="video: one video as a single run makes it; png_sequence: check the frames only."
    )
    first_frame: int = _first_frame()
    frame_count: int = _frame_count()


@dataclass(frozen=True)
class DebugParams:
    input: str = param(doc="Path of a still image (or a frame folder for debug-da3).", path=True)
    model: str | None = param(None, doc=_MODEL_DOC)
    device: Device = _device()
    max_input_size: int = _max_input_size()


P = TypeVar("P")


@dataclass(frozen=True)
class JobSpec(Generic[P]):
    """What a job takes and which files it returns (contract/results.py: when each is there).

    Generic in its parameter class: `JobSpec[RemoveBackgroundParams]` parses to that class, and a server runner
    registered for it (server/job_runners.py `runs`) must take exactly that class, or mypy fails.
    """

    id: JobId
    label: str
    parameters: type[P]
    results: Mapping[ResultName, ResultSpec[P]]

    def parse(self, raw: object) -> P:
        from .parameters import parse_parameters

        return parse_parameters(self.parameters, raw)

    def request(self, parameters: P) -> dict[str, Any]:
        """`parameters` as the plain dict a client submits, made once and checked by the parser the server
        applies (an InputError names the first value it refuses), so a bad request never leaves the client."""
        from .parameters import to_plain

        plain = to_plain(parameters)
        self.parse(plain)
        return plain

    def expected_results(self, parameters: P) -> frozenset[ResultName]:
        """The results the job itself returns for these parsed parameters (provenance comes from the handler)."""
        return expected_results(self.results, parameters)


PROVENANCE: dict[ResultName, ResultSpec[object]] = {
    ResultName.PROVENANCE: ResultSpec(
        "JSON: each model the job ran, the device asked for, the device and ONNX Runtime provider "
        "that really ran, runs and model seconds (written when the job loaded a model).",
        by_handler=True,
    )
}


def _always(description: str) -> ResultSpec[object]:
    return ResultSpec(description)


def _wants_points(params: MultiviewParams) -> bool:
    return params.points or params.export is SceneExport.COLMAP


def _wants_colmap(params: MultiviewParams) -> bool:
    return params.export is SceneExport.COLMAP


def _wants_depth(params: CutoutParams) -> bool:
    return params.generate_depth


def _wants_normal(params: CutoutParams) -> bool:
    return params.normal_mode is not NormalMode.NONE


def _fills_behind_with_geometry(params: CutoutParams) -> bool:
    """The background's depth and normals come with the clean plate when the geometry model ran at all."""
    return params.fill_behind and (params.generate_depth or params.normal_mode is not NormalMode.NONE)


# One constant per job: its JobId member, its parameter class, its results. JOB_SPECS below collects them.
DOWNLOAD_MODEL: JobSpec[DownloadModelParams] = JobSpec(
    JobId.DOWNLOAD_MODEL,
    "Download Model",
    DownloadModelParams,
    {ResultName.MANIFEST: _always("JSON: model key, files, and per file `downloaded` or `ready`.")},
)
DOWNLOAD_REQUIRED_MODELS: JobSpec[DownloadRequiredModelsParams] = JobSpec(
    JobId.DOWNLOAD_REQUIRED_MODELS,
    "Download Required Models",
    DownloadRequiredModelsParams,
    {ResultName.MANIFEST: _always("JSON: for each model key, its files and per file `downloaded` or `ready`.")},
)
CONVERT_MODEL: JobSpec[ConvertModelParams] = JobSpec(
    JobId.CONVERT_MODEL,
    "Convert Model",
    ConvertModelParams,
    {
        ResultName.CONVERSION: _always(
            "JSON: the converted model's catalog key, file, size, SHA-256, its check against torch and "
            "the time each stage took."
        )
    },
)
REMOVE_BACKGROUND: JobSpec[RemoveBackgroundParams] = JobSpec(
    JobId.REMOVE_BACKGROUND,
    "Remove Background",
    RemoveBackgroundParams,
    {
        ResultName.FOREGROUND: ResultSpec(
            "With output_kind=foreground: RGBA PNG at the input size (16-bit input stays 16-bit); or a "
            "video/PNG sequence.",
            when=lambda params: params.output_kind is OutputKind.FOREGROUND,
        ),
        ResultName.ALPHA: ResultSpec(
            "With output_kind=alpha: float32 single-channel EXR matte at the input size; or a grey "
            "video/16-bit PNG sequence.",
            when=lambda params: params.output_kind is OutputKind.ALPHA,
        ),
        **PROVENANCE,
    },
)
UPSCALE_IMAGE: JobSpec[UpscaleImageParams] = JobSpec(
    JobId.UPSCALE_IMAGE,
    "Upscale Image",
    UpscaleImageParams,
    {
        ResultName.UPSCALE: _always("PNG at scale × the input size, alpha kept; or a video/PNG sequence."),
        **PROVENANCE,
    },
)
REFINE_IMAGE_SELECTION: JobSpec[RefineImageSelectionParams] = JobSpec(
    JobId.REFINE_IMAGE_SELECTION,
    "Refine Selection",
    RefineImageSelectionParams,
    {
        ResultName.ALPHA: _always("Single-channel 16-bit PNG matte at the input size."),
        ResultName.CUTOUT: _always("RGBA PNG at the input size with the refined alpha."),
        **PROVENANCE,
    },
)
GENERATE_DEPTH_PLANE_GEOMETRY: JobSpec[DepthPlaneParams] = JobSpec(
    JobId.GENERATE_DEPTH_PLANE_GEOMETRY,
    "Convert to Depth Plane",
    DepthPlaneParams,
    {
        ResultName.DEPTH: _always("Float32 EXR (ZIP): RGB = camera-space XYZ in metres, A = alpha × validity."),
        ResultName.DEPTH_METADATA: _always("JSON: image size, pixel intrinsics fx fy cx cy, reference depth."),
        ResultName.NORMAL: _always("RGB PNG at the input size, normals encoded (n + 1) / 2."),
        **PROVENANCE,
    },
)
GENERATE_CUTOUT_ARTIFACTS: JobSpec[CutoutParams] = JobSpec(
    JobId.GENERATE_CUTOUT_ARTIFACTS,
    "Cutout",
    CutoutParams,
    {
        ResultName.CUTOUT: _always("RGBA PNG cropped to the selection bounds."),
        ResultName.SELECTION_ALPHA: _always("Single-channel PNG matte of the selection, cropped likewise."),
        ResultName.DEPTH: ResultSpec("With generate_depth: float32 EXR as for depth planes, cropped.", _wants_depth),
        ResultName.DEPTH_METADATA: ResultSpec(
            "With generate_depth: JSON as for depth planes, for the crop.", _wants_depth
        ),
        ResultName.NORMAL: ResultSpec("With a normal_mode: RGB PNG normal map, cropped.", _wants_normal),
        ResultName.BACKGROUND: ResultSpec(
            "With fill_behind: the clean plate, a PNG at the input size with the cut-out region (grown) inpainted.",
            when=lambda params: params.fill_behind,
        ),
        ResultName.BACKGROUND_DEPTH: ResultSpec(
            "With fill_behind and depth or normals: float32 EXR as for depth planes, whole image, the depth "
            "behind the cut-out filled from the surrounding background.",
            _fills_behind_with_geometry,
        ),
        ResultName.BACKGROUND_DEPTH_METADATA: ResultSpec(
            "With fill_behind and depth or normals: JSON as for depth planes, whole image.",
            _fills_behind_with_geometry,
        ),
        ResultName.BACKGROUND_NORMAL: ResultSpec(
            "With fill_behind and depth or normals: RGB PNG normal map as for depth planes, whole image, "
            "the continued surface's normals behind the cut-out.",
            _fills_behind_with_geometry,
        ),
        **PROVENANCE,
    },
)
INPAINT_IMAGE: JobSpec[InpaintImageParams] = JobSpec(
    JobId.INPAINT_IMAGE,
    "Inpaint",
    InpaintImageParams,
    {
        ResultName.INPAINT: _always(
            "RGB(A) PNG at the input size: the masked region filled, every other pixel unchanged."
        ),
        **PROVENANCE,
    },
)
SEGMENT_IMAGE: JobSpec[SegmentImageParams] = JobSpec(
    JobId.SEGMENT_IMAGE,
    "Segment Image",
    SegmentImageParams,
    {
        ResultName.MASK: _always("Grey 8-bit PNG at the input size: 255 on the object, 0 elsewhere."),
        ResultName.SEGMENT: _always(
            "JSON: the mask's score (the model's predicted IoU), every candidate's score, which was kept, "
            "the image's SHA-256 and the mask as a selection (run lengths) for the tools."
        ),
        **PROVENANCE,
    },
)
GENERATE_MULTIVIEW_CAMERAS: JobSpec[MultiviewParams] = JobSpec(
    JobId.GENERATE_MULTIVIEW_CAMERAS,
    "Multi-view Cameras",
    MultiviewParams,
    {
        ResultName.CAMERAS: _always(
            "JSON: per frame, world-to-camera 3×4 extrinsics and pixel intrinsics at source size."
        ),
        ResultName.DEPTH: _always("NPZ: float32 depth [frames, height, width] in the model's units, with confidence."),
        ResultName.POINTS: ResultSpec(
            "With points or export=colmap: PLY (binary little-endian), x y z float32 in the cameras' world, "
            "red green blue uchar.",
            _wants_points,
        ),
        ResultName.COLMAP: ResultSpec(
            "With export=colmap: ZIP of a COLMAP text model (sparse/0/cameras.txt, images.txt, "
            "points3D.txt) and images/.",
            _wants_colmap,
        ),
        **PROVENANCE,
    },
)

INSPECT_INPUT: JobSpec[InspectInputParams] = JobSpec(
    JobId.INSPECT_INPUT,
    "Inspect Input",
    InspectInputParams,
    {
        ResultName.MEDIA: _always(
            "JSON (contract/media_info.py): kind, size, frame count, frame numbers, frame rate, audio."
        )
    },
)
ASSEMBLE_FRAMES: JobSpec[AssembleFramesParams] = JobSpec(
    JobId.ASSEMBLE_FRAMES,
    "Assemble Frames",
    AssembleFramesParams,
    {
        ResultName.VIDEO: ResultSpec(
            "With sequence_output=video: the frames as one video, encoded as a single run of the frame job "
            "encodes it (the source's codec family, frame rate, timestamps, pixel aspect, audio).",
            when=lambda params: params.sequence_output is SequenceOutput.VIDEO,
        ),
        ResultName.SUMMARY: _always("JSON: the frames checked (count, first and last number, size)."),
    },
)


def _debug(job_id: JobId, model: str) -> JobSpec[DebugParams]:
    return JobSpec(
        job_id,
        f"Debug {model}",
        DebugParams,
        {
            ResultName.RAW: _always("NPZ of the model's raw outputs and the post-processed frame."),
            ResultName.SUMMARY: _always("JSON: shapes, ranges, timing, provider used."),
            **PROVENANCE,
        },
    )


DEBUG_BEN2 = _debug(JobId.DEBUG_BEN2, "BEN2")
DEBUG_UPSCALE = _debug(JobId.DEBUG_UPSCALE, "Upscaler")
DEBUG_MOGE = _debug(JobId.DEBUG_MOGE, "MoGe-2")
DEBUG_DA3 = _debug(JobId.DEBUG_DA3, "Depth Anything 3")

# Every job: the constants above, in their order (tests/server/test_handler.py: one per JobId, each with a runner).
JOB_SPECS: dict[JobId, JobSpec[Any]] = {
    value.id: value for value in list(globals().values()) if isinstance(value, JobSpec)
}


def job_spec(job_id: str) -> JobSpec[Any]:
    """Look a job up by id; unknown ids are an InputError listing the valid ones."""
    from .errors import InputError

    try:
        return JOB_SPECS[JobId(job_id)]
    except ValueError:
        valid = ", ".join(spec.value for spec in JobId)
        raise InputError(f"Unknown job '{job_id}'; valid jobs are: {valid}.") from None


__all__ = [
    "JOB_SPECS",
    "JobId",
    "JobSpec",
    "NormalMode",
    "OutputKind",
    "ResultName",
    "SceneExport",
    "Selection",
    "SequenceOutput",
    "job_spec",
]
