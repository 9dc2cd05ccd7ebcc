"""`imageforge batch`: one server start and one model load for many inputs, one JSON line per input, a bad input
reported and skipped, outputs that never collide nor replace anything."""

from __future__ import annotations

import json
from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image

from imageforge.cli.batch import result_label, split_arguments
from imageforge.contract.results import ResultName
from tests.cli.cli_process import imageforge, kit_environment
from tests.kit.catalog import publish_kit_catalog

pytestmark = pytest.mark.slow


def still(path: Path, seed: int, size=(16, 12)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    Image.fromarray(rng.integers(0, 255, (size[1], size[0], 3), dtype=np.uint8)).save(path)
    return path


def movie(path: Path, frames: int = 3) -> Path:
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=12)
        stream.width, stream.height, stream.pix_fmt = 16, 16, "yuv420p"
        for index in range(frames):
            frame = av.VideoFrame.from_ndarray(np.full((16, 16, 3), 40 * index, dtype=np.uint8), format="rgb24")
            frame.pts = index
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return path


def test_inputs_and_parameters_are_told_apart_by_the_jobs_parameter_names():
    inputs, parameters = split_arguments("upscale-image", ["a=b.png", "scale=2", "x.png", "tile_size=64"])
    assert inputs == ["a=b.png", "x.png"] and parameters == {"scale": 2, "tile_size": 64}
    assert result_label("/shots/shot_####.png") == "shot"
    assert result_label("/shots") == "shots"


def test_a_mixed_batch_runs_on_one_server_and_one_model_load(hub, server_storage, tmp_path):
    catalog = publish_kit_catalog(hub, tmp_path / "catalog", keys=("KIT_UPSCALE",))
    first = still(tmp_path / "a" / "photo.png", 1)
    second = still(tmp_path / "b" / "photo.png", 2)  # the same name from another folder
    frames = tmp_path / "frames"
    for number in (1, 2):
        still(frames / f"shot_{number:04d}.png", 10 + number)
    clip = movie(tmp_path / "clip.mp4")
    missing = tmp_path / "missing.png"
    output = tmp_path / "out"
    output.mkdir()
    (output / "photo_upscale.png").write_bytes(b"already here")
    arguments = [str(first), str(missing), str(second), str(frames), str(clip)]

    completed = imageforge(
        "batch", "upscale-image", *arguments, "scale=2", "sequence_output=png_sequence", "--output", str(output),
        env=kit_environment(hub_url=hub.url, storage=server_storage, catalog=catalog.path),
    )  # fmt: skip

    assert completed.returncode == 1, completed.stderr  # one input failed
    lines = [json.loads(line) for line in completed.stdout.splitlines()]
    assert [line["input"] for line in lines] == arguments
    assert lines[1]["error"].startswith("Cannot find") and "result" not in lines[1]
    results = [line["result"] for line in lines if "result" in line]
    assert len(results) == 4
    assert Path(results[0]["upscale"]) == output / "photo_upscale (2).png"  # never the existing file
    assert Path(results[1]["upscale"]) == output / "photo_upscale (3).png"  # never the first photo's result
    assert (output / "photo_upscale.png").read_bytes() == b"already here"
    with Image.open(results[0]["upscale"]) as image:
        assert image.size == (32, 24)
    assert Path(results[2]["upscale"]) == output / "frames_upscale" / "frame_0001.png"
    assert sorted(p.name for p in (output / "frames_upscale").iterdir()) == ["frame_0001.png", "frame_0002.png"]
    assert len(list((output / "clip_upscale").iterdir())) == 3
    assert all(Path(result[ResultName.PROVENANCE]).is_file() for result in results)

    logs = [(folder / "job.log").read_text(encoding="utf-8") for folder in (server_storage / "jobs").iterdir()]
    assert len(logs) == 5
    assert sum("; session loaded" in log for log in logs) == 1  # one model load for four jobs
    assert sum("; session reused from an earlier job" in log for log in logs) == 3
    assert "1 of 5 input(s) failed" in completed.stderr


def test_a_bad_shared_parameter_fails_before_any_job(hub, server_storage, tmp_path):
    completed = imageforge(
        "batch", "upscale-image", str(still(tmp_path / "a.png", 1)), "scale=3", "--output", str(tmp_path / "out"),
        env=kit_environment(hub_url=hub.url, storage=server_storage),
    )  # fmt: skip
    assert completed.returncode == 2
    assert completed.stdout == "" and "scale" in completed.stderr
    assert not (server_storage / "jobs").exists() or not any((server_storage / "jobs").iterdir())


def test_a_batch_runs_the_background_model_it_is_given(hub, server_storage, tmp_path):
    """`model=` in a batch reaches every input's job, stills and clips alike (the default BEN2 never loads), and
    each result's provenance names it."""
    from imageforge.contract.provenance import Provenance

    catalog = publish_kit_catalog(hub, tmp_path / "catalog", keys=("KIT_BEN2", "KIT_BIREFNET"))
    arguments = [str(still(tmp_path / "photo.png", 1)), str(movie(tmp_path / "clip.mp4", frames=2))]
    completed = imageforge(
        "batch", "remove-background", *arguments, "model=KIT_BIREFNET", "sequence_output=png_sequence",
        "--output", str(tmp_path / "out"),
        env=kit_environment(hub_url=hub.url, storage=server_storage, catalog=catalog.path),
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    results = [json.loads(line)["result"] for line in completed.stdout.splitlines()]
    assert len(results) == 2
    for result in results:
        assert [run.model for run in Provenance.read(Path(result[ResultName.PROVENANCE])).models] == ["KIT_BIREFNET"]
    models = server_storage / "models"
    assert (models / "kit_birefnet").is_dir() and not (models / "kit_ben2").exists()  # the default never fetched
