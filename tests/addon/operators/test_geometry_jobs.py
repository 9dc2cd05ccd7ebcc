"""Convert to Depth Plane and Cutout on a real scene, from depth EXRs written in the documented format."""

from __future__ import annotations

import json

import bpy
import numpy as np
import pytest
from bpy_extras.object_utils import world_to_camera_view
from job_server import run_job_operator
from mathutils import Vector
from result_files import write_exr, write_json, write_png_gray16, write_png_rgb, write_png_rgba
from scenes import image_object, load_photo, photo_pixels, undo_steps

from imageforge.contract.depth_metadata import DepthMetadata

DEPTH_SIZE = (32, 24)  # the analysed resolution; the photo is twice as large
FX = FY = 30.0
CX, CY = 17.0, 12.0


def tilted_floor(width: int, height: int) -> np.ndarray:
    """Camera-space points (OpenCV axes) of a surface 2 m away at the top row, 3.5 m at the bottom."""
    ys, xs = np.mgrid[0:height, 0:width] + 0.5
    z = 2.0 + 1.5 * ys / height
    return np.stack([(xs - CX) * z / FX, (ys - CY) * z / FY, z], axis=-1).astype(np.float32)


def write_depth(directory, weight: np.ndarray, metadata: DepthMetadata) -> dict[str, str]:
    width, height = DEPTH_SIZE
    depth = np.concatenate([tilted_floor(width, height), weight[..., None]], axis=-1)
    write_exr(directory / "depth.exr", depth)
    write_json(directory / "depth.json", metadata.to_json())
    normal = np.zeros((height, width, 3), dtype=np.float32)
    normal[...] = (0.5, 0.5, 0.0)  # n = (0, 0, -1): facing the camera, encoded (n + 1) / 2
    write_png_rgb(directory / "normal.png", normal)
    return {"depth": "depth.exr", "depth_metadata": "depth.json", "normal": "normal.png"}


@pytest.fixture
def photo(job_server, tmp_path):
    image = load_photo(tmp_path / "photo.png", photo_pixels(64, 48))
    image.name = "Photo"
    image_object(image)
    bpy.context.scene.cursor.location = (1.0, -2.0, 0.5)
    bpy.ops.ed.undo_push(message="Scene ready")
    return image


def test_depth_plane_mesh_camera_and_material_reproduce_the_photo(job_server, photo, capfd):
    weight = np.ones(DEPTH_SIZE[::-1], dtype=np.float32)
    weight[:, :8] = 0.0  # the left quarter is invalid: no faces there

    def produce(parameters, directory):
        return write_depth(directory, weight, DepthMetadata(DEPTH_SIZE, DEPTH_SIZE, FX, FY, CX, CY, 2.7))

    job_server.producers["generate-depth-plane-geometry"] = produce
    assert run_job_operator(bpy.ops.imageforge.depth_plane, subdivisions=4) == {"FINISHED"}
    parameters = job_server.submitted[0][1]
    assert (parameters["resolution_level"], parameters["model"]) == (9, "MOGE2_VITB_NORMAL")

    plane = bpy.data.objects["Photo Depth Plane"]
    camera = bpy.data.objects["Photo Camera"]
    mesh = plane.data
    # 16 × 12 segments; grid columns 0-3 sample pixels 0, 2, 4, 6 (invalid), so 13 × 13 vertices and 12 × 12
    # quads remain.
    assert (len(mesh.vertices), len(mesh.polygons)) == (169, 144)
    local = np.array([vertex.co for vertex in mesh.vertices])
    sampled_rows = np.minimum(np.arange(13) * 24 // 12, 23)  # the depth row under each grid line
    expected = 2.0 + 1.5 * (sampled_rows + 0.5) / 24
    depths = -local[:, 2]  # Blender cameras look down their local -Z
    assert depths.min() == pytest.approx(expected.min(), abs=1e-5)
    assert depths.max() == pytest.approx(expected.max(), abs=1e-5)

    lens = camera.data
    assert (lens.sensor_fit, lens.sensor_width) == ("HORIZONTAL", 36.0)
    assert lens.lens == pytest.approx(FX * 36.0 / DEPTH_SIZE[0])  # 33.75 mm
    assert lens.shift_x == pytest.approx((16.0 - CX) / 32.0) and lens.shift_y == pytest.approx(0.0)
    assert lens.dof.focus_distance == pytest.approx(2.7)
    scene = bpy.context.scene
    assert (scene.render.resolution_x, scene.render.resolution_y) == (64, 48)
    assert scene.camera == camera
    assert camera.matrix_world == plane.matrix_world
    assert np.allclose(camera.location, (1.0, -2.0, 0.5))

    # Looking through the camera, each vertex lands on the photo pixel whose depth it took (read back from the
    # vertex itself through the surface's formula), and its UV points at that same place in the photo.
    uvs = np.zeros((len(mesh.vertices), 2))
    for loop in mesh.loops:
        uvs[loop.vertex_index] = mesh.uv_layers.active.data[loop.index].uv
    for vertex, uv in zip(mesh.vertices, uvs, strict=True):
        x, z = vertex.co.x, -vertex.co.z
        row = (z - 2.0) * 24 / 1.5 - 0.5
        column = x * FX / z + CX - 0.5
        projected = world_to_camera_view(scene, camera, plane.matrix_world @ vertex.co)
        assert projected.x * 64 == pytest.approx((column + 0.5) * 2, abs=1e-3)
        assert (1 - projected.y) * 48 == pytest.approx((row + 0.5) * 2, abs=1e-3)
        assert projected.z > 0  # in front of the camera
        assert abs(uv[0] * 64 - (column + 0.5) * 2) <= 2.0 and abs((1 - uv[1]) * 48 - (row + 0.5) * 2) <= 2.0

    [material] = mesh.materials
    nodes = material.node_tree.nodes
    bsdf = nodes["Principled BSDF"]
    assert bsdf.inputs["Base Color"].links[0].from_node.image == photo
    assert bsdf.inputs["Alpha"].links[0].from_node.image == photo
    normal_map = bsdf.inputs["Normal"].links[0].from_node
    assert normal_map.space == "OBJECT"
    normal = normal_map.inputs["Color"].links[0].from_node.image
    assert normal.packed_file is not None and normal.colorspace_settings.is_data
    from imageforge.addon.scene.pixels import read_pixels

    assert np.allclose(read_pixels(normal)[..., :3], (0.5, 0.5, 1.0), atol=1 / 255)  # Blender's camera axes

    assert undo_steps(capfd)[-1] == "Convert to Depth Plane"
    bpy.ops.ed.undo()
    assert "Photo Depth Plane" not in bpy.data.objects and "Photo Camera" not in bpy.data.objects


def test_portrait_photos_fit_the_sensor_vertically():
    from imageforge.addon.scene.intrinsics import PixelIntrinsics, camera_fit

    fit = camera_fit(PixelIntrinsics.of(DepthMetadata((300, 600), (150, 300), 500, 500, 150, 330, 2.0)))
    assert (fit.sensor_fit, fit.resolution) == ("VERTICAL", (300, 600))
    assert fit.lens == pytest.approx(500 * 36 / 600)
    assert fit.shift_y == pytest.approx(30 / 600)


WRITTEN = {
    "version": 1,
    "image_size": [32, 24],
    "analysed_size": [32, 24],
    "fx": 30.0,
    "fy": 30.0,
    "cx": 16.0,
    "cy": 12.0,
    "reference_depth": 2.0,
}  # DepthMetadata.to_json() of a 32×24 analysis


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ({"width": 300, "height": 600, "fx": 500, "fy": 500, "cx": 150, "cy": 330, "reference_depth": 2.0},
         "The depth metadata: image_size is missing."),
        ({**WRITTEN, "reference_depth": None}, "The depth metadata: reference_depth must be a positive number "
                                               "(found None)."),
        ({**WRITTEN, "image_size": ["300", 600]}, "The depth metadata: image_size must be [width, height] in pixels "
                                                  "(found ['300', 600])."),
        ({**WRITTEN, "version": 2}, "The depth metadata has layout version 2, newer than this ImageForge reads (1); "
                                    "update the add-on."),
    ],
)  # fmt: skip
def test_depth_metadata_other_than_the_servers_layout_lands_nothing(
    job_server, photo, capfd, reports, metadata, message
):
    def produce(parameters, directory):
        files = write_depth(directory, np.ones(DEPTH_SIZE[::-1], np.float32), DepthMetadata.from_json(WRITTEN))
        write_json(directory / "depth.json", metadata)
        return files

    job_server.producers["generate-depth-plane-geometry"] = produce
    before = undo_steps(capfd)
    assert run_job_operator(bpy.ops.imageforge.depth_plane) == {"CANCELLED"}
    assert reports == [("WARNING", message)]  # an InputError of the metadata reader (contract/json_fields.py)
    assert "Photo Depth Plane" not in bpy.data.objects
    assert undo_steps(capfd) == before


def test_a_depth_metadata_file_without_version_still_lands(job_server, photo):
    unversioned = {name: value for name, value in WRITTEN.items() if name != "version"}  # before version 1 existed

    def produce(parameters, directory):
        files = write_depth(directory, np.ones(DEPTH_SIZE[::-1], np.float32), DepthMetadata.from_json(WRITTEN))
        write_json(directory / "depth.json", unversioned)
        return files

    job_server.producers["generate-depth-plane-geometry"] = produce
    assert run_job_operator(bpy.ops.imageforge.depth_plane) == {"FINISHED"}
    assert "Photo Depth Plane" in bpy.data.objects


def test_depth_plane_with_nothing_valid_is_an_error(job_server, photo, capfd):
    def produce(parameters, directory):
        return write_depth(
            directory,
            np.zeros(DEPTH_SIZE[::-1], dtype=np.float32),
            DepthMetadata((32, 24), (32, 24), FX, FY, CX, CY, 2.0),
        )

    job_server.producers["generate-depth-plane-geometry"] = produce
    before = undo_steps(capfd)
    assert run_job_operator(bpy.ops.imageforge.depth_plane) == {"CANCELLED"}
    assert "Photo Depth Plane" not in bpy.data.objects
    assert undo_steps(capfd) == before


@pytest.mark.parametrize("operator", ["depth_plane", "cutout"])
def test_a_still_too_small_for_a_camera_is_refused_before_anything_is_sent(job_server, reports, tmp_path, operator):
    tiny = load_photo(tmp_path / "tiny.png", photo_pixels(1, 1))
    tiny.name = "Tiny"
    image_object(tiny)
    options = {"selection": json.dumps({"box": [0, 0, 1, 1]}), "displace": True} if operator == "cutout" else {}
    assert run_job_operator(getattr(bpy.ops.imageforge, operator), **options) == {"CANCELLED"}
    assert reports == [
        ("WARNING", "The image is 1×1 pixels; depth, normals and the camera need at least 2×2 pixels, so use a "
                    "larger image.")
    ]  # fmt: skip
    assert job_server.submitted == []


def disk(width: int, height: int) -> np.ndarray:
    ys, xs = np.mgrid[0:height, 0:width] + 0.5
    return (((xs - width / 2) ** 2 + (ys - height / 2) ** 2) <= (min(width, height) / 2) ** 2).astype(np.float32)


def test_flat_cutout_is_trimmed_to_the_selection(job_server, photo, capfd):
    crop = photo_pixels(32, 32, seed=3)
    crop[..., 3] = disk(32, 32)

    def produce(parameters, directory):
        write_png_rgba(directory / "cutout.png", crop)
        write_png_gray16(directory / "selection_alpha.png", disk(32, 32))
        normal = np.zeros((32, 32, 3), dtype=np.float32)
        normal[...] = (0.5, 0.5, 1.0)
        write_png_rgb(directory / "normal.png", normal)
        return {"cutout": "cutout.png", "selection_alpha": "selection_alpha.png", "normal": "normal.png"}

    job_server.producers["generate-cutout-artifacts"] = produce
    selection = {"box": [16, 8, 48, 40]}
    assert run_job_operator(bpy.ops.imageforge.cutout, selection=json.dumps(selection), subdivisions=4) == {"FINISHED"}
    parameters = job_server.submitted[0][1]
    assert parameters["selection"] == {"box": [16.0, 8.0, 48.0, 40.0]}
    assert (parameters["refine"], parameters["generate_depth"], parameters["normal_mode"]) == (True, False, "tangent")
    assert (parameters["geometry_model"], parameters["background_model"]) == ("MOGE2_VITB_NORMAL", "BEN2_BASE")

    cutout = bpy.data.objects["Photo Cutout"]
    local = np.array([vertex.co for vertex in cutout.data.vertices])
    assert 0 < len(local) < 17 * 17  # the corners outside the disk are gone
    assert np.allclose(local[:, 2], 0.0)
    assert np.abs(local[:, :2]).max() <= 0.5 + 1e-6  # 1 m across
    assert np.hypot(local[:, 0], local[:, 1]).max() < 0.5 + 0.0625 * 1.5  # round within a grid step; corners gone
    assert np.allclose(cutout.location, (1.0, -2.0, 0.5))
    world_normal = cutout.matrix_world.to_3x3() @ Vector((0, 0, 1))
    assert np.allclose(world_normal, (0, -1, 0), atol=1e-6)  # facing the front view
    material = cutout.data.materials[0]
    image = material.node_tree.nodes["Principled BSDF"].inputs["Base Color"].links[0].from_node.image
    assert image.name == "Photo Cutout" and image.packed_file is not None and tuple(image.size) == (32, 32)
    normal_map = material.node_tree.nodes["Principled BSDF"].inputs["Normal"].links[0].from_node
    assert normal_map.space == "TANGENT"
    assert "Photo" in bpy.data.materials["Photo Plane"].node_tree.nodes["Image Texture"].image.name  # untouched
    assert undo_steps(capfd)[-1] == "Cutout"


def test_displaced_cutout_follows_depth_and_is_centred(job_server, photo):
    def produce(parameters, directory):
        width, height = DEPTH_SIZE
        files = write_depth(
            directory,
            np.ones((height, width), dtype=np.float32),
            DepthMetadata(DEPTH_SIZE, DEPTH_SIZE, FX, FY, CX, CY, 2.0),
        )
        write_png_rgba(directory / "cutout.png", photo_pixels(width, height))
        write_png_gray16(directory / "selection_alpha.png", np.ones((height, width), dtype=np.float32))
        return {**files, "cutout": "cutout.png", "selection_alpha": "selection_alpha.png"}

    job_server.producers["generate-cutout-artifacts"] = produce
    outcome = run_job_operator(
        bpy.ops.imageforge.cutout, selection=json.dumps({"lasso": [[0, 0], [64, 0], [32, 48]]}), displace=True
    )
    assert outcome == {"FINISHED"}
    parameters = job_server.submitted[0][1]
    assert (parameters["generate_depth"], parameters["normal_mode"]) == (True, "object")
    cutout = bpy.data.objects["Photo Cutout"]
    local = np.array([vertex.co for vertex in cutout.data.vertices])
    assert np.allclose(local.mean(axis=0), 0.0, atol=1e-5)
    depth_span = local[:, 2].max() - local[:, 2].min()
    assert depth_span == pytest.approx(1.5 * (23.5 - 0.5) / 24, abs=1e-4)  # the floor's depth from row 0 to 23
    normal_map = cutout.data.materials[0].node_tree.nodes["Principled BSDF"].inputs["Normal"].links[0].from_node
    assert normal_map.space == "OBJECT"
