"""`imageforge run … --into DIR --frames A-B` chunks and `imageforge farm assemble` add up to one run, for real.

Real server subprocess, kit models over the loopback hub, real files; each chunk is its own `imageforge`
process, as on a farm.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from tests.cli.cli_process import imageforge, kit_environment
from tests.farm.clips import assert_same_video_frames, decoded_frames, stream_facts, textured_clip, textured_sequence
from tests.kit.catalog import publish_kit_catalog

pytestmark = pytest.mark.slow


@pytest.fixture
def farm_env(hub, server_storage, tmp_path):
    catalog = publish_kit_catalog(hub, tmp_path / "catalog", keys=("KIT_UPSCALE", "KIT_BEN2"))
    environment = kit_environment(hub_url=hub.url, storage=server_storage, catalog=catalog.path)
    environment["IMAGEFORGE_SERVER_LINGER"] = "10"  # the chunks of one test reuse one server
    return environment


def run(env, *args):
    completed = imageforge(*args, env=env)
    return completed


def one_sentence(stderr: str) -> str:
    """The error `imageforge` printed: exactly one `imageforge: …` line besides the progress lines."""
    (line,) = [line for line in stderr.splitlines() if line.startswith("imageforge:")]
    assert "Traceback" not in stderr
    return line


def test_video_chunks_assemble_to_the_single_run_video(farm_env, server_storage, tmp_path):
    clip = textured_clip(tmp_path / "clip.mp4", frames=7)
    into = tmp_path / "shared" / "frames"
    for chunk in ("1-3", "4-6", "7-7"):
        done = run(farm_env, "run", "upscale-image", f"input={clip}", "scale=2", "--into", str(into), "--frames", chunk)
        assert done.returncode == 0, done.stderr
    logs = "".join(path.read_text(encoding="utf-8") for path in Path(server_storage).rglob("job.log"))
    for keyframe, first in ((4, 4), (7, 7)):  # the later chunks started at their keyframes, not at frame 1
        assert (
            f"Seeked 'clip.mp4' to the keyframe at frame {keyframe}: 0 frame(s) decoded before frame {first}." in logs
        )
    assert sorted(path.name for path in into.glob("*.png")) == [f"frame_{n:04d}.png" for n in range(1, 8)]
    assembled = run(
        farm_env, "farm", "assemble", "upscale-image", f"input={clip}", "scale=2", "--into", str(into),
        "--output", str(tmp_path / "farm"),
    )  # fmt: skip
    assert assembled.returncode == 0, assembled.stderr
    video = Path(json.loads(assembled.stdout)["video"])
    assert video == tmp_path / "farm" / "upscale.mp4"

    single = run(farm_env, "run", "upscale-image", f"input={clip}", "scale=2", "--output", str(tmp_path / "one"))
    assert single.returncode == 0, single.stderr
    reference = Path(json.loads(single.stdout)["upscale"])
    assert_same_video_frames(video, reference, 7)
    facts = stream_facts(video)
    assert facts == stream_facts(reference)
    assert facts["size"] == (64, 48) and facts["audio"] == ["aac"] and str(facts["pixel_aspect"]) == "4/3"

    again = run(farm_env, "run", "upscale-image", f"input={clip}", "scale=2", "--into", str(into), "--frames", "1-3")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["written"] == 0 and "nothing to do" in again.stderr


def test_sequence_chunks_make_the_single_run_frames_and_video(farm_env, tmp_path):
    """Remove-background on a sequence numbered from 1001: the chunks' frames are byte for byte the single run's
    PNG sequence, and the assembled H.264 (alpha over black) frame for frame the single run's video."""
    shots = textured_sequence(tmp_path / "shots", range(1001, 1006), size=(96, 64))
    into = tmp_path / "frames"
    for chunk in ("1001-1002", "1003-1005"):
        done = run(farm_env, "run", "remove-background", f"input={shots}", "--into", str(into), "--frames", chunk)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["written"] == len(range(*map(int, chunk.split("-")))) + 1
    single = run(
        farm_env, "run", "remove-background", f"input={shots}", "sequence_output=png_sequence",
        "--output", str(tmp_path / "one"),
    )  # fmt: skip
    assert single.returncode == 0, single.stderr
    reference = Path(json.loads(single.stdout)["foreground"]).parent
    names = [f"frame_{n:04d}.png" for n in range(1001, 1006)]
    assert sorted(path.name for path in reference.iterdir()) == names
    assert sorted(path.name for path in into.glob("*.png")) == names
    for name in names:
        assert (into / name).read_bytes() == (reference / name).read_bytes()

    assembled = run(
        farm_env, "farm", "assemble", "remove-background", f"input={shots}", "--into", str(into),
        "--output", str(tmp_path / "farm"),
    )  # fmt: skip
    assert assembled.returncode == 0, assembled.stderr
    single_video = run(farm_env, "run", "remove-background", f"input={shots}", "--output", str(tmp_path / "one-video"))
    assert single_video.returncode == 0, single_video.stderr
    ours = decoded_frames(Path(json.loads(assembled.stdout)["video"]))
    theirs = decoded_frames(Path(json.loads(single_video.stdout)["foreground"]))
    assert len(ours) == len(theirs) == 5
    for (pts, pixels), (their_pts, their_pixels) in zip(ours, theirs, strict=True):
        assert pts == their_pts
        np.testing.assert_array_equal(pixels, their_pixels)

    checked = run(
        farm_env, "farm", "assemble", "remove-background", f"input={shots}", "sequence_output=png_sequence",
        "--into", str(into),
    )  # fmt: skip
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)["frames"] == 5


def test_a_missing_or_truncated_frame_is_named_and_a_rerun_makes_only_those(farm_env, tmp_path):
    shots = textured_sequence(tmp_path / "shots", range(1, 6))
    into = tmp_path / "frames"
    done = run(farm_env, "run", "remove-background", f"input={shots}", "output_kind=alpha", "--into", str(into))
    assert done.returncode == 0, done.stderr
    kept = (into / "frame_0001.png").stat()
    truncated = into / "frame_0003.png"
    truncated.write_bytes(truncated.read_bytes()[:-20])
    (into / "frame_0004.png").unlink()
    (into / "notes.txt").write_text("the TD's own file")

    check = ("farm", "assemble", "remove-background", f"input={shots}", "output_kind=alpha",
             "sequence_output=png_sequence", "--into", str(into))  # fmt: skip
    missing = run(farm_env, *check)
    assert missing.returncode == 1  # the job failed (a refusal before any job is 2)
    one_sentence(missing.stderr)
    assert "frame_0004.png" in missing.stderr and "missing" in missing.stderr
    (into / "frame_0004.png").write_bytes((into / "frame_0005.png").read_bytes())
    damaged = run(farm_env, *check)
    assert damaged.returncode == 1 and "frame_0003.png" in damaged.stderr and "frame_0004" not in damaged.stderr
    (into / "frame_0004.png").unlink()

    again = run(farm_env, "run", "remove-background", f"input={shots}", "output_kind=alpha", "--into", str(into))
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) | {"into": ""} == {
        "into": "", "frames": 5, "written": 2, "kept": 3, "first": 1, "last": 5
    }  # fmt: skip
    after = (into / "frame_0001.png").stat()
    assert (after.st_ino, after.st_mtime_ns) == (kept.st_ino, kept.st_mtime_ns)  # a complete frame is not touched
    assert (into / "notes.txt").read_text() == "the TD's own file"
    assert sorted(path.name for path in into.iterdir() if path.name.startswith(".")) == [".imageforge-frames.json"]
    assert run(farm_env, *check).returncode == 0


def test_a_damaged_input_frame_fails_its_chunk_in_one_sentence(farm_env, tmp_path):
    shots = textured_sequence(tmp_path / "shots", range(1, 7))
    (shots / "shot_0005.png").write_bytes((shots / "shot_0005.png").read_bytes()[:60])
    into = tmp_path / "frames"
    first = run(farm_env, "run", "upscale-image", f"input={shots}", "--into", str(into), "--frames", "1-3")
    assert first.returncode == 0, first.stderr
    broken = run(farm_env, "run", "upscale-image", f"input={shots}", "--into", str(into), "--frames", "4-6")
    assert broken.returncode == 1
    one_sentence(broken.stderr)
    assert "shot_0005.png" in broken.stderr and "Traceback" not in broken.stderr
    assert sorted(path.name for path in into.glob("*.png")) == ["frame_0001.png", "frame_0002.png", "frame_0003.png"]
    assembled = run(farm_env, "farm", "assemble", "upscale-image", f"input={shots}", "--into", str(into),
                    "--output", str(tmp_path / "out"))  # fmt: skip
    assert assembled.returncode == 1
    assert "3 of 6 frame(s) are missing" in one_sentence(assembled.stderr)
    assert all(f"frame_{n:04d}.png" in assembled.stderr for n in (4, 5, 6))
    assert not (tmp_path / "out").exists()


def test_what_cannot_run_in_chunks_is_refused_before_any_work(farm_env, tmp_path):
    clip = textured_clip(tmp_path / "clip.mp4", frames=2)
    shots = textured_sequence(tmp_path / "shots", range(1, 3))
    into = tmp_path / "frames"
    cases = {
        ("run", "remove-background", f"input={clip}", "steady_edges=true", "--into", str(into)): "steady_edges",
        ("run", "generate-depth-plane-geometry", f"input={clip}", "--into", str(into)): "every frame",
        ("run", "upscale-image", f"input={clip}", "--into", str(into), "--output", str(tmp_path)): "one of them",
        ("run", "upscale-image", f"input={clip}", "--frames", "1-2"): "--into",
        ("run", "upscale-image", f"input={shots}", "--into", str(shots)): "input",
        ("run", "upscale-image", f"input={clip}", "first_frame=1", "--frames", "1-2", "--into", str(into)): "both",
    }
    for args, words in cases.items():
        refused = run(farm_env, *args)
        assert refused.returncode == 2, (args, refused.stderr)
        assert words in refused.stderr, (args, refused.stderr)
    assert not (farm_env_storage(farm_env) / "jobs").exists() or not any(
        (farm_env_storage(farm_env) / "jobs").iterdir()
    )


def farm_env_storage(env) -> Path:
    return Path(env["IMAGEFORGE_STORAGE_ROOT"])


def test_a_chunk_killed_mid_way_runs_again_to_the_same_frames(farm_env, tmp_path):
    import signal
    import subprocess
    import sys
    import time

    clip = textured_clip(tmp_path / "clip.mp4", frames=12, size=(320, 180))
    into = tmp_path / "frames"
    command = [
        sys.executable,
        "-m",
        "imageforge.cli.main",
        "run",
        "upscale-image",
        f"input={clip}",
        "--into",
        str(into),
    ]
    chunk = subprocess.Popen(command, env=farm_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    cache = farm_env_storage(farm_env) / "frame-cache"
    deadline = time.monotonic() + 120
    while not any(cache.glob("*/*")) and chunk.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert chunk.poll() is None, "the chunk ended before it could be killed"
    chunk.send_signal(signal.SIGKILL)
    chunk.communicate()
    assert not list(into.glob("*.png"))  # nothing half-made under a frame's name

    again = run(farm_env, "run", "upscale-image", f"input={clip}", "--into", str(into))
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["written"] == 12
    single = run(farm_env, "run", "upscale-image", f"input={clip}", "sequence_output=png_sequence",
                 "--output", str(tmp_path / "one"))  # fmt: skip
    reference = Path(json.loads(single.stdout)["upscale"]).parent
    for path in sorted(reference.iterdir()):
        assert (into / path.name).read_bytes() == path.read_bytes()
    assert os.listdir(into).count(".imageforge-frames.json") == 1


def test_batch_into_gives_each_input_its_own_frames_folder(farm_env, tmp_path):
    first = textured_sequence(tmp_path / "a" / "shots", range(1, 3))
    second = textured_sequence(tmp_path / "b" / "shots", range(1, 4))
    into = tmp_path / "frames"
    done = run(farm_env, "batch", "upscale-image", str(first), str(second), "scale=2", "--into", str(into))
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["into"]["written"] for line in lines] == [2, 3]
    assert sorted(path.name for path in (into / "shots").glob("*.png")) == ["frame_0001.png", "frame_0002.png"]
    assert len(list((into / "shots (2)").glob("*.png"))) == 3  # same name, another input: never mixed
    again = run(farm_env, "batch", "upscale-image", str(first), str(second), "scale=2", "--into", str(into))
    assert [json.loads(line)["into"]["kept"] for line in again.stdout.splitlines()] == [2, 3]
    both = run(farm_env, "batch", "upscale-image", str(first), "--into", str(into), "--output", str(tmp_path / "o"))
    assert both.returncode == 2 and "one of them" in both.stderr
