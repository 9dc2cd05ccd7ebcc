"""The Open Job Description bundle `imageforge farm openjd` writes, run for real by openjd-cli's `openjd run`
(as a farm worker runs it: each task a subprocess calling `imageforge`), checked by `openjd check`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from openjd.model import DocumentType, create_job, decode_job_template, document_string_to_object

from imageforge.farm.farm_job import FarmJob
from imageforge.farm.openjd import write_bundle
from tests.cli.cli_process import imageforge
from tests.farm.clips import assert_same_video_frames, decoded_frames, stream_facts, textured_clip, textured_sequence
from tests.farm.farm_kit import farm_environment, imageforge_command, openjd, run_tool


def bundle_values(bundle: Path) -> list[str]:
    """The bundle's parameter_values.yaml (what `deadline bundle submit` reads) as `openjd run -p` words."""
    values = yaml.safe_load((bundle / "parameter_values.yaml").read_text(encoding="utf-8"))["parameterValues"]
    return [word for item in values for word in ("-p", f"{item['name']}={item['value']}")]


def openjd_run(bundle: Path, command: Path, *more: str) -> list[str]:
    """`openjd run` of the bundle with its values, the test's `imageforge` as the command, and `more`."""
    return [
        openjd(),
        "run",
        str(bundle / "template.yaml"),
        *bundle_values(bundle),
        "-p",
        f"ImageForge={command}",
        *more,
    ]


def typed_values(template, values):
    from openjd.model import ParameterValue, ParameterValueType

    kinds = {definition.name: definition.type.value for definition in template.parameterDefinitions}
    return {
        name: ParameterValue(type=ParameterValueType(kinds[name]), value=str(value)) for name, value in values.items()
    }


@pytest.mark.parametrize("video", [True, False])
@pytest.mark.parametrize(("job", "settings"), [
    ("upscale-image", {"scale": 2, "model": "REALESRGAN_X4PLUS"}),
    ("remove-background", {"output_kind": "alpha", "sequence_output": "png_sequence"}),
    ("remove-background", {}),
])  # fmt: skip
def test_openjd_check_accepts_every_bundle_the_command_writes(tmp_path, job, settings, video):
    source = tmp_path / ("clip.mp4" if video else "shots")
    source.mkdir() if not video else source.write_bytes(b"x")
    bundle = write_bundle(
        FarmJob(job, settings, str(source), str(tmp_path / "f r a m e s"), str(tmp_path / "out"), 1001, 1240, 25,
                settings.get("sequence_output") != "png_sequence"),
        tmp_path / "bundle",
    )  # fmt: skip
    text = (bundle / "template.yaml").read_text(encoding="utf-8")
    template = decode_job_template(  # what `openjd check` runs, in this process (one CLI check is below)
        template=document_string_to_object(document=text, document_type=DocumentType.YAML),
        supported_extensions=["TASK_CHUNKING"],
    )
    assert [step.name for step in template.steps] == ["Set up", "Frames", "Assemble"]
    values = {item["name"]: item["value"] for item in yaml.safe_load(
        (bundle / "parameter_values.yaml").read_text(encoding="utf-8"))["parameterValues"]}  # fmt: skip
    assert values["Frames"] == "1001-1240" and values["ChunkSize"] == 25
    assert values["FramesFolder"] == str(tmp_path / "f r a m e s") and ("OutputFolder" in values) is (
        settings.get("sequence_output") != "png_sequence"
    )
    create_job(job_template=template, job_parameter_values=typed_values(template, values))
    if job == "upscale-image" and video:
        checked = run_tool([openjd(), "check", str(bundle / "template.yaml")], env=dict(os.environ))
        assert checked.returncode == 0 and "passes validation" in checked.stdout, checked.stdout + checked.stderr


pytestmark_slow = pytest.mark.slow


@pytest.fixture
def farm(hub, server_storage, tmp_path):
    environment = farm_environment(hub, server_storage, tmp_path)
    return environment, imageforge_command(tmp_path / "bin")


@pytestmark_slow
def test_openjd_run_of_the_bundle_reproduces_one_imageforge_run(farm, tmp_path):
    env, command = farm
    clip = textured_clip(tmp_path / "shot_010.mp4", frames=7)
    written = imageforge(
        "farm", "openjd", "upscale-image", f"input={clip}", "scale=2", "--chunk-size", "3",
        "--out", str(tmp_path / "bundle"), env=env,
    )  # fmt: skip
    assert written.returncode == 0, written.stderr
    assert "deadline bundle submit" in written.stderr
    summary = json.loads(written.stdout)
    assert summary["chunks"] == 3 and summary["frames"] == "1-7"
    assert summary["into"] == str(tmp_path / "shot_010.upscale-image" / "frames")
    template = tmp_path / "bundle" / "template.yaml"
    assert run_tool([openjd(), "check", str(template)], env=env).returncode == 0

    ran = run_tool(openjd_run(tmp_path / "bundle", command), env=env)
    assert ran.returncode == 0, ran.stdout[:3000] + ran.stderr[:2000]
    assert "Session ended successfully" in ran.stdout
    assert "Chunks run: 5" in ran.stdout  # set up, three chunks of frames, assemble
    video = tmp_path / "shot_010.upscale-image" / "upscale.mp4"
    single = imageforge("run", "upscale-image", f"input={clip}", "scale=2", "--output", str(tmp_path / "one"), env=env)
    assert single.returncode == 0, single.stderr
    reference = Path(json.loads(single.stdout)["upscale"])
    assert_same_video_frames(video, reference, 7)
    assert stream_facts(video) == stream_facts(reference)


@pytestmark_slow
def test_a_chunk_killed_mid_way_under_openjd_runs_again(farm, tmp_path):
    env, command = farm
    clip = textured_clip(tmp_path / "clip.mp4", frames=10, size=(320, 180))
    written = imageforge("farm", "openjd", "upscale-image", f"input={clip}", "--chunk-size", "10",
                         "--out", str(tmp_path / "bundle"), env=env)  # fmt: skip
    assert written.returncode == 0, written.stderr
    chunk = openjd_run(tmp_path / "bundle", command, "--step", "Frames", "--no-run-dependencies",
             "-tp", "Frame=1-10")  # fmt: skip
    process = subprocess.Popen(
        chunk, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    cache = Path(env["IMAGEFORGE_STORAGE_ROOT"]) / "frame-cache"
    deadline = time.monotonic() + 180
    while not any(cache.glob("*/*")) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert process.poll() is None, "the chunk ended before it could be killed"
    os.killpg(process.pid, signal.SIGKILL)  # the worker's task dies: openjd and its imageforge process
    process.wait()
    into = tmp_path / "clip.upscale-image" / "frames"
    assert not list(into.glob("*.png"))

    again = run_tool(chunk, env=env)
    assert again.returncode == 0, again.stdout[-3000:]
    assemble = run_tool(openjd_run(tmp_path / "bundle", command, "--step", "Assemble",
                         "--no-run-dependencies"), env=env)  # fmt: skip
    assert assemble.returncode == 0, assemble.stdout[-3000:]
    single = imageforge("run", "upscale-image", f"input={clip}", "--output", str(tmp_path / "one"), env=env)
    ours = decoded_frames(tmp_path / "clip.upscale-image" / "upscale.mp4")
    theirs = decoded_frames(Path(json.loads(single.stdout)["upscale"]))
    assert len(ours) == 10
    for (_, pixels), (_, their_pixels) in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(pixels, their_pixels)


@pytestmark_slow
def test_a_damaged_input_frame_fails_its_chunk_and_assemble_names_what_is_missing(farm, tmp_path):
    env, command = farm
    shots = textured_sequence(tmp_path / "shots", range(1, 7))
    (shots / "shot_0004.png").write_bytes((shots / "shot_0004.png").read_bytes()[:50])
    written = imageforge("farm", "openjd", "remove-background", f"input={shots}", "sequence_output=png_sequence",
                         "--chunk-size", "3", "--out", str(tmp_path / "bundle"), env=env)  # fmt: skip
    assert written.returncode == 0, written.stderr
    frames = run_tool(openjd_run(tmp_path / "bundle", command, "--step", "Frames",
                       "--no-run-dependencies"), env=env)  # fmt: skip
    assert frames.returncode != 0
    assert "shot_0004.png" in frames.stdout and "is damaged or incomplete" in frames.stdout
    assert "Traceback" not in frames.stdout
    into = tmp_path / "shots.remove-background" / "frames"
    assert sorted(path.name for path in into.glob("*.png")) == ["frame_0001.png", "frame_0002.png", "frame_0003.png"]
    assemble = run_tool(openjd_run(tmp_path / "bundle", command, "--step", "Assemble",
                         "--no-run-dependencies"), env=env)  # fmt: skip
    assert assemble.returncode != 0
    assert "3 of 6 frame(s) are missing" in assemble.stdout
    assert all(f"frame_{n:04d}.png" in assemble.stdout for n in (4, 5, 6))


@pytestmark_slow
def test_the_set_up_step_takes_the_model_from_the_studio_folder_not_the_hub(farm, hub, tmp_path):
    """`ModelMirror` pointing at a shared folder (the layout `imageforge models export` writes): the worker's
    set-up verifies and installs the model from there, and the hub is never asked for it."""
    env, command = farm
    catalog = json.loads(Path(env["IMAGEFORGE_MODEL_CATALOG"]).read_text())
    entry = next(model for model in catalog["models"] if model["key"] == "KIT_UPSCALE")
    studio = tmp_path / "studio models"
    hub_file = next(item for item in hub.files.items() if item[0] == f"{entry['repository']}/resolve/main/model.onnx")
    (studio / entry["directory"]).mkdir(parents=True)
    (studio / entry["directory"] / "model.onnx").write_bytes(hub_file[1])
    clip = textured_clip(tmp_path / "clip.mp4", frames=2)
    written = imageforge("farm", "openjd", "upscale-image", f"input={clip}", "model=KIT_UPSCALE",
                         "--out", str(tmp_path / "bundle"), env=env)  # fmt: skip
    assert written.returncode == 0, written.stderr
    worker = {**env, "IMAGEFORGE_STORAGE_ROOT": str(tmp_path / "worker root")}  # a new worker: no model yet
    from tests.kit.server_env import install_server_environment

    install_server_environment(tmp_path / "worker root")
    before = len(hub.requests)
    setup = run_tool(openjd_run(tmp_path / "bundle", command, "-p", f"ModelMirror={studio}", "--step", "Set up"),
                     env=worker)  # fmt: skip
    assert setup.returncode == 0, setup.stdout[-3000:]
    assert "This worker is ready for upscale-image" in setup.stdout
    installed = tmp_path / "worker root" / "models" / entry["directory"] / "model.onnx"
    assert installed.read_bytes() == hub_file[1]
    assert [record.path for record in hub.requests[before:] if record.path.endswith("model.onnx")] == []
