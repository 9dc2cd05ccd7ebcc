"""`imageforge run --output` on a PNG-sequence result copies every frame, not only the first one it names."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.cli.cli_process import imageforge, kit_environment
from tests.kit.catalog import publish_kit_catalog

pytestmark = pytest.mark.slow


def test_a_png_sequence_result_is_copied_whole(hub, server_storage, tmp_path):
    catalog = publish_kit_catalog(hub, tmp_path / "catalog", keys=("KIT_UPSCALE",))
    frames = tmp_path / "frames"
    frames.mkdir()
    rng = np.random.default_rng(11)
    for number in (1, 2, 3):
        Image.fromarray(rng.integers(0, 255, (12, 16, 3), dtype=np.uint8)).save(frames / f"shot_{number:04d}.png")
    output = tmp_path / "out"
    completed = imageforge(
        "run",
        "upscale-image",
        f"input={frames}",
        "sequence_output=png_sequence",
        "--output",
        str(output),
        env=kit_environment(hub_url=hub.url, storage=server_storage, catalog=catalog.path),
    )

    assert completed.returncode == 0, completed.stderr
    first = Path(json.loads(completed.stdout)["upscale"])
    assert first == output / "upscale" / "frame_0001.png"
    (job_folder,) = (server_storage / "jobs").iterdir()
    written = sorted(path.name for path in (job_folder / "upscale").iterdir())
    assert written == ["frame_0001.png", "frame_0002.png", "frame_0003.png"]
    assert sorted(path.name for path in first.parent.iterdir()) == written
    for name in written:
        assert (first.parent / name).read_bytes() == (job_folder / "upscale" / name).read_bytes()
        with Image.open(first.parent / name) as frame:
            assert frame.size == (64, 48)
