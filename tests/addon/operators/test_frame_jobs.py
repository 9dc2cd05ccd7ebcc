"""Remove Background and Upscale on every frame: Sequencer strips, movie clips and sequence images in real
Blender, landing real PNG sequences written by the recording server's producers."""

from __future__ import annotations

import os
import struct
import wave
from pathlib import Path

import bpy
import pytest
from frame_files import sequence_producer, write_frames
from job_server import run_job_operator
from scenes import undo_steps

from imageforge.addon.scene.sequencer import content_start, span, top_strips, trim


def add_effect(editor, name: str, channel: int, start: int, length: int):
    """A colour strip (the effect API's length argument differs between 4.5 and 5.x)."""
    try:
        return top_strips(editor).new_effect(name, "COLOR", channel, frame_start=start, length=length)
    except TypeError:
        return top_strips(editor).new_effect(name, "COLOR", channel, frame_start=start, frame_end=start + length)


def render_movie(folder: Path, frames: int, *, audio: bool) -> Path:
    """A real H.264 movie rendered by Blender itself (a colour strip, optionally a tone as AAC audio)."""
    scene = bpy.data.scenes.new("Movie Maker")
    editor = scene.sequence_editor_create()
    add_effect(editor, "Red", 1, 1, frames)
    if audio:
        tone = folder / "tone.wav"
        with wave.open(str(tone), "wb") as handle:
            handle.setnchannels(1), handle.setsampwidth(2), handle.setframerate(48000)
            handle.writeframes(b"".join(struct.pack("<h", (i * 97) % 8000) for i in range(48000)))
        top_strips(editor).new_sound("Tone", str(tone), 2, 1)
    render = scene.render
    render.resolution_x, render.resolution_y, render.resolution_percentage = 32, 32, 100
    scene.frame_start, scene.frame_end = 1, frames
    if hasattr(render.image_settings, "media_type"):  # Blender 5: movies are a media type of their own
        render.image_settings.media_type = "VIDEO"
    render.image_settings.file_format = "FFMPEG"
    render.ffmpeg.format, render.ffmpeg.codec = "MPEG4", "H264"
    render.ffmpeg.audio_codec = "AAC" if audio else "NONE"
    render.filepath = str(folder / "clip_")
    with bpy.context.temp_override(scene=scene):
        bpy.ops.render.render(animation=True, scene=scene.name)
    bpy.data.scenes.remove(scene)
    (movie,) = folder.glob("clip_*.mp4")
    return movie


@pytest.fixture
def sequencer(job_server):
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 100
    return scene.sequence_editor_create()


def test_an_image_strip_becomes_a_cutout_strip_above_it(job_server, sequencer, tmp_path, capfd):
    files = write_frames(tmp_path / "shot", range(1, 7))
    strip = top_strips(sequencer).new_image("Shot", str(files[0]), 2, 10)
    for path in files[1:]:
        strip.elements.append(path.name)
    trim(strip, 1, 1)  # trimmed: scene frames 11–14 show frames 2–5
    add_effect(sequencer, "Busy", 3, 12, 2)  # channel 3 is taken over part of the range
    sequencer.active_strip = strip
    bpy.ops.ed.undo_push(message="Scene ready")
    job_server.producers["remove-background"] = sequence_producer("foreground")

    assert run_job_operator(bpy.ops.imageforge.remove_background_frames) == {"FINISHED"}
    [(job_type, parameters)] = job_server.submitted
    assert job_type == "remove-background"
    assert parameters == {
        "input": str(tmp_path / "shot" / "shot_####.png"),
        "first_frame": 1,
        "frame_count": 4,
        "sequence_output": "png_sequence",
        "steady_edges": False,
        "output_kind": "foreground",
        "estimate_foreground": True,
        "premultiplied": False,
        "background_color": None,
        "model": "BEN2_BASE",
        "device": "auto",
        "max_input_size": 2048,
    }
    result = top_strips(sequencer)["Shot Cutout"]
    assert (result.type, result.channel, span(result)) == ("IMAGE", 4, (11, 15))
    assert [element.filename for element in result.elements] == [f"frame_{n:04d}.png" for n in range(2, 6)]
    assert sequencer.active_strip == result
    untouched = top_strips(sequencer)["Shot"]
    assert (untouched.channel, span(untouched)) == (2, (11, 15))
    steps = undo_steps(capfd)
    assert steps[-1] == "Remove Background (Frames)" and steps.count("Remove Background (Frames)") == 1
    bpy.ops.ed.undo()
    assert "Shot Cutout" not in top_strips(bpy.context.scene.sequence_editor)


def test_the_scene_range_limits_the_frames(job_server, sequencer, tmp_path):
    files = write_frames(tmp_path / "shot", range(1, 7))
    strip = top_strips(sequencer).new_image("Shot", str(files[0]), 1, 10)
    for path in files[1:]:
        strip.elements.append(path.name)
    sequencer.active_strip = strip
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 12, 13
    job_server.producers["upscale-image"] = sequence_producer("upscale", size=(16, 12))

    assert run_job_operator(bpy.ops.imageforge.upscale_frames, frame_range="SCENE", scale="2") == {"FINISHED"}
    [(_, parameters)] = job_server.submitted
    assert (parameters["first_frame"], parameters["frame_count"], parameters["scale"]) == (2, 2, 2)
    result = top_strips(sequencer)["Shot 2×"]
    assert (result.channel, span(result)) == (2, (12, 14))
    assert result.transform.scale_x == pytest.approx(strip.transform.scale_x / 2)  # more pixels, same place


def test_a_movie_strip_with_audio_gets_an_image_strip_and_its_sound(job_server, sequencer, tmp_path):
    movie = render_movie(tmp_path, 5, audio=True)
    strip = top_strips(sequencer).new_movie("Take", str(movie), 1, 20)
    trim(strip, 1, 0)  # scene frames 21–24 show movie frames 2–5
    sequencer.active_strip = strip
    job_server.producers["remove-background"] = sequence_producer("foreground")

    assert run_job_operator(bpy.ops.imageforge.remove_background_frames) == {"FINISHED"}
    [(_, parameters)] = job_server.submitted
    assert (parameters["input"], parameters["first_frame"], parameters["frame_count"]) == (str(movie), 1, 4)
    result = top_strips(sequencer)["Take Cutout"]
    assert (result.type, result.channel, span(result)) == ("IMAGE", 2, (21, 25))
    sound = top_strips(sequencer)["Take Cutout Audio"]
    assert (sound.type, sound.channel, span(sound)) == ("SOUND", 3, (21, 25))
    assert content_start(sound) == 20  # the audio is where the movie's own is: in sync with the frames
    assert top_strips(sequencer)["Take"].type == "MOVIE"


def test_a_movie_without_audio_gets_no_sound_strip(job_server, sequencer, tmp_path):
    movie = render_movie(tmp_path, 3, audio=False)
    sequencer.active_strip = top_strips(sequencer).new_movie("Take", str(movie), 1, 1)
    job_server.producers["remove-background"] = sequence_producer("foreground")
    assert run_job_operator(bpy.ops.imageforge.remove_background_frames) == {"FINISHED"}
    assert sorted(strip.name for strip in top_strips(sequencer)) == ["Take", "Take Cutout"]


def test_an_image_editor_movie_becomes_a_sequence_image(job_server, tmp_path):
    from imageforge.addon.scene.frame_sources import SourceKind, find_frame_source, image_source

    movie = render_movie(tmp_path, 3, audio=False)
    image = bpy.data.images.load(str(movie))
    assert image.source == "MOVIE"
    user = bpy.data.textures.new("User", "IMAGE").image_user  # an ImageUser with the defaults an editor has
    source = image_source(image, user)
    assert (source.kind, source.job_input, source.first_frame, source.frame_count) == (
        SourceKind.IMAGE,
        str(movie),
        0,
        3,
    )
    folder = tmp_path / "result"
    files = write_frames(folder, range(1, 4), name="frame")
    from imageforge.addon.scene.frame_results import land_frames

    name = land_frames(bpy.context.scene, source, files[0], "Cutout")
    landed = bpy.data.images[name]
    assert (landed.source, Path(landed.filepath).name) == ("SEQUENCE", "frame_0001.png")
    assert image.source == "MOVIE"  # the source is untouched
    with pytest.raises(Exception, match="No clip"):
        find_frame_source(bpy.context)


def test_a_movie_clip_becomes_a_sequence_clip(job_server, tmp_path):
    from imageforge.addon.scene.frame_results import land_frames
    from imageforge.addon.scene.frame_sources import clip_source

    movie = render_movie(tmp_path, 3, audio=False)
    clip = bpy.data.movieclips.load(str(movie))
    clip.frame_start = 5
    source = clip_source(clip)
    assert (source.first_frame, source.frame_count, source.scene_start) == (0, 3, 5)
    files = write_frames(tmp_path / "result", range(1, 4), name="frame")
    landed = bpy.data.movieclips[land_frames(bpy.context.scene, source, files[0], "Cutout")]
    assert (landed.source, landed.frame_start, landed.frame_duration) == ("SEQUENCE", 5, 3)


def test_a_missing_result_frame_changes_nothing(job_server, sequencer, tmp_path, reports):
    files = write_frames(tmp_path / "shot", range(1, 4))
    strip = top_strips(sequencer).new_image("Shot", str(files[0]), 1, 1)
    for path in files[1:]:
        strip.elements.append(path.name)
    sequencer.active_strip = strip
    produce = sequence_producer("foreground")

    def short(parameters, directory):
        result = produce(parameters, directory)
        os.remove(directory / "foreground" / "frame_0003.png")
        return result

    job_server.producers["remove-background"] = short
    assert run_job_operator(bpy.ops.imageforge.remove_background_frames) == {"CANCELLED"}
    assert [strip.name for strip in top_strips(sequencer)] == ["Shot"]
    assert reports == [("ERROR", "The job wrote 2 frame(s) where 3 were expected; nothing was changed.")]
