"""Each background tool's own model choice: Preferences (the default) or any background model of the catalog."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from job_server import chosen, run_job_operator
from result_files import write_png_gray16, write_png_rgba
from scenes import image_object, load_photo, photo_pixels


@pytest.fixture
def photo(job_server, tmp_path):
    pixels = photo_pixels(8, 6)
    image = load_photo(tmp_path / "photo.png", pixels)
    image.name = "Photo"
    image_object(image)
    bpy.ops.ed.undo_push(message="Scene ready")

    def remove(parameters, directory):
        write_png_rgba(directory / "foreground.png", pixels)
        return {"foreground": "foreground.png"}

    def refine(parameters, directory):
        write_png_gray16(directory / "alpha.png", np.ones((6, 8), np.float32))
        write_png_rgba(directory / "cutout.png", pixels)
        return {"alpha": "alpha.png", "cutout": "cutout.png"}

    job_server.producers["remove-background"] = remove
    job_server.producers["refine-image-selection"] = refine
    return pixels


def test_the_choice_lists_preferences_and_every_background_model():
    from imageforge.addon.operators.model_choice import _background_items

    keys = [item[0] for item in _background_items(None, None)]
    assert keys[0] == "PREFERENCES"
    assert {"BEN2_BASE", "BIREFNET_GENERAL", "BIREFNET_LITE", "BIREFNET_HR", "BIREFNET_HR_MATTING"} <= set(keys)
    assert not {"MOGE2_VITB_NORMAL", "REALESRGAN_X4PLUS"} & set(keys)  # other families are not offered


@pytest.mark.parametrize(("choice", "sent"), [("PREFERENCES", "BEN2_BASE"), ("BIREFNET_LITE", "BIREFNET_LITE")])
def test_remove_background_sends_the_tools_own_model(job_server, photo, choice, sent):
    assert run_job_operator(bpy.ops.imageforge.remove_background, background_model=choice) == {"FINISHED"}
    [(job_type, parameters)] = job_server.submitted
    assert job_type == "remove-background" and parameters["model"] == sent


def test_refine_selection_sends_the_tools_own_model(job_server, photo):
    selection = '{"box": [0, 0, 8, 6]}'
    call = bpy.ops.imageforge.refine_selection
    assert run_job_operator(call, selection=selection, background_model="BIREFNET_HR_MATTING") == {"FINISHED"}
    [(job_type, parameters)] = job_server.submitted
    assert job_type == "refine-image-selection"
    assert chosen(job_type, parameters)["model"] == "BIREFNET_HR_MATTING"
