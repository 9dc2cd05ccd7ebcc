"""Send to Farm… in real Blender: the farm job for the active strip, written with the tool's settings, and the
message that says where it went and how to submit it. Nothing runs and no server starts."""

from __future__ import annotations

import json
from pathlib import Path

import bpy
import numpy as np
import pytest
from operators.test_frame_jobs import render_movie
from result_files import write_png_rgba

from imageforge.addon.operators.send_to_farm import IMAGEFORGE_OT_send_to_farm
from imageforge.addon.scene.sequencer import top_strips, trim


@pytest.fixture
def told(monkeypatch):
    said: list[tuple[str, str]] = []
    monkeypatch.setattr(IMAGEFORGE_OT_send_to_farm, "tell", lambda self, level, message: said.append((level, message)))
    return said


@pytest.fixture
def sequencer(addon):
    from scenes import empty_scene

    empty_scene()
    return bpy.context.scene.sequence_editor_create()


def image_strip(sequencer, folder: Path, numbers) -> object:
    folder.mkdir(parents=True, exist_ok=True)
    for number in numbers:
        write_png_rgba(folder / f"plate_{number:04d}.png", np.full((6, 8, 4), 0.5, dtype=np.float32))
    strip = top_strips(sequencer).new_image("Plate", str(folder / f"plate_{numbers[0]:04d}.png"), 2, 1)
    for number in numbers[1:]:
        strip.elements.append(f"plate_{number:04d}.png")
    sequencer.active_strip = strip
    return strip


def test_an_openjd_bundle_for_a_trimmed_sequence_strip(sequencer, tmp_path, told):
    strip = image_strip(sequencer, tmp_path / "plates", range(1001, 1007))
    trim(strip, 1, 2)  # the strip shows plates 1002-1004
    out = tmp_path / "farm"
    result = bpy.ops.imageforge.send_to_farm(tool="UPSCALE_2", farm="OPENJD", chunk_size=2, directory=str(out))
    assert result == {"FINISHED"}
    bundle = out / "Plate.upscale-image" / "openjd-bundle"
    template = (bundle / "template.yaml").read_text(encoding="utf-8")
    values = (bundle / "parameter_values.yaml").read_text(encoding="utf-8")
    assert 'specificationVersion: "jobtemplate-2023-09"' in template
    assert '"scale=2"' in template and '"sequence_output=png_sequence"' in template and '"--into"' in template
    assert 'default: "1002-1004"' in template
    assert f'value: "{tmp_path / "plates" / "plate_####.png"}"' in values
    assert f'value: "{out / "Plate.upscale-image" / "frames"}"' in values
    ((level, message),) = told
    assert level == "INFO" and f"deadline bundle submit {bundle}" in message and "2 task(s)" in message


def test_a_flamenco_job_for_a_movie_strip_numbers_frames_from_one(sequencer, tmp_path, told):
    movie = render_movie(tmp_path, 5, audio=False)
    strip = top_strips(sequencer).new_movie("Take", str(movie), 1, 1)
    trim(strip, 1, 1)  # movie frames 2-4
    sequencer.active_strip = strip
    result = bpy.ops.imageforge.send_to_farm(tool="REMOVE_BACKGROUND", farm="FLAMENCO", deliver="VIDEO")
    assert result == {"FINISHED"}
    folder = movie.parent / "Take.remove-background"
    submission = json.loads((folder / "flamenco-job.json").read_text(encoding="utf-8"))
    assert submission["type"] == "imageforge" and submission["submitter_platform"] == "linux"
    settings = submission["settings"]
    assert settings["frames"] == "2-4" and settings["imageforge_job"] == "remove-background"
    assert settings["input"] == str(movie) and settings["output_folder"] == str(folder)
    assert json.loads(settings["parameters"])["sequence_output"] == "video"
    assert (folder / "imageforge.js").read_text(encoding="utf-8").count("function compileJob") == 1
    ((level, message),) = told
    assert level == "INFO" and "/api/v3/jobs" in message and "scripts/" in message


def test_without_a_clip_the_button_says_why(sequencer):
    assert not IMAGEFORGE_OT_send_to_farm.poll(bpy.context)
    with pytest.raises(RuntimeError, match="No clip"):
        bpy.ops.imageforge.send_to_farm()


def test_a_folder_that_cannot_be_written_is_a_warning(sequencer, tmp_path, told):
    image_strip(sequencer, tmp_path / "plates", range(1, 4))
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert bpy.ops.imageforge.send_to_farm(directory=str(blocker)) == {"CANCELLED"}
    ((level, message),) = told
    assert level == "WARNING" and "Traceback" not in message
