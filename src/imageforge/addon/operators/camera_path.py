"""Camera Path from Video: generate-multiview-cameras on a video or image sequence → one animated camera.

The input is chosen in scene/video_source.py (the operator's path, the scene's Video field, the active movie
clip). The result lands as a camera keyed once per analysed frame (scene/camera_path.py converts the OpenCV
extrinsics), with the shot's median lens, the scene's frame range spanning the analysed frames and its render
resolution the source's; a movie clip becomes the camera's background so the match can be checked by eye.
"""

from __future__ import annotations

from typing import Any

import bpy
from blendjob import JobResult
from mathutils import Matrix

from ...contract import InputError, JobId
from ...contract.jobs import MultiviewParams
from ...contract.results import ResultName
from ..preferences import job_parameters
from ..scene.animation import keyframe_matrices
from ..scene.camera_path import read_camera_path
from ..scene.intrinsics import camera_fit
from ..scene.objects import camera_object, placement, select_only
from ..scene.video_source import VideoSource, find_video_source
from .availability import NO_VIDEO, video_reason
from .base import ImageForgeJobOperator

SCENE_PROPERTY = "imageforge_video_path"


class IMAGEFORGE_OT_camera_path_from_video(ImageForgeJobOperator, bpy.types.Operator):
    """Estimate the camera path of a video or image sequence and add a camera animated along it"""

    bl_idname = "imageforge.camera_path_from_video"
    bl_label = "Camera Path from Video"
    job_id = JobId.GENERATE_MULTIVIEW_CAMERAS

    filepath: bpy.props.StringProperty(
        name="Video",
        description="Video, one image of a numbered sequence, or a folder of frames "
        "(default: the scene's Video, else the active movie clip)",
        subtype="FILE_PATH",
        options={"SKIP_SAVE"},
    )
    frame_step: bpy.props.IntProperty(
        name="Frame Step", description="Analyse every n-th frame", default=1, min=1, max=1000
    )
    max_frames: bpy.props.IntProperty(
        name="Maximum Frames", description="Analyse at most this many frames (0: all)", default=0, min=0, max=100_000
    )
    windowed: bpy.props.BoolProperty(
        name="Long Videos in Windows",
        description="Split videos too long for one model run into overlapping windows aligned into one path "
        "(otherwise they are refused, saying how many frames fit)",
        default=True,
    )

    @classmethod
    def unavailable_reason(cls, context: bpy.types.Context) -> str | None:
        return video_reason(context)

    def invoke(self, context: bpy.types.Context, _event: Any) -> set[str]:
        return context.window_manager.invoke_props_dialog(self, title=self.bl_label, confirm_text="Start")

    def draw(self, context: bpy.types.Context) -> None:
        try:
            source = find_video_source(context, self.filepath)
        except InputError as error:
            self.layout.label(text=str(error), icon="ERROR")
        else:
            self.layout.label(text=source.label if source else NO_VIDEO, icon="FILE_MOVIE")
        self.layout.prop(self, "frame_step")
        self.layout.prop(self, "max_frames")
        self.layout.prop(self, "windowed")

    def prepare(self, context: bpy.types.Context) -> MultiviewParams:
        source = find_video_source(context, self.filepath)
        if source is None:
            raise InputError(f"{NO_VIDEO}.")
        self._source = source
        return job_parameters(
            MultiviewParams,
            input=source.job_input,
            frame_step=self.frame_step,
            max_frames=self.max_frames,
            windowed=self.windowed,
        )

    def land(self, context: bpy.types.Context, result: JobResult) -> str:
        source: VideoSource = self._source
        # Read and check the whole result before creating anything, so a bad file leaves the scene as it was.
        path = read_camera_path(result.file(ResultName.CAMERAS))
        base = placement(context)
        matrices = [base @ Matrix(matrix.tolist()) for matrix in path.blender_matrices()]
        frames = [source.first_frame + number - path.numbers[0] for number in path.numbers]
        camera = camera_object(
            context,
            f"{source.label} Camera",
            camera_fit(path.lens_intrinsics()),
            matrices[0],
            far=path.extent(),
            focus=None,
        )
        keyframe_matrices(camera, frames, matrices)
        scene = context.scene
        scene.frame_start, scene.frame_end = frames[0], frames[-1]
        clip = bpy.data.movieclips.get(source.clip_name) if source.clip_name else None
        if clip is not None:
            background = camera.data.background_images.new()
            background.source = "MOVIE_CLIP"
            background.clip = clip
            camera.data.show_background_images = True
        scene.frame_set(scene.frame_current)  # evaluate the new keys at the current frame
        select_only(context, camera)
        return f"Camera path: {len(frames)} keyframes, frames {frames[0]}–{frames[-1]}, lens {camera.data.lens:.1f} mm"


def register_properties() -> None:
    setattr(
        bpy.types.Scene,
        SCENE_PROPERTY,
        bpy.props.StringProperty(
            name="Video",
            description="Video, one image of a numbered sequence, or a folder of frames for Camera Path from Video "
            "(empty: the active movie clip)",
            subtype="FILE_PATH",
        ),
    )


def unregister_properties() -> None:
    if hasattr(bpy.types.Scene, SCENE_PROPERTY):
        delattr(bpy.types.Scene, SCENE_PROPERTY)


CLASSES = (IMAGEFORGE_OT_camera_path_from_video,)
