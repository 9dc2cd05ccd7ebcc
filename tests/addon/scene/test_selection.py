"""Selection geometry: what a drawn box or lasso becomes in image pixels, on the editor and on image planes."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
from mathutils import Vector
from scenes import empty_scene


def test_view_and_pixel_coordinates_flip_y_once():
    from imageforge.addon.scene.selection import view_to_pixel

    assert view_to_pixel(0.0, 1.0, 640, 480) == (0.0, 0.0)  # the top-left corner
    assert view_to_pixel(0.25, 0.25, 640, 480) == (160.0, 360.0)
    assert view_to_pixel(0.3, 0.7, 640, 480) == pytest.approx((192.0, 144.0))


def test_box_is_ordered_clipped_and_refused_when_tiny():
    from imageforge.addon.scene.selection import box_selection

    assert box_selection((50, 80), (-10, 20), 100, 60) == {"box": [0.0, 20.0, 50.0, 60.0]}
    assert box_selection((10, 10), (10.5, 40), 100, 60) is None


def test_lasso_is_thinned_clipped_and_needs_an_area():
    from imageforge.addon.scene.selection import lasso_selection

    dense = [(10 + 0.1 * i, 10) for i in range(100)] + [(20, 30), (-5, 30)]
    lasso = lasso_selection(dense, 100, 100)["lasso"]
    assert lasso[0] == [10.0, 10.0] and [0.0, 30.0] in lasso
    assert all(math.dist(a, b) >= 1.5 for a, b in zip(lasso, lasso[1:], strict=False))
    assert lasso_selection([(0, 0), (50, 50), (100, 100)], 100, 100) is None  # collinear


def test_masks_select_pixel_centres_inside():
    from imageforge.addon.scene.selection import selection_mask

    box = selection_mask({"box": [2, 1, 6, 4]}, 8, 6)
    assert box.sum() == 12 and box[1:4, 2:6].all()
    triangle = selection_mask({"lasso": [[0, 0], [100, 0], [0, 100]]}, 100, 100)
    assert triangle.sum() == pytest.approx(5000, abs=60)
    assert triangle[0, 0] and not triangle[99, 99] and triangle[10, 80] and not triangle[80, 30]
    ring = [[50 + 40 * math.cos(a), 50 + 40 * math.sin(a)] for a in np.linspace(0, 2 * math.pi, 200)[:-1]]
    assert selection_mask({"lasso": ring}, 100, 100).sum() == pytest.approx(math.pi * 1600, rel=0.01)


def test_image_empty_uv_follows_size_offset_and_aspect():
    from imageforge.addon.scene.selection import empty_uv

    offset = (-0.5, -0.5)  # Blender's default: centred
    assert empty_uv((0.0, 0.0), 2.0, offset, 400, 200) == pytest.approx((0.5, 0.5))
    assert empty_uv((-1.0, 0.5), 2.0, offset, 400, 200) == pytest.approx((0.0, 1.0))  # top-left corner
    assert empty_uv((0.0, 0.6), 2.0, offset, 400, 200) is None  # above a 2:1 picture
    assert empty_uv((1.0, 1.0), 2.0, (0.0, 0.0), 200, 400) == pytest.approx((1.0, 0.5))  # portrait: 1 × 2


def test_picking_on_an_image_empty_and_on_a_textured_mesh(addon):
    from imageforge.addon.operators.draw_selection import pixel_on_empty, pixel_on_mesh

    empty_scene()
    image = bpy.data.images.new("Plane Photo", 400, 200)
    empty = bpy.data.objects.new("Photo Empty", None)
    empty.empty_display_type, empty.data, empty.empty_display_size = "IMAGE", image, 2.0
    empty.location = (0, 0, 1)
    bpy.context.collection.objects.link(empty)
    down = Vector((0, 0, -1))
    assert pixel_on_empty(empty, Vector((0.5, 0.25, 5)), down, (400, 200)) == pytest.approx((300.0, 50.0))
    assert pixel_on_empty(empty, Vector((3, 0, 5)), down, (400, 200)) is None

    bpy.ops.mesh.primitive_plane_add(size=2.0, location=(0, 0, 0), rotation=(math.pi / 2, 0, 0))
    plane = bpy.context.active_object  # upright, facing -Y, UVs spanning the photo
    plane.scale = (2.0, 1.0, 1.0)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    towards = Vector((0, 1, 0))
    assert pixel_on_mesh(plane, depsgraph, Vector((1.0, -5, 0.5)), towards, (400, 200)) == pytest.approx(
        (300.0, 50.0), abs=1e-3
    )
    assert pixel_on_mesh(plane, depsgraph, Vector((-2.0, -5, -1.0)), towards, (400, 200)) == pytest.approx(
        (0.0, 200.0), abs=1e-3
    )
    assert pixel_on_mesh(plane, depsgraph, Vector((5.0, -5, 0)), towards, (400, 200)) is None


def test_depth_grid_faces_point_at_the_camera_and_portrait_segments():
    from imageforge.addon.scene.depth_grid import depth_grid, grid_segments

    assert grid_segments(480, 640, 5) == (24, 32)
    assert grid_segments(10, 5, 10) == (9, 4)  # never more segments than pixels
    points = np.zeros((4, 4, 3), dtype=np.float32)
    ys, xs = np.mgrid[0:4, 0:4]
    points[..., 0], points[..., 1], points[..., 2] = xs - 1.5, ys - 1.5, 3.0
    grid = depth_grid(points, np.ones((4, 4), dtype=np.float32), 2)
    a, b, c = (grid.vertices[index] for index in grid.faces[0][:3])
    normal = np.cross(b - a, c - b)
    assert normal[2] > 0  # +Z in camera space: towards a camera looking down -Z
    assert np.allclose(grid.vertices[:, 2], -3.0)
    assert np.allclose(grid.uvs[0], (0.0, 1.0))  # the top-left vertex maps to the photo's top-left


def test_a_figure_eight_lasso_is_kept():
    from imageforge.addon.scene.selection import lasso_selection

    eight = [(10, 10), (50, 50), (50, 10), (10, 50)]
    assert lasso_selection(eight, 100, 100, spacing=0.0) == {
        "lasso": [[10.0, 10.0], [50.0, 50.0], [50.0, 10.0], [10.0, 50.0]]
    }


def test_a_mask_selection_round_trips_and_lands_where_it_is_inside():
    from imageforge.addon.scene.selection import encode_mask, refined_region, selection_bounds, selection_mask
    from imageforge.contract.parameters import Selection

    inside = np.zeros((6, 8), bool)
    inside[1:3, 2:5] = True
    inside[4, 7] = True
    selection = encode_mask(inside)
    assert Selection.parse("selection", selection).to_dict() == selection  # what the contract accepts
    np.testing.assert_array_equal(selection_mask(selection, 8, 6), inside)
    assert selection_bounds(selection) == (2.0, 1.0, 8.0, 5.0)
    matte = np.zeros((6, 8), np.float32)
    matte[0, 2] = 0.5  # within the server's crop, around the mask
    expected = inside.copy()
    expected[0, 2] = True
    np.testing.assert_array_equal(refined_region(selection, 0, matte), expected)
    with pytest.raises(ValueError, match="8×6 mask on a 9×6 image"):
        selection_mask(selection, 9, 6)
