"""Camera Path from Video on a real scene: a movie clip of a PNG sequence in, a keyed camera out, from a
cameras.json written in the layout docs/jobs.md documents."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
import result_files
from bpy_extras import anim_utils
from bpy_extras.object_utils import world_to_camera_view
from job_server import chosen, run_job_operator
from mathutils import Euler, Matrix, Vector
from recording import draw
from result_files import write_json, write_png_rgba
from scenes import photo_pixels, remove_movie_clips, undo_steps

SIZE = (16, 12)
NUMBERS = (11, 13, 15, 17)  # the sequence's own frame numbers, every second frame analysed
CLIP_START = 5
CURSOR = (1.0, -2.0, 0.5)
FX = (13.8, 14.0, 14.1, 14.0)  # per-frame estimates; the median is 14
CX, CY = 8.5, 5.5
F = np.diag([1.0, -1.0, -1.0, 1.0])  # Blender camera axes ↔ OpenCV camera axes


def rotation(axis: tuple[float, float, float], degrees: float) -> np.ndarray:
    """Rodrigues' formula: a rotation about `axis`."""
    k = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    cross = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    angle = math.radians(degrees)
    return np.eye(3) + math.sin(angle) * cross + (1 - math.cos(angle)) * cross @ cross


EXTRINSICS = [
    np.hstack([np.eye(3), np.zeros((3, 1))]),  # the world is the first frame's camera
    np.hstack([rotation((0, 1, 0), 12.0), [[-0.3], [0.05], [0.1]]]),
    np.hstack([rotation((1, 1, 0), -25.0), [[-0.6], [0.1], [0.3]]]),
    np.hstack([rotation((0.2, 1, 0.4), 40.0), [[-0.9], [0.2], [0.2]]]),
]


def cameras_document() -> dict:
    return result_files.cameras_document(SIZE, NUMBERS, EXTRINSICS, FX, (CX, CY))


def placement() -> np.ndarray:
    """Where the add-on puts the path's first camera: at the 3D cursor, facing world +Y."""
    return np.array(Matrix.Translation(CURSOR) @ Euler((math.pi / 2, 0, 0)).to_matrix().to_4x4())


def keyed_frames(obj: bpy.types.Object, data_path: str) -> list[float]:
    animation = obj.animation_data
    bag = anim_utils.action_get_channelbag_for_slot(animation.action, animation.action_slot)
    curves = [curve for curve in bag.fcurves if curve.data_path == data_path]
    assert len(curves) == 3
    return [key.co[0] for key in curves[0].keyframe_points]


@pytest.fixture
def clip(job_server, tmp_path):
    """A real movie clip of a seven-frame PNG sequence (shot_0011 … shot_0017), the scene's active clip."""
    frames = tmp_path / "plate"
    frames.mkdir()
    for number in range(11, 18):
        write_png_rgba(frames / f"shot_{number:04d}.png", photo_pixels(*SIZE, seed=number))
    clip = bpy.data.movieclips.load(str(frames / "shot_0011.png"))
    clip.frame_start = CLIP_START
    scene = bpy.context.scene
    scene.active_clip = clip
    scene.cursor.location = CURSOR
    scene.frame_start, scene.frame_end = 1, 250
    bpy.ops.ed.undo_push(message="Scene ready")
    yield clip
    scene = bpy.context.scene  # an undo in the test replaces the scene's Python object
    scene.active_clip = None
    scene.imageforge_video_path = ""
    remove_movie_clips()  # never bpy.data.movieclips.remove alone: the camera's background would keep the freed clip


def test_camera_follows_the_extrinsics_with_the_median_lens(job_server, clip, capfd):
    def produce(parameters, directory):
        return {"cameras": write_json(directory / "cameras.json", cameras_document()).name}

    job_server.producers["generate-multiview-cameras"] = produce
    outcome = run_job_operator(bpy.ops.imageforge.camera_path_from_video, frame_step=2, points=False)
    assert outcome == {"FINISHED"}
    [(job, parameters)] = job_server.submitted
    assert job == "generate-multiview-cameras"
    picked = chosen("generate-multiview-cameras", parameters)
    picked.pop("device", None)  # the platform's default device (checked below)
    assert picked == {
        "input": str(clip.filepath.replace("shot_0011", "shot_####")),
        "frame_step": 2,
        "windowed": True,
        "model": "DA3_SMALL",
    }
    assert parameters["max_frames"] == 0 and parameters["device"] in {"auto", "cpu", "cuda", "directml", "coreml"}

    scene = bpy.context.scene
    camera = bpy.data.objects[f"{clip.name} Camera"]
    scene_frames = [CLIP_START + number - NUMBERS[0] for number in NUMBERS]  # 5, 7, 9, 11
    assert keyed_frames(camera, "location") == scene_frames
    assert keyed_frames(camera, "rotation_euler") == scene_frames
    assert (scene.frame_start, scene.frame_end) == (5, 11)
    assert (scene.render.resolution_x, scene.render.resolution_y) == SIZE
    lens = camera.data
    assert (lens.sensor_fit, lens.sensor_width) == ("HORIZONTAL", 36.0)
    assert lens.lens == pytest.approx(14.0 * 36.0 / 16)  # the median fx at the source width
    assert lens.shift_x == pytest.approx((8 - CX) / 16) and lens.shift_y == pytest.approx((CY - 6) / 16)
    assert lens.background_images[0].clip == clip and lens.show_background_images
    assert scene.camera == camera

    world = placement() @ F  # OpenCV world coordinates → Blender world
    points = np.array([[0.0, 0.0, 4.0], [0.6, -0.4, 5.0], [-0.7, 0.5, 3.5], [0.2, 0.3, 6.0]])
    for frame, pose in zip(scene_frames, EXTRINSICS, strict=True):
        scene.frame_set(frame)
        rotation_, translation = pose[:, :3], pose[:, 3]
        expected = np.eye(4)
        expected[:3, :3], expected[:3, 3] = rotation_.T, -rotation_.T @ translation
        matrix = np.array(camera.matrix_world)
        assert np.allclose(matrix, world @ expected @ F, atol=1e-5)  # position and orientation
        assert np.allclose(matrix[:3, 3], (world @ np.append(-rotation_.T @ translation, 1.0))[:3], atol=1e-5)
        for point in points:
            # Projected through the Blender camera, each world point lands where the pinhole model (with the
            # lens's median focal length) puts it in the source picture.
            x, y, z = rotation_ @ point + translation
            assert z > 0
            projected = world_to_camera_view(scene, camera, Vector((world @ np.append(point, 1.0))[:3]))
            assert projected.x * SIZE[0] == pytest.approx(14.0 * x / z + CX, abs=1e-3)
            assert (1 - projected.y) * SIZE[1] == pytest.approx(14.0 * y / z + CY, abs=1e-3)

    name = camera.name
    assert undo_steps(capfd)[-1] == "Camera Path from Video"
    bpy.ops.ed.undo()
    assert name not in bpy.data.objects
    assert (bpy.context.scene.frame_start, bpy.context.scene.frame_end) == (1, 250)


def test_a_path_wins_over_the_clip_and_a_failed_job_changes_nothing(job_server, clip, tmp_path, capfd):
    video = tmp_path / "walk.mp4"
    video.write_bytes(b"not decoded on this side")
    bpy.context.scene.imageforge_video_path = str(video)
    job_server.producers["generate-multiview-cameras"] = lambda parameters, directory: None  # the job fails
    before = undo_steps(capfd)
    assert run_job_operator(bpy.ops.imageforge.camera_path_from_video, max_frames=40, windowed=False) == {"CANCELLED"}
    parameters = job_server.submitted[0][1]
    assert (parameters["input"], parameters["max_frames"], parameters["windowed"]) == (str(video), 40, False)
    frames = tmp_path / "frames"
    frames.mkdir()
    assert run_job_operator(bpy.ops.imageforge.camera_path_from_video, filepath=str(frames)) == {"CANCELLED"}
    assert job_server.submitted[1][1]["input"] == str(frames)  # the operator's own path wins over both
    assert not [obj for obj in bpy.data.objects if obj.type == "CAMERA"]
    assert undo_steps(capfd) == before


def test_a_camera_path_that_is_not_valid_lands_nothing(job_server, clip, capfd):
    document = cameras_document()
    document["frames"][2]["extrinsics"][0][0] = 3.0  # no longer a rotation
    job_server.producers["generate-multiview-cameras"] = lambda parameters, directory: {
        "cameras": write_json(directory / "cameras.json", document).name
    }
    before = undo_steps(capfd)
    assert run_job_operator(bpy.ops.imageforge.camera_path_from_video, points=False) == {"CANCELLED"}
    assert not [obj for obj in bpy.data.objects if obj.type == "CAMERA"]
    assert (bpy.context.scene.frame_start, bpy.context.scene.frame_end) == (1, 250)
    assert undo_steps(capfd) == before


def test_inputs_sent_to_the_server(job_server, tmp_path):
    from imageforge.addon.scene.video_source import job_input
    from imageforge.contract import InputError

    for name in ("frame_0007.exr", "frame_0008.exr", "odd%name_0001.png", "photo.png", "take2.mov"):
        (tmp_path / name).write_bytes(b"")
    assert job_input(tmp_path / "frame_0007.exr") == str(tmp_path / "frame_####.exr")
    assert job_input(tmp_path / "odd%name_0001.png") == str(tmp_path)  # the server finds the sequence itself
    assert job_input(tmp_path / "take2.mov") == str(tmp_path / "take2.mov")
    assert job_input(tmp_path) == str(tmp_path)
    with pytest.raises(InputError, match="is a single image"):
        job_input(tmp_path / "photo.png")
    with pytest.raises(InputError, match="does not exist"):
        job_input(tmp_path / "gone.mp4")


def test_unusable_choices_are_refused_before_submitting(job_server, clip, tmp_path):
    (tmp_path / "photo.png").write_bytes(b"")
    for path in (tmp_path / "photo.png", tmp_path / "missing.mp4"):
        assert bpy.ops.imageforge.camera_path_from_video("EXEC_DEFAULT", filepath=str(path)) == {"CANCELLED"}
    assert job_server.submitted == []


def test_the_document_becomes_arrays_and_a_broken_one_names_the_problem(tmp_path):
    from imageforge.addon.scene.camera_path import read_camera_path
    from imageforge.contract import InputError

    document = cameras_document()
    path = read_camera_path(write_json(tmp_path / "cameras.json", document))
    assert path.numbers == NUMBERS and path.image_size == SIZE
    np.testing.assert_allclose(path.extrinsics, np.stack(EXTRINSICS))
    np.testing.assert_allclose(path.intrinsics[:, 0], FX)
    assert np.allclose(path.blender_matrices()[0], np.eye(4))  # the first camera is the path's origin
    del document["version"]  # written before the field existed: the same layout
    assert read_camera_path(write_json(tmp_path / "old.json", document)).numbers == NUMBERS
    zero_focal = {**document["frames"][0], "intrinsics": {"fx": 0, "fy": 1, "cx": 0, "cy": 0}}
    broken = write_json(tmp_path / "broken.json", {**document, "frames": [zero_focal]})
    with pytest.raises(InputError, match=r"^The camera path, frame 11, intrinsics: fx must be a positive number"):
        read_camera_path(broken)


def test_tools_panel_greys_the_video_tool_out_until_a_video_is_chosen(job_server, tmp_path):
    from imageforge.addon.operators.availability import NO_VIDEO, video_reason
    from imageforge.addon.panels.tools import ToolsPanel

    scene = bpy.context.scene
    scene.active_clip = None
    scene.imageforge_video_path = ""
    layout = draw(ToolsPanel, bpy.context)
    tool = layout.find("imageforge.camera_path_from_video")
    assert not tool.enabled and NO_VIDEO in layout.texts()
    assert video_reason(bpy.context) == NO_VIDEO
    assert not bpy.ops.imageforge.camera_path_from_video.poll()
    assert "imageforge_video_path" in [item.idname for item in layout.items if item.kind == "prop"]

    scene.imageforge_video_path = str(tmp_path / "walk.mp4")
    try:
        layout = draw(ToolsPanel, bpy.context)
        assert layout.find("imageforge.camera_path_from_video").enabled and NO_VIDEO not in layout.texts()
        assert bpy.ops.imageforge.camera_path_from_video.poll()
        job_server.snapshot = {"state": "UNAVAILABLE"}
        assert "Set up the server" in video_reason(bpy.context)
    finally:
        scene.imageforge_video_path = ""


def test_a_letterboxing_export_ends_the_operator_with_its_warning(job_server, clip, reports):
    notice = "DA3 Small (depth only) takes 504×504 pictures only, so the 16×12 frames were letterboxed (padded)."

    def produce(parameters, directory):
        provenance = {"models": [], "warnings": [], "input_warnings": [notice]}
        write_json(directory / "provenance.json", provenance)
        return {"cameras": write_json(directory / "cameras.json", cameras_document()).name,
                "provenance": "provenance.json"}  # fmt: skip

    job_server.producers["generate-multiview-cameras"] = produce
    assert run_job_operator(bpy.ops.imageforge.camera_path_from_video, points=False) == {"FINISHED"}
    assert reports[-1] == ("WARNING", notice)
    assert [level for level, _ in reports] == ["INFO", "WARNING"]  # the camera landed, then what it was made from
