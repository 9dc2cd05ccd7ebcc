"""Real scene content for operator tests: photos on disk, objects showing them, and the undo history."""

from __future__ import annotations

import re
from pathlib import Path

import bpy
import numpy as np
from result_files import write_exr, write_png_rgba

from imageforge.addon.scene.materials import new_node_material


def empty_scene() -> None:
    """Remove every object, mesh, material, image, camera, movie clip and sequencer strip, and the collections and
    node groups reconstructions made, so names in a test are its own."""
    data = bpy.data
    for collection in (data.objects, data.meshes, data.materials, data.images, data.cameras):
        bpy.data.batch_remove(list(collection))
    made = [
        item for items in (data.collections, data.node_groups) for item in items if "imageforge_reconstruction" in item
    ]
    bpy.data.batch_remove(made)
    remove_movie_clips()
    bpy.context.scene.sequence_editor_clear()
    bpy.context.scene.camera = None
    bpy.context.scene.cursor.location = (0.0, 0.0, 0.0)


def remove_movie_clips() -> None:
    """Remove every movie clip, first taking it out of every camera's background images.

    Blender (4.5, 5.2 and 5.3 alike) does not unlink a removed movie clip from the cameras whose background shows
    it: its list of what a camera can use names objects and images only (lib_query's
    `BKE_library_id_can_use_filter_id`, `ID_CA`), so the removal skips cameras and their `CameraBGImage.clip`
    keeps pointing at freed memory. The next removal that walks that camera (deleting it, in the next test's
    empty_scene) reads the freed clip: the add-on suite's "Segmentation fault in batch_remove" after Camera Path
    from Video's tests, in about half the runs under Blender 4.5 (tests/addon/test_scenes.py checks the pointer
    is cleared).
    """
    data = bpy.data
    clips = set(data.movieclips)
    for camera in data.cameras:
        for background in list(camera.background_images):
            if background.clip in clips:
                background.clip = None
                camera.background_images.remove(background)
    bpy.data.batch_remove(list(clips))


def photo_pixels(width: int, height: int, seed: int = 0) -> np.ndarray:
    """An opaque (h, w, 4) photo with distinct 8-bit values, top row first."""
    rng = np.random.default_rng(seed)
    pixels = np.ones((height, width, 4), dtype=np.float32)
    pixels[..., :3] = rng.integers(0, 256, size=(height, width, 3)) / 255.0
    return pixels


def load_photo(path: Path, pixels: np.ndarray) -> bpy.types.Image:
    if path.suffix == ".exr":
        write_exr(path, pixels)
    else:
        write_png_rgba(path, pixels)
    return bpy.data.images.load(str(path), check_existing=False)


def image_object(image: bpy.types.Image, name: str = "Photo Plane") -> bpy.types.Object:
    """A plane whose material shows `image` as Base Color, made the active object."""
    material = new_node_material(name)
    node = material.node_tree.nodes.new("ShaderNodeTexImage")
    node.image = image
    bsdf = material.node_tree.nodes["Principled BSDF"]
    material.node_tree.links.new(node.outputs["Color"], bsdf.inputs["Base Color"])
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata([(0, 0, 0), (1, 0, 0), (1, 0, 1), (0, 0, 1)], [], [(0, 1, 2, 3)])
    mesh.uv_layers.new(name="UVMap").data.foreach_set("uv", [0, 0, 1, 0, 1, 1, 0, 1])
    mesh.materials.append(material)
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    return obj


def undo_steps(capfd) -> list[str]:
    """Names in Blender's undo history, oldest first (print_undo_steps writes to the C stdout)."""
    capfd.readouterr()
    bpy.context.window_manager.print_undo_steps()
    return re.findall(r"name='([^']*)'", capfd.readouterr().out)
