"""Camera Path from Video: generate-multiview-cameras on a video or image sequence → the reconstructed scene.

The input is chosen in scene/video_source.py (the operator's path, the scene's Video field, the active movie
clip). The result lands in one collection named after the clip (scene/reconstruction.py): an empty that is the
reconstruction's frame, at the 3D cursor facing +Y; a camera hung from it and keyed once per analysed frame
(scene/camera_path.py converts the OpenCV extrinsics), with the shot's median lens, the scene's frame range
spanning the analysed frames and its render resolution the source's; a movie clip becomes the camera's
background so the match can be checked by eye. With Point Cloud (on by default) the job's points.ply lands as
points hung from the same empty, and the ground found in them (scene/ground_plane.py) levels the whole scene
(Level Ground, on by default) so the ground is Z = 0 under the first camera. With Export COLMAP the job's
COLMAP model is unpacked into a folder that lasts (scene/colmap_folder.py). All of it is one undo step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import bpy
from blendjob import JobResult
from mathutils import Matrix

from ...contract import InputError, JobId
from ...contract.jobs import MultiviewParams, SceneExport
from ...contract.results import ResultName
from ..preferences import job_parameters
from ..scene import reconstruction
from ..scene.animation import keyframe_matrices
from ..scene.camera_path import read_camera_path
from ..scene.colmap_folder import check_destination, default_folder, unpack_colmap
from ..scene.ground_plane import Plane, fit_ground, level_matrix
from ..scene.intrinsics import camera_fit
from ..scene.objects import camera_object, placement, select_only
from ..scene.point_cloud import PointCloud, read_points_ply
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
    points: bpy.props.BoolProperty(
        name="Point Cloud",
        description="Also land the confident depth pixels as coloured points, in the camera path's world",
        default=True,
    )
    point_frame_step: bpy.props.IntProperty(
        name="Point Frame Stride",
        description="Points from every n-th analysed frame (0: about 24 frames spread over the clip)",
        default=0,
        min=0,
        max=10_000,
    )
    point_confidence: bpy.props.FloatProperty(
        name="Confidence Threshold",
        description="Leave out this fraction of each frame's least confident pixels",
        default=0.3,
        min=0.0,
        max=0.99,
        subtype="FACTOR",
    )
    max_points: bpy.props.IntProperty(
        name="Maximum Points",
        description="At most this many points, the same share from each point frame (200,000 orbit smoothly)",
        default=200_000,
        min=1,
        max=20_000_000,
    )
    filter_edges: bpy.props.BoolProperty(
        name="Filter Depth Edges",
        description="Leave out pixels at depth jumps, which float between the two surfaces "
        "(the rule of Tear at Depth Jumps)",
        default=True,
    )
    tear_ratio: bpy.props.FloatProperty(
        name="Edge Ratio",
        description="A pixel is at a depth jump when its far/near depth ratio to a neighbour exceeds this",
        default=1.2,
        min=1.01,
        max=100.0,
    )
    point_radius: bpy.props.FloatProperty(
        name="Point Radius",
        description="The points' radius (0: from the points' distance to the camera); changeable afterwards",
        default=0.0,
        min=0.0,
        subtype="DISTANCE",
    )
    level_ground: bpy.props.BoolProperty(
        name="Level Ground",
        description="Find the ground in the points and turn the scene so the ground is Z = 0 under the camera",
        default=True,
    )
    export_colmap: bpy.props.BoolProperty(
        name="Export COLMAP",
        description="Also write a COLMAP text model with the frames as its images, for splatting trainers",
        default=False,
    )
    colmap_folder: bpy.props.StringProperty(
        name="COLMAP Folder",
        description="Where the COLMAP model goes (empty: '<clip> COLMAP' beside the .blend file)",
        subtype="DIR_PATH",
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
        layout = self.layout
        layout.prop(self, "frame_step")
        layout.prop(self, "max_frames")
        layout.prop(self, "windowed")
        layout.prop(self, "points")
        column = layout.column()
        column.enabled = self.points
        column.prop(self, "point_frame_step")
        column.prop(self, "point_confidence")
        column.prop(self, "max_points")
        row = column.row()
        row.prop(self, "filter_edges")
        row.prop(self, "tear_ratio", text="Ratio")
        column.prop(self, "point_radius")
        column.prop(self, "level_ground")
        layout.prop(self, "export_colmap")
        if self.export_colmap:
            layout.prop(self, "colmap_folder")

    def prepare(self, context: bpy.types.Context) -> MultiviewParams:
        source = find_video_source(context, self.filepath)
        if source is None:
            raise InputError(f"{NO_VIDEO}.")
        self._source = source
        self._colmap = self.colmap_target(source) if self.export_colmap else None
        if self._colmap is not None:
            check_destination(self._colmap)  # before the job runs: a folder of someone's files is refused now
        return job_parameters(
            MultiviewParams,
            input=source.job_input,
            frame_step=self.frame_step,
            max_frames=self.max_frames,
            windowed=self.windowed,
            points=self.points,
            point_frame_step=self.point_frame_step,
            point_confidence=round(self.point_confidence, 4),  # Blender's float32, as the user typed it
            max_points=self.max_points,
            point_tear_ratio=round(self.tear_ratio, 4) if self.filter_edges else 0.0,
            export=SceneExport.COLMAP if self.export_colmap else SceneExport.NONE,
        )

    def colmap_target(self, source: VideoSource) -> Path:
        """The folder the COLMAP model will be unpacked into; refused before submitting when there is none."""
        if self.colmap_folder:
            return Path(bpy.path.abspath(self.colmap_folder))
        folder = default_folder(bpy.data.filepath, source.label)
        if folder is None:
            raise InputError("Save the .blend file or choose a COLMAP Folder: the COLMAP export needs a place to stay.")
        return folder

    def land(self, context: bpy.types.Context, result: JobResult) -> str:
        source: VideoSource = self._source
        # Read and check the whole result before creating anything, so a bad file leaves the scene as it was.
        path = read_camera_path(result.file(ResultName.CAMERAS))
        cloud = read_points_ply(result.file(ResultName.POINTS)) if self.points else None
        plane = _ground(cloud) if cloud is not None else None
        colmap = unpack_colmap(result.file(ResultName.COLMAP), self._colmap) if self._colmap else None
        frames = [source.first_frame + number - path.numbers[0] for number in path.numbers]
        collection = reconstruction.new_collection(context, source.label)
        root = reconstruction.reconstruction_root(collection, f"{source.label} Scene", placement(context), path.model)
        camera = camera_object(
            context,
            f"{source.label} Camera",
            camera_fit(path.lens_intrinsics()),
            Matrix.Identity(4),
            far=path.extent(),
            focus=None,
            collection=collection,
        )
        reconstruction.parent_to(camera, root)
        keyframe_matrices(camera, frames, [Matrix(matrix.tolist()) for matrix in path.blender_matrices()])
        scene = context.scene
        scene.frame_start, scene.frame_end = frames[0], frames[-1]
        clip = bpy.data.movieclips.get(source.clip_name) if source.clip_name else None
        if clip is not None:
            background = camera.data.background_images.new()
            background.source = "MOVIE_CLIP"
            background.clip = clip
            camera.data.show_background_images = True
        message = ""
        if cloud is not None:
            radius = self.point_radius or reconstruction.automatic_radius(cloud)
            reconstruction.point_cloud_object(collection, f"{source.label} Points", cloud, radius, root)
            message += f"; {len(cloud):,} points"
            message += _landed_ground(context, root, plane, level=self.level_ground)
        if colmap is not None:
            reconstruction.settings(root)["colmap"] = str(colmap)
            message += f"; COLMAP in {colmap}"
        scene.frame_set(scene.frame_current)  # evaluate the new keys at the current frame
        select_only(context, camera)
        path_message = f"Camera path: {len(frames)} keyframes, frames {frames[0]}–{frames[-1]}"
        return f"{path_message}, lens {camera.data.lens:.1f} mm{message}"


def _ground(cloud: PointCloud) -> Plane | None:
    """The ground in the points, or None when none is level enough (the scene still lands, unlevelled)."""
    try:
        return fit_ground(cloud.positions)
    except InputError:
        return None


def _landed_ground(context: bpy.types.Context, root: bpy.types.Object, plane: Plane | None, *, level: bool) -> str:
    if plane is None:
        return "; no ground found"
    reconstruction.store_ground(root, plane)
    share = f"{plane.inliers / plane.total:.0%} of the points on it"
    if not level:
        return f"; ground found ({share})"
    cursor = context.scene.cursor.location
    reconstruction.set_world_matrix(root, level_matrix(plane, 1.0, (cursor.x, cursor.y)))
    return f"; ground levelled ({share})"


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
