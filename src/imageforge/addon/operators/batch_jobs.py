"""Batches in Blender: Upscale Textures of Selected Objects and Remove Background of Selected Strips.

Both are BatchJobOperators (operators/batch.py): one job per texture or strip on the warm server, one undo
step, one summary report ("12 done, 1 failed: Rock — ...").
"""

from __future__ import annotations

from typing import Any

import bpy
from blendjob import JobResult

from ...contract import InputError, JobId
from ...contract.jobs import OutputKind, RemoveBackgroundParams, SequenceOutput, UpscaleImageParams
from ...contract.results import ResultName
from .. import preferences
from ..preferences import job_parameters
from ..scene import sequencer
from ..scene.active_image import image_problem, job_input_path
from ..scene.frame_results import land_frames
from ..scene.frame_sources import strip_source
from ..scene.texture_images import TextureResults, land_texture, selected_texture_images
from .availability import server_reason
from .batch import BatchJobOperator
from .frame_jobs import steady_edges_property
from .listing import Listing, Surface
from .upscale_size import scale_property

NO_TEXTURES = "Select objects whose materials use image textures"
NO_STRIPS = "Select movie or image strips in the Video Sequencer"


def texture_reason(context: bpy.types.Context) -> str | None:
    return server_reason() or (None if selected_texture_images(context) else NO_TEXTURES)


def selected_clip_strips(context: bpy.types.Context) -> list[Any]:
    return [strip for strip in sequencer.selected_strips(context.scene) if strip.type in {"MOVIE", "IMAGE"}]


def strips_reason(context: bpy.types.Context) -> str | None:
    return server_reason() or (None if selected_clip_strips(context) else NO_STRIPS)


class IMAGEFORGE_OT_upscale_textures(BatchJobOperator, bpy.types.Operator):
    """Upscale every image texture of the selected objects' materials; each image is replaced in place"""

    bl_idname = "imageforge.upscale_textures"
    listings = (Listing(Surface.TOOLS_MENU, 70, "TEXTURE"),)
    bl_label = "Upscale Textures of Selected Objects"
    job_id = JobId.UPSCALE_IMAGE
    item_noun = "Texture"

    scale: scale_property("2")

    @classmethod
    def unavailable_reason(cls, context: bpy.types.Context) -> str | None:
        return texture_reason(context)

    def batch_items(self, context: bpy.types.Context) -> list[str]:
        images = [image.name for image in selected_texture_images(context)]
        if not images:
            raise InputError(f"{NO_TEXTURES}.")
        return images

    def item_parameters(self, _context: bpy.types.Context, index: int) -> UpscaleImageParams:
        image = self._image(index)
        problem = image_problem(image)
        if problem:
            raise InputError(f"{problem}.")
        path = job_input_path(image, self.temporary_directory() / str(index))
        return job_parameters(UpscaleImageParams, input=str(path), scale=int(self.scale))

    def land_item(self, _context: bpy.types.Context, index: int, result: JobResult) -> None:
        mode = TextureResults(preferences.texture_results(preferences.get_preferences()))
        land_texture(self._image(index), result.file(ResultName.UPSCALE), int(self.scale), mode)

    def _image(self, index: int) -> bpy.types.Image:
        image = bpy.data.images.get(self._items[index])
        if image is None:
            raise InputError("the image was removed while the batch ran.")
        return image


class IMAGEFORGE_OT_remove_background_strips(BatchJobOperator, bpy.types.Operator):
    """Remove the background of every selected movie or image strip; each gets a new strip with alpha above it"""

    bl_idname = "imageforge.remove_background_strips"
    listings = (Listing(Surface.STRIP_MENU, 30, "SEQ_STRIP_DUPLICATE"),)
    bl_label = "Remove Background of Selected Strips"
    job_id = JobId.REMOVE_BACKGROUND
    item_noun = "Strip"

    steady_edges: steady_edges_property()

    @classmethod
    def unavailable_reason(cls, context: bpy.types.Context) -> str | None:
        return strips_reason(context)

    def batch_items(self, context: bpy.types.Context) -> list[str]:
        strips = [strip.name for strip in selected_clip_strips(context)]
        if not strips:
            raise InputError(f"{NO_STRIPS}.")
        self._scene_name = context.scene.name
        self._sources: dict[int, Any] = {}
        return strips

    def item_parameters(self, _context: bpy.types.Context, index: int) -> RemoveBackgroundParams:
        source = strip_source(self._strip(index))
        self._sources[index] = source
        return job_parameters(
            RemoveBackgroundParams,
            input=source.job_input,
            first_frame=source.first_frame,
            frame_count=source.frame_count,
            sequence_output=SequenceOutput.PNG_SEQUENCE,
            output_kind=OutputKind.FOREGROUND,
            steady_edges=self.steady_edges,
        )

    def land_item(self, _context: bpy.types.Context, index: int, result: JobResult) -> None:
        land_frames(self._scene(), self._sources[index], result.file(ResultName.FOREGROUND), "Cutout")

    def _scene(self) -> bpy.types.Scene:
        scene = bpy.data.scenes.get(self._scene_name)
        if scene is None:
            raise InputError("the scene was removed while the batch ran.")
        return scene

    def _strip(self, index: int) -> Any:
        editor = self._scene().sequence_editor
        name = self._items[index]
        strip = next((s for s in sequencer.top_strips(editor) if s.name == name), None) if editor else None
        if strip is None:
            raise InputError("the strip was removed while the batch ran.")
        return strip


CLASSES = (IMAGEFORGE_OT_upscale_textures, IMAGEFORGE_OT_remove_background_strips)
