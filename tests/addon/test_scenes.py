"""The scene helpers every add-on test starts from (scenes.py): emptying a scene leaves nothing that points at freed
Blender data, whatever Blender's own removal forgets."""

from __future__ import annotations

import bpy
from result_files import write_png_rgba
from scenes import photo_pixels, remove_movie_clips


def test_removed_movie_clips_leave_no_camera_background_pointing_at_them(tmp_path):
    for number in (1, 2):
        write_png_rgba(tmp_path / f"shot_{number:04d}.png", photo_pixels(8, 6, seed=number))
    clip = bpy.data.movieclips.load(str(tmp_path / "shot_0001.png"))
    camera = bpy.data.cameras.new("Clip Camera")
    background = camera.background_images.new()
    background.source = "MOVIE_CLIP"
    background.clip = clip  # as Camera Path from Video lands its camera
    still = bpy.data.images.new("Still", 4, 4)
    kept = camera.background_images.new()
    kept.image = still

    remove_movie_clips()

    assert len(bpy.data.movieclips) == 0
    # bpy.data.movieclips.remove alone leaves the background's clip set to the freed clip (Blender 4.5, 5.2, 5.3)
    assert [(item.source, item.clip, item.image) for item in camera.background_images] == [("IMAGE", None, still)]
    bpy.data.cameras.remove(camera)  # walks the camera's pointers: where a freed clip crashed Blender
    bpy.data.images.remove(still)
