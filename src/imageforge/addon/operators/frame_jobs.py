"""Remove Background and Upscale on every frame of a strip, movie clip or movie/sequence image.

The source and its frames come from scene/frame_sources.py (the Sequencer's active strip, the Clip Editor's
clip, the Image Editor's movie or sequence); the server writes a PNG sequence (lossless, keeps alpha) of just
those frames, and scene/frame_results.py lands it as a new strip, clip or image, in one undo step, leaving the
source as it was. Progress reads "Frame 37/240 · 2 m 10 s left"; Esc cancels, and running the tool again on
the same frames with the same settings reuses the frames the cancelled run finished (openspec/0013).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import bpy
from blendjob import JobResult

from ...contract import JobId
from ...contract.jobs import OutputKind, RemoveBackgroundParams, SequenceOutput, UpscaleImageParams
from ...contract.results import ResultName
from ..preferences import job_parameters
from ..scene.frame_results import land_frames
from ..scene.frame_sources import NO_FRAMES, FrameRange, FrameSource, find_frame_source, frame_source_datablock
from .availability import server_reason
from .base import ImageForgeJobOperator
from .listing import Listing, Surface
from .model_choice import background_model_property, chosen_background_model
from .upscale_size import scale_property


def frames_reason(context: bpy.types.Context) -> str | None:
    """Why a frame tool cannot run here: the server's reason first, then a missing clip."""
    return server_reason() or (None if frame_source_datablock(context) is not None else NO_FRAMES)


def steady_edges_property() -> Any:
    return bpy.props.BoolProperty(
        name="Steady Edges",
        description="Smooth the matte over time where the picture does not move: less flicker on soft edges, "
        "no trailing at moving ones",
        default=False,
    )


def frame_range_property() -> Any:
    """Which frames a Frames tool works on (also Send to Farm's)."""
    return bpy.props.EnumProperty(
        name="Frames",
        items=(
            (FrameRange.SOURCE.value, "Clip Frames", "Every frame the strip, clip or image shows"),
            (FrameRange.SCENE.value, "Scene Range", "Only the frames inside the scene's frame range"),
        ),
        default=FrameRange.SOURCE.value,
    )


class FrameTool:
    frame_range: frame_range_property()

    @classmethod
    def unavailable_reason(cls, context: bpy.types.Context) -> str | None:
        return frames_reason(context)

    def frame_parameters(self, context: bpy.types.Context) -> dict[str, Any]:
        """The fields both frame tools send: the clip's file and frames, written as a PNG sequence."""
        source = find_frame_source(context, FrameRange(self.frame_range))
        self._source: FrameSource = source
        self._scene_name = context.scene.name
        return {
            "input": source.job_input,
            "first_frame": source.first_frame,
            "frame_count": source.frame_count,
            "sequence_output": SequenceOutput.PNG_SEQUENCE,
        }

    def land_result(self, first_file: Path, label: str, *, scale: int = 1) -> str:
        scene = bpy.data.scenes.get(self._scene_name) or bpy.context.scene
        name = land_frames(scene, self._source, first_file, label, scale=scale)
        return f"{self._source.frame_count} frame(s) of '{self._source.name}' → '{name}'"


class IMAGEFORGE_OT_remove_background_frames(FrameTool, ImageForgeJobOperator, bpy.types.Operator):
    """Remove the background of every frame of the active strip, movie clip or image sequence; the result is \
a new PNG sequence with alpha beside the source"""

    bl_idname = "imageforge.remove_background_frames"
    listings = (Listing(Surface.STRIP_MENU, 10, "IMAGE_RGB_ALPHA"),)
    bl_label = "Remove Background (Frames)"
    job_id = JobId.REMOVE_BACKGROUND

    steady_edges: steady_edges_property()
    background_model: background_model_property()

    def prepare(self, context: bpy.types.Context) -> RemoveBackgroundParams:
        return job_parameters(
            RemoveBackgroundParams,
            **self.frame_parameters(context),
            steady_edges=self.steady_edges,
            output_kind=OutputKind.FOREGROUND,
            **chosen_background_model(self.background_model),
        )

    def land(self, _context: bpy.types.Context, result: JobResult) -> str:
        return "Removed the background: " + self.land_result(result.file(ResultName.FOREGROUND), "Cutout")


class IMAGEFORGE_OT_upscale_frames(FrameTool, ImageForgeJobOperator, bpy.types.Operator):
    """Upscale every frame of the active strip, movie clip or image sequence 2× or 4×; the result is a new \
PNG sequence beside the source"""

    bl_idname = "imageforge.upscale_frames"
    listings = (Listing(Surface.STRIP_MENU, 20, "FULLSCREEN_ENTER"),)
    bl_label = "Upscale (Frames)"
    job_id = JobId.UPSCALE_IMAGE

    scale: scale_property("2")

    def prepare(self, context: bpy.types.Context) -> UpscaleImageParams:
        return job_parameters(UpscaleImageParams, **self.frame_parameters(context), scale=int(self.scale))

    def land(self, _context: bpy.types.Context, result: JobResult) -> str:
        scale = int(self.scale)
        return "Upscaled: " + self.land_result(result.file(ResultName.UPSCALE), f"{scale}×", scale=scale)


CLASSES = (IMAGEFORGE_OT_remove_background_frames, IMAGEFORGE_OT_upscale_frames)
