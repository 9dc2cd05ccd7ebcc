"""Camera Path from Video's reconstruction in a real scene: the point cloud, the ground, the scale and the COLMAP
folder, from result files written in the layouts docs/jobs.md documents (points.ply, cameras.json, colmap.zip).

The scene: a camera 0.8 above a flat ground (OpenCV world: y = 0.8, y pointing down), moving sideways and
turning a little over three frames; 60 % of the points lie on the ground, the rest float anywhere in view.
"""

from __future__ import annotations

import json
import math
import stat
import zipfile

import bpy
import numpy as np
import pytest
import result_files
from bpy_extras.object_utils import world_to_camera_view
from job_server import chosen, run_job_operator
from mathutils import Vector
from recording import draw
from result_files import write_json, write_png_rgba, write_points_ply
from scenes import photo_pixels, remove_movie_clips, undo_steps

SIZE = (32, 24)
NUMBERS = (1, 2, 3)
HEIGHT = 0.8
FOCAL, CX, CY = 30.0, 16.0, 12.0
CURSOR = (1.0, -2.0, 0.5)
GROUND_SHARE = 0.6


def turn(degrees: float) -> np.ndarray:
    """A rotation about the OpenCV y axis (a pan)."""
    angle = math.radians(degrees)
    return np.array([[math.cos(angle), 0, math.sin(angle)], [0, 1, 0], [-math.sin(angle), 0, math.cos(angle)]])


EXTRINSICS = [np.hstack([turn(degrees), np.array([[-shift], [0.0], [0.0]])]) for degrees, shift in
              ((0.0, 0.0), (4.0, 0.2), (8.0, 0.4))]  # fmt: skip


def cameras_document() -> dict:
    return result_files.cameras_document(SIZE, NUMBERS, EXTRINSICS, (FOCAL,) * len(NUMBERS), (CX, CY))


def scene_points(count: int = 5000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(points in the OpenCV world, colours, on-ground mask)."""
    rng = np.random.default_rng(3)
    ground = int(count * GROUND_SHARE)
    on = np.stack([rng.uniform(-2, 2, ground), np.full(ground, HEIGHT), rng.uniform(1.5, 8, ground)], axis=1)
    off = np.stack([rng.uniform(-2, 2, count - ground), rng.uniform(-2, 0.6, count - ground),
                    rng.uniform(1.5, 8, count - ground)], axis=1)  # fmt: skip
    colours = rng.integers(0, 256, (count, 3), dtype=np.uint8)
    mask = np.zeros(count, bool)
    mask[:ground] = True
    return np.concatenate([on, off]), colours, mask


POINTS, COLOURS, ON_GROUND = scene_points()


def produce(parameters, directory, *, colmap: bool = False):
    files = {
        "cameras": write_json(directory / "cameras.json", cameras_document()).name,
        "points": write_points_ply(directory / "points.ply", POINTS, COLOURS).name,
    }
    if colmap:
        with zipfile.ZipFile(directory / "colmap.zip", "w") as archive:
            for name in ("cameras.txt", "images.txt", "points3D.txt"):
                archive.writestr(f"sparse/0/{name}", f"# {name}\n")
            archive.writestr("images/frame_000001.png", b"png")
        files["colmap"] = "colmap.zip"
    return files


@pytest.fixture
def clip(job_server, tmp_path):
    frames = tmp_path / "walk"
    frames.mkdir()
    for number in NUMBERS:
        write_png_rgba(frames / f"walk_{number:04d}.png", photo_pixels(*SIZE, seed=number))
    clip = bpy.data.movieclips.load(str(frames / "walk_0001.png"))
    scene = bpy.context.scene
    scene.active_clip = clip
    scene.cursor.location = CURSOR
    scene.frame_start, scene.frame_end = 1, 250
    bpy.ops.ed.undo_push(message="Scene ready")
    yield clip
    scene = bpy.context.scene
    scene.active_clip = None
    remove_movie_clips()


def world_points(points_object: bpy.types.Object) -> np.ndarray:
    mesh = points_object.data
    local = np.empty(len(mesh.vertices) * 3, np.float32)
    mesh.vertices.foreach_get("co", local)
    matrix = np.array(points_object.matrix_world)
    return local.reshape(-1, 3) @ matrix[:3, :3].T + matrix[:3, 3]


def landed(clip_name: str) -> tuple[bpy.types.Collection, bpy.types.Object, bpy.types.Object, bpy.types.Object]:
    collection = bpy.data.collections[clip_name]
    objects = {obj.name: obj for obj in collection.objects}
    return collection, objects[f"{clip_name} Scene"], objects[f"{clip_name} Camera"], objects[f"{clip_name} Points"]


def test_the_reconstruction_lands_levelled_in_one_collection_as_one_undo_step(job_server, clip, capfd):
    job_server.producers["generate-multiview-cameras"] = produce
    outcome = run_job_operator(
        bpy.ops.imageforge.camera_path_from_video, point_frame_step=2, point_confidence=0.5, max_points=5000
    )
    assert outcome == {"FINISHED"}
    [(_, parameters)] = job_server.submitted
    picked = chosen("generate-multiview-cameras", parameters)
    assert {key: picked[key] for key in ("points", "point_frame_step", "point_confidence", "max_points")} == {
        "points": True, "point_frame_step": 2, "point_confidence": 0.5, "max_points": 5000}  # fmt: skip
    assert parameters["point_tear_ratio"] == pytest.approx(1.2) and parameters["export"] == "none"

    collection, root, camera, points = landed(clip.name)
    assert collection.name in bpy.context.scene.collection.children
    assert sorted(obj.name for obj in collection.objects) == sorted([root.name, camera.name, points.name])
    assert camera.parent == root and points.parent == root
    assert len(points.data.vertices) == len(POINTS)
    colour = points.data.color_attributes["Color"]
    assert (colour.domain, colour.data_type) == ("POINT", "BYTE_COLOR")
    srgb = np.empty(len(POINTS) * 4, np.float32)
    colour.data.foreach_get("color_srgb", srgb)
    np.testing.assert_allclose(srgb.reshape(-1, 4)[:, :3] * 255, COLOURS, atol=0.51)

    # Drawn as points: the evaluated geometry is a point cloud of every vertex, at the modifier's radius.
    from imageforge.addon.scene import reconstruction

    radius = reconstruction.point_radius(points)
    distances = np.linalg.norm(POINTS, axis=1)
    assert radius == pytest.approx(0.004 * float(np.median(distances)), rel=1e-5)
    geometry = points.evaluated_get(bpy.context.evaluated_depsgraph_get()).evaluated_geometry()
    evaluated = geometry.pointcloud  # (owned by `geometry`: kept while it is read)
    assert len(evaluated.points) == len(POINTS)
    radii = np.empty(len(POINTS), np.float32)
    evaluated.attributes["radius"].data.foreach_get("value", radii)
    np.testing.assert_allclose(radii, radius, rtol=1e-6)
    assert [material.name for material in evaluated.materials] == ["ImageForge Point Colour"]

    # Levelled: the ground at Z = 0, the first camera 0.8 above the cursor looking along +Y, level.
    world = world_points(points)
    np.testing.assert_allclose(world[ON_GROUND, 2], 0.0, atol=1e-4)
    assert (world[~ON_GROUND, 2] > 0.1).mean() > 0.9
    scene = bpy.context.scene
    assert (scene.frame_start, scene.frame_end) == (1, 3)
    scene.frame_set(1)
    first = np.array(camera.matrix_world)
    np.testing.assert_allclose(first[:3, 3], [CURSOR[0], CURSOR[1], HEIGHT], atol=1e-5)
    np.testing.assert_allclose(first[:3, :3] @ [0, 0, -1], [0, 1, 0], atol=1e-5)
    assert reconstruction.ground(root).normal @ [0, 1, 0] == pytest.approx(1.0, abs=1e-6)

    # Camera and points still agree: each point projects through the keyed camera where its frame's pinhole puts it.
    for frame, pose in zip(NUMBERS, EXTRINSICS, strict=True):
        scene.frame_set(frame)
        for index in range(0, len(POINTS), 97):
            x, y, z = pose[:, :3] @ POINTS[index] + pose[:, 3]
            seen = world_to_camera_view(scene, camera, Vector(world[index]))
            assert seen.x * SIZE[0] == pytest.approx(FOCAL * x / z + CX, abs=1e-3)
            assert (1 - seen.y) * SIZE[1] == pytest.approx(FOCAL * y / z + CY, abs=1e-3)

    assert undo_steps(capfd)[-1] == "Camera Path from Video"
    bpy.ops.ed.undo()
    assert clip.name not in bpy.data.collections
    assert not [obj for obj in bpy.data.objects if obj.type in {"CAMERA", "MESH", "EMPTY"}]


def test_level_ground_and_scale_move_the_camera_path_and_the_points_together(job_server, clip):
    job_server.producers["generate-multiview-cameras"] = produce
    assert run_job_operator(bpy.ops.imageforge.camera_path_from_video, level_ground=False) == {"FINISHED"}
    _, root, camera, points = landed(clip.name)
    scene = bpy.context.scene
    scene.frame_set(1)
    # Not levelled: placed like a depth plane's camera, the ground 0.8 below the cursor.
    np.testing.assert_allclose(world_points(points)[ON_GROUND, 2], CURSOR[2] - HEIGHT, atol=1e-4)
    bpy.context.view_layer.objects.active = points
    root.rotation_euler = (0.3, -0.2, 1.0)  # the user turned it
    assert bpy.ops.imageforge.level_ground() == {"FINISHED"}
    np.testing.assert_allclose(world_points(points)[ON_GROUND, 2], 0.0, atol=1e-4)
    assert camera.matrix_world.translation.z == pytest.approx(HEIGHT, abs=1e-5)

    # Two points 'clicked' in Edit Mode, known to be 3 apart.
    a, b = np.flatnonzero(ON_GROUND)[:2]
    before = world_points(points)
    for index, vertex in enumerate(points.data.vertices):
        vertex.select = index in (a, b)
    measured = float(np.linalg.norm(before[a] - before[b]))
    assert bpy.ops.imageforge.scale_scene(known="DISTANCE", length=3.0) == {"FINISHED"}
    after = world_points(points)
    assert float(np.linalg.norm(after[a] - after[b])) == pytest.approx(3.0, rel=1e-5)
    np.testing.assert_allclose(after[ON_GROUND, 2], 0.0, atol=1e-4)  # scaled about the ground: still at Z = 0
    assert camera.matrix_world.translation.z == pytest.approx(HEIGHT * 3.0 / measured, rel=1e-5)

    # The camera 1.6 above the ground at frame 2.
    scene.frame_set(2)
    assert bpy.ops.imageforge.scale_scene(known="CAMERA_HEIGHT", length=1.6) == {"FINISHED"}
    assert camera.matrix_world.translation.z == pytest.approx(1.6, rel=1e-5)
    np.testing.assert_allclose(world_points(points)[ON_GROUND, 2], 0.0, atol=1e-4)
    from imageforge.addon.scene import reconstruction

    assert reconstruction.settings(root)["scale"] == pytest.approx(1.6 / HEIGHT, rel=1e-5)
    for vertex in points.data.vertices:
        vertex.select = False
    assert bpy.ops.imageforge.scale_scene(known="DISTANCE", length=3.0) == {"CANCELLED"}  # none selected


def test_the_colmap_export_is_unpacked_beside_and_opened(job_server, clip, tmp_path, monkeypatch):
    job_server.producers["generate-multiview-cameras"] = lambda parameters, directory: produce(
        parameters, directory, colmap=True
    )
    folder = tmp_path / "export"
    outcome = run_job_operator(bpy.ops.imageforge.camera_path_from_video, export_colmap=True, colmap_folder=str(folder))
    assert outcome == {"FINISHED"}
    assert job_server.submitted[0][1]["export"] == "colmap"
    assert (folder / "sparse" / "0" / "cameras.txt").read_text() == "# cameras.txt\n"
    assert (folder / "images" / "frame_000001.png").read_bytes() == b"png"
    _, root, _, _ = landed(clip.name)
    bpy.context.view_layer.objects.active = root
    # Blender's Open Folder runs xdg-open here; a stand-in on PATH records what it was asked to open.
    opener = tmp_path / "bin" / "xdg-open"
    opener.parent.mkdir()
    opener.write_text(f'#!/bin/sh\necho "$1" > {tmp_path / "opened.txt"}\n')
    opener.chmod(opener.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{opener.parent}:{__import__('os').environ['PATH']}")
    assert bpy.ops.imageforge.open_colmap_folder() == {"FINISHED"}
    assert (tmp_path / "opened.txt").read_text().strip() == str(folder)


def test_the_colmap_export_needs_a_folder_that_lasts(job_server, clip):
    assert bpy.data.filepath == ""
    outcome = run_job_operator(bpy.ops.imageforge.camera_path_from_video, export_colmap=True)
    assert outcome == {"CANCELLED"} and job_server.submitted == []


def test_a_broken_point_cloud_or_archive_lands_nothing(job_server, clip, tmp_path, capfd, reports):
    def short(parameters, directory):
        files = produce(parameters, directory)
        path = directory / "points.ply"
        path.write_bytes(path.read_bytes()[:-5])
        return files

    def escaping(parameters, directory):
        files = produce(parameters, directory, colmap=True)
        with zipfile.ZipFile(directory / "colmap.zip", "a") as archive:
            archive.writestr("../outside.txt", "x")
        return files

    before = undo_steps(capfd)
    job_server.producers["generate-multiview-cameras"] = short
    assert run_job_operator(bpy.ops.imageforge.camera_path_from_video) == {"CANCELLED"}
    assert "cut short" in reports[-1][1]
    job_server.producers["generate-multiview-cameras"] = escaping
    folder = tmp_path / "export"
    run = run_job_operator(bpy.ops.imageforge.camera_path_from_video, export_colmap=True, colmap_folder=str(folder))
    assert run == {"CANCELLED"} and "outside its model" in reports[-1][1]
    assert not folder.exists() and not (tmp_path / "outside.txt").exists()
    assert clip.name not in bpy.data.collections
    assert not [obj for obj in bpy.data.objects if obj.type in {"CAMERA", "MESH", "EMPTY"}]
    assert undo_steps(capfd) == before


def test_the_scene_panel_shows_the_reconstruction_s_tools_and_says_depth_is_relative(job_server, clip):
    from imageforge.addon.panels.scene import RELATIVE, IMAGEFORGE_PT_scene, ScenePanel

    assert not IMAGEFORGE_PT_scene.poll(bpy.context)
    job_server.producers["generate-multiview-cameras"] = produce
    assert run_job_operator(bpy.ops.imageforge.camera_path_from_video) == {"FINISHED"}
    _, root, camera, _ = landed(clip.name)
    bpy.context.view_layer.objects.active = camera
    assert IMAGEFORGE_PT_scene.poll(bpy.context)
    layout = draw(ScenePanel, bpy.context)
    assert RELATIVE in layout.texts()
    for idname in ("imageforge.level_ground", "imageforge.scale_scene", "imageforge.camera_path_from_video"):
        assert layout.find(idname) is not None
    assert not bpy.ops.imageforge.open_colmap_folder.poll()  # no export yet: the panel offers Export COLMAP…
    assert bpy.ops.imageforge.scale_scene(known="CAMERA_HEIGHT", length=1.6) == {"FINISHED"}
    assert "Scaled ×2 from a known length" in draw(ScenePanel, bpy.context).texts()


def test_an_export_into_a_picked_folder_never_replaces_the_user_s_files(job_server, clip, tmp_path, reports):
    """A COLMAP Folder that holds the user's own images/ is refused before the job runs, and the files stay; a second
    export into a folder of an earlier export replaces that export's files and removes its frames the new model
    lacks, so images/ never mixes two exports."""
    job_server.producers["generate-multiview-cameras"] = lambda parameters, directory: produce(
        parameters, directory, colmap=True
    )
    theirs = tmp_path / "dataset"
    (theirs / "images").mkdir(parents=True)
    (theirs / "images" / "frame_000001.png").write_bytes(b"the user's own photo")
    run = run_job_operator(bpy.ops.imageforge.camera_path_from_video, export_colmap=True, colmap_folder=str(theirs))
    assert run == {"CANCELLED"} and job_server.submitted == []
    assert "images/frame_000001.png" in reports[-1][1] and "did not write" in reports[-1][1]
    assert (theirs / "images" / "frame_000001.png").read_bytes() == b"the user's own photo"

    ours = tmp_path / "export"
    assert run_job_operator(bpy.ops.imageforge.camera_path_from_video, export_colmap=True, colmap_folder=str(ours)) == {
        "FINISHED"
    }
    (ours / "images" / "frame_000099.png").write_bytes(b"an older export's frame")
    manifest = json.loads((ours / "imageforge-colmap.json").read_text())
    manifest["files"].append("images/frame_000099.png")  # as an export of more frames would have listed it
    (ours / "imageforge-colmap.json").write_text(json.dumps(manifest))
    (ours / "notes.txt").write_text("beside the model, not in it")
    assert run_job_operator(bpy.ops.imageforge.camera_path_from_video, export_colmap=True, colmap_folder=str(ours)) == {
        "FINISHED"
    }
    assert not (ours / "images" / "frame_000099.png").exists()
    assert (ours / "images" / "frame_000001.png").read_bytes() == b"png"
    assert (ours / "notes.txt").read_text() == "beside the model, not in it"
