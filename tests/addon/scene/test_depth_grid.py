"""Depth meshes tear where depth jumps: a synthetic two-layer scene, as plain geometry and through the operator."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from job_server import run_job_operator
from scenes import image_object, load_photo, photo_pixels
from two_layers import FAR, FX, FY, HEIGHT, NEAR, WIDTH, produce_two_layers, two_layers

from imageforge.addon.scene.depth_grid import TEAR_RATIO_DEFAULT, depth_grid


def layer_of_faces(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Per face, (near corners, far corners) counted from the Blender-space depth (−z)."""
    depth = -vertices[faces][..., 2]
    return np.stack([(np.isclose(depth, NEAR)).sum(axis=1), (np.isclose(depth, FAR)).sum(axis=1)], axis=1)


def test_no_face_spans_the_jump_and_faces_on_both_sides_are_kept():
    points = two_layers()
    weight = np.ones((HEIGHT, WIDTH), np.float32)
    torn = depth_grid(points, weight, 5)  # 31 × 23 quads, one per pixel step
    assert torn.segments == (31, 23)
    layers = layer_of_faces(torn.vertices, torn.faces)
    assert np.all((layers[:, 0] == 4) | (layers[:, 1] == 4))  # every face lies wholly on one layer
    card_faces, wall_faces = int((layers[:, 0] == 4).sum()), int((layers[:, 1] == 4).sum())
    assert card_faces == 11 * 11  # the card's 12 × 12 vertices: every quad inside it is kept
    whole = depth_grid(points, weight, 5, tear_ratio=None)
    spanning = int(((layer_of_faces(whole.vertices, whole.faces) > 0).all(axis=1)).sum())
    assert spanning == 13 * 13 - 11 * 11  # the ring of quads around the card: rubber faces without tearing
    assert len(whole.faces) == 31 * 23 == card_faces + wall_faces + spanning
    assert torn.torn == spanning
    stretched = -whole.vertices[whole.faces][..., 2]
    assert (stretched.max(axis=1) / stretched.min(axis=1)).max() == pytest.approx(FAR / NEAR)


def test_a_receding_floor_keeps_every_face_at_the_default_ratio():
    ys, xs = np.mgrid[0:HEIGHT, 0:WIDTH] + 0.5
    z = 2.0 + 6.0 * ys / HEIGHT  # 2 m to 8 m from top to bottom: steep, but smooth from pixel to pixel
    points = np.stack([xs * z / FX, ys * z / FY, z], axis=-1).astype(np.float32)
    grid = depth_grid(points, np.ones((HEIGHT, WIDTH), np.float32), 5)
    assert TEAR_RATIO_DEFAULT == 1.2
    assert grid.torn == 0 and len(grid.faces) == 31 * 23  # the nearest step is 2.125 → 2.375 m, ratio 1.12
    # A grid far coarser than the depth (12 rows for a 4× depth range) has edges spanning 2.125 → 2.625 m:
    # those read as jumps at the default ratio, and a higher ratio keeps them.
    assert depth_grid(points, np.ones((HEIGHT, WIDTH), np.float32), 4).torn == 16
    assert depth_grid(points, np.ones((HEIGHT, WIDTH), np.float32), 4, tear_ratio=1.3).torn == 0


@pytest.fixture
def photo(job_server, tmp_path):
    image = load_photo(tmp_path / "photo.png", photo_pixels(64, 48))
    image.name = "Photo"
    image_object(image)
    bpy.ops.ed.undo_push(message="Scene ready")
    return image


@pytest.mark.parametrize("tear,expected_faces", [(True, 31 * 23 - 48), (False, 31 * 23)])
def test_convert_to_depth_plane_tears_the_mesh_at_the_jump(job_server, photo, tear, expected_faces):
    job_server.producers["generate-depth-plane-geometry"] = produce_two_layers
    assert run_job_operator(bpy.ops.imageforge.depth_plane, subdivisions=5, tear=tear) == {"FINISHED"}
    mesh = bpy.data.objects["Photo Depth Plane"].data
    assert len(mesh.polygons) == expected_faces
    vertices = np.array([vertex.co for vertex in mesh.vertices])
    faces = np.array([polygon.vertices[:] for polygon in mesh.polygons])
    depth = -vertices[faces][..., 2]
    ratio = (depth.max(axis=1) / depth.min(axis=1)).max()
    assert ratio == (pytest.approx(1.0) if tear else pytest.approx(FAR / NEAR))


def test_a_matte_resampled_to_the_depth_and_a_cutout_centred_on_its_origin():
    from imageforge.addon.scene.depth_grid import centred, flat_grid, resample_nearest

    matte = np.array([[0.0, 1.0], [0.5, 0.25]], np.float32)
    assert resample_nearest(matte, (4, 6)).tolist() == [[0.0] * 3 + [1.0] * 3] * 2 + [[0.5] * 3 + [0.25] * 3] * 2
    grid = flat_grid(np.ones((4, 6), np.float32), 2, 1.0)
    moved, centre = centred(grid)
    assert np.allclose(moved.vertices.mean(axis=0), 0) and np.allclose(moved.vertices + centre, grid.vertices)
    empty = flat_grid(np.zeros((4, 6), np.float32), 2, 1.0)
    assert centred(empty)[0] is empty and centred(empty)[1].tolist() == [0.0, 0.0, 0.0]
