"""The Flamenco job type `imageforge.js` under Node, against a STAND-IN of Flamenco's job compiler
(tests/farm/flamenco_standin.js: the documented `author`/`job`/`frameChunker` API, recording tasks and commands;
Flamenco itself cannot be installed here). The recorded `exec` commands are then run for real, in dependency
order, and their result compared with one `imageforge run`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from imageforge.farm.farm_job import FarmJob
from imageforge.farm.flamenco import JOB_TYPE_FILE, job_settings
from tests.cli.cli_process import imageforge
from tests.farm.clips import assert_same_video_frames, stream_facts, textured_clip, textured_sequence
from tests.farm.farm_kit import farm_environment, imageforge_command, node, run_tool

STANDIN = Path(__file__).with_name("flamenco_standin.js")


def compile_job(settings: dict) -> dict:
    completed = subprocess.run(
        [node(), str(STANDIN), str(JOB_TYPE_FILE), json.dumps(settings)], capture_output=True, text=True, timeout=60
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


def settings_for(tmp_path: Path, **changes) -> dict:
    job = FarmJob("upscale-image", {"scale": 2}, str(tmp_path / "clip.mp4"), str(tmp_path / "frames"),
                  str(tmp_path / "out"), 1, 7, 3, True)  # fmt: skip
    return {**job_settings(job), **changes}


def test_the_job_type_compiles_to_set_up_chunks_and_assemble(tmp_path):
    compiled = compile_job(settings_for(tmp_path, model="KIT_UPSCALE"))
    assert compiled["job_type"]["label"] == "ImageForge frames"
    keys = {setting["key"] for setting in compiled["job_type"]["settings"]}
    assert {"imageforge_job", "input", "frames", "chunk_size", "frames_folder", "output_folder", "model"} <= keys
    tasks = compiled["tasks"]
    assert [task["name"] for task in tasks] == [
        "ImageForge set up",
        "Frames 1-3",
        "Frames 4-6",
        "Frames 7",
        "ImageForge assemble",
    ]
    assert all(command["type"] == "exec" for task in tasks for command in task["commands"])
    assert tasks[1]["dependencies"] == ["ImageForge set up"]
    assert tasks[-1]["dependencies"] == ["Frames 1-3", "Frames 4-6", "Frames 7"]
    chunk = tasks[2]["commands"][0]["parameters"]
    assert chunk["exe"] == "imageforge"
    assert chunk["args"] == ["run", "upscale-image", f"input={tmp_path / 'clip.mp4'}", "scale=2", "model=KIT_UPSCALE",
                             "--into", str(tmp_path / "frames"), "--frames", "4-6"]  # fmt: skip
    assemble = tasks[-1]["commands"][0]["parameters"]["args"]
    assert assemble[:2] == ["farm", "assemble"] and assemble[-2:] == ["--output", str(tmp_path / "out")]


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"imageforge_job": "generate-depth-plane-geometry"}, "not 'generate-depth-plane-geometry'"),
        ({"parameters": "[1, 2]"}, "JSON object"),
        ({"parameters": '{"first_frame": 3}'}, "Frames settings"),
        ({"output_folder": ""}, "Output Folder"),
        ({"chunk_size": 0}, "chunk size"),
    ],
)
def test_the_job_type_refuses_what_cannot_run(tmp_path, changes, words):
    assert words in compile_job(settings_for(tmp_path, **changes))["error"]


def run_recorded(tasks: list[dict], command: Path, env: dict) -> list[subprocess.CompletedProcess]:
    """Run every task's commands for real, each after the tasks it depends on (as a worker would, one by one)."""
    done: set[str] = set()
    results = []
    pending = list(tasks)
    while pending:
        task = next(task for task in pending if set(task["dependencies"]) <= done)
        for recorded in task["commands"]:
            assert recorded["type"] == "exec"
            parameters = recorded["parameters"]
            exe = str(command) if parameters["exe"] == "imageforge" else parameters["exe"]
            completed = run_tool([exe, *parameters["args"]], env=env)
            results.append(completed)
            assert completed.returncode == 0, (task["name"], completed.stderr[-2000:])
        done.add(task["name"])
        pending.remove(task)
    return results


@pytest.mark.slow
def test_the_recorded_commands_make_what_one_run_makes(hub, server_storage, tmp_path):
    env = farm_environment(hub, server_storage, tmp_path)
    command = imageforge_command(tmp_path / "bin")
    clip = textured_clip(tmp_path / "clip.mp4", frames=7)
    printed = imageforge("farm", "flamenco-settings", "upscale-image", f"input={clip}", "scale=2", "--chunk-size", "3",
                         "--into", str(tmp_path / "frames"), "--output", str(tmp_path / "out"), env=env)  # fmt: skip
    assert printed.returncode == 0, printed.stderr
    submission = json.loads(printed.stdout)
    assert submission["type"] == "imageforge" and submission["settings"]["frames"] == "1-7"
    compiled = compile_job(submission["settings"])
    assert len(compiled["tasks"]) == 5
    run_recorded(compiled["tasks"], command, env)
    single = imageforge("run", "upscale-image", f"input={clip}", "scale=2", "--output", str(tmp_path / "one"), env=env)
    reference = Path(json.loads(single.stdout)["upscale"])
    assert_same_video_frames(tmp_path / "out" / "upscale.mp4", reference, 7)
    assert stream_facts(tmp_path / "out" / "upscale.mp4") == stream_facts(reference)


@pytest.mark.slow
def test_a_png_sequence_job_checks_the_frames_and_writes_no_video(hub, server_storage, tmp_path):
    env = farm_environment(hub, server_storage, tmp_path)
    shots = textured_sequence(tmp_path / "shots", range(1001, 1005))
    job = FarmJob("remove-background", {"sequence_output": "png_sequence"}, str(shots), str(tmp_path / "frames"),
                  "", 1001, 1004, 2, False)  # fmt: skip
    compiled = compile_job(job_settings(job))
    assert [task["name"] for task in compiled["tasks"]][1:3] == ["Frames 1001-1002", "Frames 1003-1004"]
    run_recorded(compiled["tasks"], imageforge_command(tmp_path / "bin"), env)
    single = imageforge("run", "remove-background", f"input={shots}", "sequence_output=png_sequence",
                        "--output", str(tmp_path / "one"), env=env)  # fmt: skip
    reference = Path(json.loads(single.stdout)["foreground"]).parent
    for path in sorted(reference.iterdir()):
        assert (tmp_path / "frames" / path.name).read_bytes() == path.read_bytes()
    assert not list(tmp_path.glob("**/*.mp4"))


def test_the_cli_writes_the_job_type_where_the_manager_reads_it(tmp_path):
    written = imageforge("farm", "flamenco-job-type", str(tmp_path / "scripts"), env=dict(os.environ))
    assert written.returncode == 0, written.stderr
    assert (tmp_path / "scripts" / "imageforge.js").read_bytes() == JOB_TYPE_FILE.read_bytes()
