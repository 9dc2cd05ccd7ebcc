"""The outline Draw Selection shows while dragging, drawn by Blender's GPU module into an offscreen buffer.

Blender 5.x initialises its GPU module headless (`gpu.init()`, here on Mesa's EGL); bpy 4.5 has no GPU in
background mode at all, so the drawing test runs on 5.2 and 5.3 only. The add-on suite turns deprecation
warnings into errors (conftest.py), so the drawing test also fails if the overlay uses an API these releases
deprecate (UNIFORM_COLOR with `line_width_set`, which Metal and Vulkan draw 1 px wide).
"""

from __future__ import annotations

import bpy
import gpu
import numpy as np
import pytest
from mathutils import Matrix

from imageforge.addon.operators.draw_selection import OUTLINE_COLOUR, OUTLINE_WIDTH, draw_outline, outline_points

SIZE = 64


def test_the_outline_is_closed_and_a_box_uses_its_first_and_last_points():
    assert outline_points([(10, 12)], "BOX") == []
    assert outline_points([(10, 12), (30, 30), (40, 50)], "BOX") == [(10, 12), (40, 12), (40, 50), (10, 50), (10, 12)]
    lasso = [(1, 1), (9, 2), (5, 8)]
    assert outline_points(lasso, "LASSO") == [*lasso, (1, 1)]


@pytest.fixture(scope="module")
def offscreen():
    if bpy.app.version < (5, 0, 0):
        pytest.skip(f"Blender {bpy.app.version_string} cannot draw in background mode (gpu.init arrived in 5.0)")
    gpu.init()
    buffer = gpu.types.GPUOffScreen(SIZE, SIZE)
    yield buffer
    buffer.free()


def draw_in_region_pixels(offscreen, outline) -> np.ndarray:
    """Draw as a POST_PIXEL handler would (pixel-space projection), return RGBA rows bottom-up."""
    with offscreen.bind():
        framebuffer = gpu.state.active_framebuffer_get()
        framebuffer.clear(color=(0.0, 0.0, 0.0, 0.0))
        with gpu.matrix.push_pop(), gpu.matrix.push_pop_projection():
            gpu.matrix.load_identity()
            projection = Matrix.Identity(4)
            projection[0][0] = projection[1][1] = 2 / SIZE
            projection[0][3] = projection[1][3] = -1.0
            gpu.matrix.load_projection_matrix(projection)
            draw_outline(outline)
        pixels = framebuffer.read_color(0, 0, SIZE, SIZE, 4, 0, "FLOAT")
    return np.array(pixels.to_list(), dtype=np.float32).reshape(SIZE, SIZE, 4)


def test_the_box_outline_is_drawn_two_pixels_wide_in_orange(offscreen):
    pixels = draw_in_region_pixels(offscreen, outline_points([(10, 10), (50, 40)], "BOX"))
    lit = pixels[..., 3] > 0.5
    # Across each edge, in the middle of it: a band OUTLINE_WIDTH px wide centred on the edge's line.
    assert np.flatnonzero(lit[25, :20]).tolist() == [9, 10]  # left edge, x = 10
    assert np.flatnonzero(lit[25, 40:]).tolist() == [9, 10]  # right edge, x = 50
    assert np.flatnonzero(lit[:20, 30]).tolist() == [9, 10]  # bottom edge, y = 10
    assert np.flatnonzero(lit[30:, 30]).tolist() == [9, 10]  # top edge, y = 40
    assert lit.sum() == pytest.approx(OUTLINE_WIDTH * 2 * (40 + 30), rel=0.05)
    assert not lit[13:37, 13:47].any() and not lit[45:].any()  # inside and outside stay clear
    np.testing.assert_allclose(pixels[25, 10, :3], OUTLINE_COLOUR[:3], atol=0.02)
