"""The media layer: every job's way in (decoders) and way out (writers). Never imports bpy.

In:  `open_input(path)` → MediaSource (still, video or frame sequence) → `read_still()` / `frames()` → Image.
Out: `write_png`, `write_exr`, `write_json`, `write_npz` (atomic), `VideoWriter` + `plan_video_output`,
     `PngSequenceWriter`. Decisions and trade-offs: openspec/0005-media-layer.md.
"""

from .atomic import atomic_directory, atomic_file
from .exr import write_exr
from .formats import MAX_PIXELS, STILL_EXTENSIONS, VIDEO_EXTENSIONS, supported_formats
from .image import AlphaMode, Image, SampleKind, from_integers, to_integers
from .png_stream import write_png
from .resample import fit_long_edge, fit_long_edge_size, resize, resize_bilinear, resize_image, sample_bilinear
from .sequence_writer import PngSequenceWriter
from .source import Frame, FrameSlot, MediaKind, MediaSource, open_input
from .video_plan import VideoPlan, plan_video_output
from .video_write import VideoWriter
from .writers import write_json, write_npz

__all__ = [
    "MAX_PIXELS",
    "STILL_EXTENSIONS",
    "VIDEO_EXTENSIONS",
    "AlphaMode",
    "Frame",
    "FrameSlot",
    "Image",
    "MediaKind",
    "MediaSource",
    "PngSequenceWriter",
    "SampleKind",
    "VideoPlan",
    "VideoWriter",
    "atomic_directory",
    "atomic_file",
    "fit_long_edge",
    "fit_long_edge_size",
    "from_integers",
    "open_input",
    "plan_video_output",
    "resize",
    "resize_bilinear",
    "resize_image",
    "sample_bilinear",
    "supported_formats",
    "to_integers",
    "write_exr",
    "write_json",
    "write_npz",
    "write_png",
]
