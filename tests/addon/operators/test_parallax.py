"""Fill Behind (a Cutout giving its image's depth plane the clean plate and the depth behind the object) and the
Parallax Shot, on a synthetic two-layer scene: a card 2 m in front of a wall 5 m away."""

from __future__ import annotations

import json

import bpy
import numpy as np
import pytest
from job_server import run_job_operator
from result_files import write_exr, write_json, write_png_gray16, write_png_rgb, write_png_rgba
from scenes import image_object, load_photo, photo_pixels, undo_steps
from two_layers import CARD, FAR, FX, FY, HEIGHT, NEAR, WIDTH, produce_two_layers, two_layers

from imageforge.addon.scene.pixels import read_pixels
from imageforge.contract.depth_metadata import DepthMetadata
from imageforge.contract.results import ResultName

PHOTO = (64, 48)  # twice the depth map
BOX = [16, 12, 40, 36]  # the card in photo pixels (depth columns 8–19, rows 6–17)
PLATE_COLOUR = (0.2, 0.6, 0.4)


def wall_only() -> np.ndarray:
    """The two-layer scene's depth with the card gone: what the background depth continues behind it."""
    points = two_layers()
    return points * (FAR / points[..., 2:3])


def clean_plate(photo: np.ndarray) -> np.ndarray:
    plate = photo.copy()
    plate[10:38, 14:42, :3] = PLATE_COLOUR  # the box grown by 2 px, filled
    return plate


def produce_cutout(photo: np.ndarray):
    def produce(parameters, directory):
        files = {}
        crop = photo[12:36, 16:40]
        write_png_rgba(directory / "cutout.png", crop)
        write_png_gray16(directory / "selection_alpha.png", np.ones(crop.shape[:2], np.float32))
        files.update(cutout="cutout.png", selection_alpha="selection_alpha.png")
        if parameters["generate_depth"]:
            card = np.concatenate([two_layers()[CARD], np.ones((12, 12, 1), np.float32)], axis=-1)
            write_exr(directory / "depth.exr", card)
            metadata = DepthMetadata((24, 24), (12, 12), FX * 2, FY * 2, 32.0 - 16, 24.0 - 12, NEAR)
            write_json(directory / "depth.json", metadata.to_json())
            files.update(depth="depth.exr", depth_metadata="depth.json")
        normal = np.full((24, 24, 3), (0.5, 0.5, 1.0), np.float32)
        write_png_rgb(directory / "normal.png", normal)
        files[ResultName.NORMAL] = "normal.png"
        if parameters.get("fill_behind"):
            write_png_rgba(directory / "background.png", clean_plate(photo))
            wall = np.concatenate([wall_only(), np.ones((HEIGHT, WIDTH, 1), np.float32)], axis=-1)
            write_exr(directory / "background_depth.exr", wall)
            metadata = DepthMetadata((WIDTH, HEIGHT), (WIDTH, HEIGHT), FX, FY, WIDTH / 2, HEIGHT / 2, FAR)
            write_json(directory / "background.json", metadata.to_json())
            tilted = np.full((HEIGHT, WIDTH, 3), (0.5, 0.25, 0.0), np.float32)  # the wall's normals, encoded
            write_png_rgb(directory / "background_normal.png", tilted)
            files.update(
                background="background.png",
                background_depth="background_depth.exr",
                background_depth_metadata="background.json",
                background_normal="background_normal.png",
            )
        return files

    return produce


@pytest.fixture
def photo(job_server, tmp_path):
    pixels = photo_pixels(*PHOTO)
    image = load_photo(tmp_path / "photo.png", pixels)
    image.name = "Photo"
    image_object(image)
    bpy.ops.ed.undo_push(message="Scene ready")
    return image, pixels


def face_depths(obj: bpy.types.Object) -> np.ndarray:
    vertices = np.array([vertex.co for vertex in obj.data.vertices])
    return np.array([[-vertices[index][2] for index in polygon.vertices] for polygon in obj.data.polygons])


def camera_space_depths(obj: bpy.types.Object, plane: bpy.types.Object) -> np.ndarray:
    """Depths of `obj`'s vertices in the space of `plane`, whose local space is its camera's."""
    camera_from_world = plane.matrix_world.inverted()
    return np.array([-(camera_from_world @ (obj.matrix_world @ vertex.co)).z for vertex in obj.data.vertices])


def texture_images(obj: bpy.types.Object) -> set[str]:
    nodes = obj.active_material.node_tree.nodes
    return {node.image.name for node in nodes if node.type == "TEX_IMAGE" and node.image is not None}


def test_cutout_fills_behind_on_the_images_depth_plane(job_server, photo, capfd):
    image, pixels = photo
    job_server.producers["generate-depth-plane-geometry"] = produce_two_layers
    assert run_job_operator(bpy.ops.imageforge.depth_plane, subdivisions=5) == {"FINISHED"}
    plane = bpy.data.objects["Photo Depth Plane"]
    assert face_depths(plane).min() == pytest.approx(NEAR)  # the card is part of the plane (torn off the wall)
    job_server.producers["generate-cutout-artifacts"] = produce_cutout(pixels)
    outcome = run_job_operator(bpy.ops.imageforge.cutout, selection=json.dumps({"box": BOX}), displace=True)
    assert outcome == {"FINISHED"}
    parameters = job_server.submitted[-1][1]
    assert (parameters["fill_behind"], parameters["generate_depth"], parameters["inpaint_model"]) == (
        True,
        True,
        "LAMA",
    )

    # The plane shows the clean plate: the photo everywhere but under the (grown) cutout.
    assert texture_images(plane) == {"Photo Clean Plate", "Photo Clean Plate Normal"}  # colour and normals behind
    plate = read_pixels(bpy.data.images["Photo Clean Plate"])
    changed = np.abs(plate - pixels).max(axis=-1) > 1e-6
    rows, columns = np.nonzero(changed)
    assert (rows.min(), rows.max(), columns.min(), columns.max()) == (10, 37, 14, 41)
    assert np.allclose(plate[20, 28, :3], PLATE_COLOUR, atol=1 / 255)
    assert texture_images(bpy.data.objects["Photo Plane"]) == {"Photo"}  # the user's own plane is untouched
    # The plane's surface now continues behind the cutout: the whole wall at 5 m, no card, no hole.
    depths = face_depths(plane)
    assert np.allclose(depths, FAR) and len(depths) == 31 * 23
    # The cutout itself stands in front, at the card's depth in the plane's camera space.
    assert np.allclose(camera_space_depths(bpy.data.objects["Photo Cutout"], plane), NEAR, atol=1e-4)
    assert undo_steps(capfd)[-1] == "Cutout"
    bpy.ops.ed.undo()
    plane = bpy.data.objects["Photo Depth Plane"]
    assert texture_images(plane) == {"Photo", "Photo Normal"} and face_depths(plane).min() == pytest.approx(NEAR)


def test_without_a_depth_plane_fill_behind_asks_for_nothing(job_server, photo):
    _, pixels = photo
    job_server.producers["generate-cutout-artifacts"] = produce_cutout(pixels)
    assert run_job_operator(bpy.ops.imageforge.cutout, selection=json.dumps({"box": BOX})) == {"FINISHED"}
    parameters = job_server.submitted[-1][1]
    assert (parameters["fill_behind"], parameters["generate_depth"]) == (False, False)
    assert "Photo Clean Plate" not in bpy.data.images


def test_parallax_shot_builds_plate_cutout_and_a_dolly_in_one_undo_step(job_server, photo, capfd):
    _, pixels = photo
    job_server.producers["generate-cutout-artifacts"] = produce_cutout(pixels)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 10
    outcome = run_job_operator(bpy.ops.imageforge.parallax_shot, selection=json.dumps({"box": BOX}), subdivisions=5)
    assert outcome == {"FINISHED"}
    parameters = job_server.submitted[-1][1]
    assert parameters["selection"] == {"box": [16.0, 12.0, 40.0, 36.0]}
    assert (parameters["refine"], parameters["generate_depth"], parameters["fill_behind"]) == (True, True, True)
    background = bpy.data.objects["Photo Background"]
    cutout = bpy.data.objects["Photo Cutout"]
    camera = bpy.data.objects["Photo Camera"]
    assert texture_images(background) == {"Photo Clean Plate", "Photo Clean Plate Normal"}
    assert np.allclose(face_depths(background), FAR) and len(background.data.polygons) == 31 * 23
    # The cutout sits in the camera's space in front of the background: every vertex at the card's 2 m.
    assert np.allclose(camera_space_depths(cutout, background), NEAR, atol=1e-4)
    assert scene.camera == camera and scene.frame_end == 48
    curves = camera.animation_data.action.fcurves if bpy.app.version < (5, 0, 0) else None
    if curves is not None:
        assert {curve.data_path for curve in curves} == {"location", "rotation_euler"}
    scene.frame_set(1)
    start = camera.matrix_world.translation.copy()
    scene.frame_set(48)
    end = camera.matrix_world.translation.copy()
    moved = background.matrix_world.inverted().to_3x3() @ (end - start)
    assert moved.z == pytest.approx(-0.15 * NEAR, abs=1e-4)  # towards the subject along the view axis
    assert moved.x == pytest.approx(0.3 * 0.15 * NEAR, abs=1e-4)  # and a little to the right
    assert undo_steps(capfd)[-1] == "Parallax Shot"
    bpy.ops.ed.undo()
    assert not {"Photo Background", "Photo Cutout", "Photo Camera"} & set(bpy.data.objects.keys())


@pytest.mark.parametrize(
    ("choice", "sent"), [("PREFERENCES", "BEN2_BASE"), ("BIREFNET_HR_MATTING", "BIREFNET_HR_MATTING")]
)
@pytest.mark.parametrize("operator", ["cutout", "parallax_shot"])
def test_the_refine_step_runs_the_tools_own_background_model(job_server, photo, operator, choice, sent):
    """Cutout and Parallax Shot refine with a background model of their own (Preferences by default), as Remove
    Background and Refine Selection do: the job's background_model field."""
    _, pixels = photo
    job_server.producers["generate-cutout-artifacts"] = produce_cutout(pixels)
    call = getattr(bpy.ops.imageforge, operator)
    assert run_job_operator(call, selection=json.dumps({"box": BOX}), background_model=choice) == {"FINISHED"}
    [(job_type, parameters)] = job_server.submitted
    assert job_type == "generate-cutout-artifacts"
    assert (parameters["refine"], parameters["background_model"]) == (True, sent)
