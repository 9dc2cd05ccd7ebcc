"""`imageforge run --output` never destroys a file: the input, an earlier run's results, a frame folder."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.cli.cli_process import imageforge, kit_environment
from tests.kit.catalog import publish_kit_catalog

pytestmark = pytest.mark.slow


@pytest.fixture
def env(hub, server_storage, tmp_path) -> dict[str, str]:
    catalog = publish_kit_catalog(hub, tmp_path / "catalog", keys=("KIT_UPSCALE",))
    return kit_environment(hub_url=hub.url, storage=server_storage, catalog=catalog.path)


def _frames(folder: Path, count: int) -> dict[str, bytes]:
    folder.mkdir(parents=True)
    rng = np.random.default_rng(7)
    for number in range(1, count + 1):
        Image.fromarray(rng.integers(0, 255, (12, 16, 3), dtype=np.uint8)).save(folder / f"shot_{number:04d}.png")
    return {path.name: path.read_bytes() for path in folder.iterdir()}


def test_an_input_named_like_the_result_is_kept_and_the_result_lands_beside_it(env, tmp_path):
    folder = tmp_path / "D"
    folder.mkdir()
    Image.fromarray(np.full((12, 16, 3), 90, np.uint8)).save(folder / "upscale.png")
    original = (folder / "upscale.png").read_bytes()

    completed = imageforge("run", "upscale-image", f"input={folder / 'upscale.png'}", "--output", str(folder), env=env)

    assert completed.returncode == 0, completed.stderr
    assert (folder / "upscale.png").read_bytes() == original
    result = Path(json.loads(completed.stdout)["upscale"])
    assert result == folder / "upscale (2).png"
    with Image.open(result) as upscaled:
        assert upscaled.size == (64, 48)
    assert f"'{folder / 'upscale.png'}' already existed" in completed.stderr


def test_a_frame_folder_as_input_and_output_is_refused_before_any_job(env, server_storage, tmp_path):
    frames = tmp_path / "frames"
    before = _frames(frames, 2)

    completed = imageforge(
        "run", "upscale-image", f"input={frames}", "sequence_output=png_sequence", "--output", str(frames), env=env
    )

    assert completed.returncode == 2
    assert (
        completed.stderr.strip()
        == f"imageforge: --output '{frames}' is the job's input; choose another folder for the results."
    )
    assert {path.name: path.read_bytes() for path in frames.iterdir()} == before
    assert not (server_storage / "jobs").exists()  # refused before a server started


def test_an_output_that_is_a_file_is_refused_before_any_job(env, server_storage, tmp_path):
    image = tmp_path / "photo.png"
    Image.fromarray(np.zeros((12, 16, 3), np.uint8)).save(image)
    notes = tmp_path / "notes.txt"
    notes.write_text("keep me")
    completed = imageforge("run", "upscale-image", f"input={image}", "--output", str(notes), env=env)
    assert completed.returncode == 2
    assert "is a file; give a folder" in completed.stderr
    assert notes.read_text() == "keep me"
    assert not (server_storage / "jobs").exists()


def test_a_second_sequence_run_gets_a_folder_of_its_own(env, tmp_path):
    frames = tmp_path / "frames"
    _frames(frames, 2)
    output = tmp_path / "out"
    (output / "upscale").mkdir(parents=True)
    (output / "upscale" / "frame_0009.png").write_bytes(b"an earlier run's frame")

    completed = imageforge(
        "run", "upscale-image", f"input={frames}", "sequence_output=png_sequence", "--output", str(output), env=env
    )

    assert completed.returncode == 0, completed.stderr
    first = Path(json.loads(completed.stdout)["upscale"])
    assert first == output / "upscale (2)" / "frame_0001.png"
    assert sorted(path.name for path in first.parent.iterdir()) == ["frame_0001.png", "frame_0002.png"]
    assert sorted(path.name for path in (output / "upscale").iterdir()) == ["frame_0009.png"]
    assert sorted(path.name for path in output.iterdir()) == [
        "provenance (2).json",
        "upscale",
        "upscale (2)",
    ]  # one number per run
