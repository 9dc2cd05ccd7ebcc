"""Batches in real Blender: Upscale Textures of Selected Objects and Remove Background of Selected Strips, one
job per item on the (recording) server, one undo step, one summary report."""

from __future__ import annotations

from pathlib import Path

import bpy
import numpy as np
import pytest
from job_server import run_job_operator
from result_files import write_png_rgba
from scenes import image_object, load_photo, photo_pixels, undo_steps

from imageforge.addon.scene.sequencer import span, top_strips


def upscale_producer(sizes: dict[str, tuple[int, int]], fail: str | None = None):
    def produce(parameters, directory):
        name = Path(parameters["input"]).stem
        if name == fail:
            return None
        width, height = sizes[name]
        scale = parameters["scale"]
        write_png_rgba(directory / "upscale.png", np.full((height * scale, width * scale, 4), 0.5, np.float32))
        return {"upscale": "upscale.png"}

    return produce


def summary() -> str:
    """The batch's closing message: what the status bar and the report show."""
    from imageforge.addon import blender_runtime

    return blender_runtime.get_runtime().message


@pytest.fixture
def textured(job_server, tmp_path):
    """Two selected objects sharing one texture, each with one of its own, and an unselected third."""
    images = {}
    for name, size in (("rock", (8, 6)), ("moss", (4, 4)), ("bark", (6, 4)), ("other", (2, 2))):
        images[name] = load_photo(tmp_path / f"{name}.png", photo_pixels(*size))
    first = image_object(images["rock"], "First")
    first.data.materials[0].node_tree.nodes.new("ShaderNodeTexImage").image = images["moss"]
    second = image_object(images["moss"], "Second")
    second.data.materials[0].node_tree.nodes.new("ShaderNodeTexImage").image = images["bark"]
    image_object(images["other"], "Unselected")
    for obj in bpy.context.view_layer.objects:
        obj.select_set(obj.name in {"First", "Second"})
    bpy.ops.ed.undo_push(message="Scene ready")
    return images


SIZES = {"rock": (8, 6), "moss": (4, 4), "bark": (6, 4), "other": (2, 2)}


def test_every_texture_of_the_selected_objects_is_upscaled_once_in_one_undo_step(job_server, textured, capfd):
    job_server.producers["upscale-image"] = upscale_producer(SIZES)
    assert run_job_operator(bpy.ops.imageforge.upscale_textures, scale="2") == {"FINISHED"}
    assert [Path(parameters["input"]).name for _, parameters in job_server.submitted] == [
        "rock.png",
        "moss.png",
        "bark.png",
    ]
    assert len(job_server.completed) == 3  # every job was marked complete, not only the last
    for name in ("rock", "moss", "bark"):
        image = bpy.data.images[f"{name}.png"]
        assert tuple(image.size) == (SIZES[name][0] * 2, SIZES[name][1] * 2)
        assert image.packed_file is not None  # the default preference packs
    assert tuple(bpy.data.images["other.png"].size) == (2, 2)
    assert summary() == "3 done"
    steps = undo_steps(capfd)
    assert steps[-1] == "Upscale Textures of Selected Objects"
    assert steps.count("Upscale Textures of Selected Objects") == 1
    bpy.ops.ed.undo()
    assert tuple(bpy.data.images["rock.png"].size) == (8, 6)


def test_a_failing_texture_is_reported_and_the_batch_goes_on(job_server, textured, tmp_path):
    (tmp_path / "bark.png").unlink()
    bpy.data.images["bark.png"].reload()  # its file is gone: Blender shows no pixels
    job_server.producers["upscale-image"] = upscale_producer(SIZES, fail="rock")
    assert run_job_operator(bpy.ops.imageforge.upscale_textures, scale="2") == {"FINISHED"}
    assert [Path(parameters["input"]).name for _, parameters in job_server.submitted] == ["rock.png", "moss.png"]
    assert tuple(bpy.data.images["moss.png"].size) == (8, 8)
    assert tuple(bpy.data.images["rock.png"].size) == (8, 6)
    assert summary() == (
        "1 done, 2 failed: rock.png — The model ran out of memory; "
        "bark.png — Image 'bark.png' has no pixels (is its file missing?)"
    )


def test_save_beside_writes_a_new_file_next_to_the_original_and_never_overwrites(job_server, textured, tmp_path):
    from imageforge.addon import preferences

    preferences.get_preferences().texture_results = "SAVE_BESIDE"
    taken = tmp_path / "rock_2x.png"
    taken.write_bytes(b"the artist's own file")
    for obj in bpy.context.view_layer.objects:
        obj.select_set(obj.name == "First")
    job_server.producers["upscale-image"] = upscale_producer(SIZES)
    try:
        assert run_job_operator(bpy.ops.imageforge.upscale_textures, scale="2") == {"FINISHED"}
    finally:
        preferences.get_preferences().texture_results = "PACK"
    assert taken.read_bytes() == b"the artist's own file"
    rock = bpy.data.images["rock.png"]
    assert Path(bpy.path.abspath(rock.filepath)) == tmp_path / "rock_2x-2.png"
    assert rock.packed_file is None and tuple(rock.size) == (16, 12)
    assert (tmp_path / "moss_2x.png").is_file()
    assert (tmp_path / "rock.png").is_file()  # the original stays


def test_remove_background_of_selected_strips(job_server, tmp_path, capfd):
    from frame_files import sequence_producer, write_frames

    scene = bpy.context.scene
    editor = scene.sequence_editor_create()
    for index, name in enumerate(("Left", "Right", "Ignored")):
        files = write_frames(tmp_path / name, range(1, 4), name=name.lower())
        strip = top_strips(editor).new_image(name, str(files[0]), 1, 1 + 10 * index)
        for path in files[1:]:
            strip.elements.append(path.name)
        strip.select = name != "Ignored"
    bpy.ops.ed.undo_push(message="Scene ready")
    job_server.producers["remove-background"] = sequence_producer("foreground")
    assert run_job_operator(bpy.ops.imageforge.remove_background_strips) == {"FINISHED"}
    assert len(job_server.submitted) == 2
    names = sorted(strip.name for strip in top_strips(editor))
    assert names == ["Ignored", "Left", "Left Cutout", "Right", "Right Cutout"]
    assert span(top_strips(editor)["Right Cutout"]) == (11, 14)
    assert summary() == "2 done"
    steps = undo_steps(capfd)
    assert steps[-1] == "Remove Background of Selected Strips"
