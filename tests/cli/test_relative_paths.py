"""`imageforge run` resolves relative paths against the caller's folder (the server runs in the storage root)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.cli.cli_process import imageforge, kit_environment
from tests.kit.catalog import publish_kit_catalog

pytestmark = pytest.mark.slow


def test_relative_input_is_resolved_against_the_working_folder(hub, server_storage, tmp_path):
    catalog = publish_kit_catalog(hub, tmp_path / "catalog")
    work = tmp_path / "my project"
    (work / "renders").mkdir(parents=True)
    pixels = np.random.default_rng(5).integers(0, 255, (12, 16, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(work / "renders" / "shot.png")
    completed = imageforge(
        "run",
        "upscale-image",
        "input=renders/shot.png",
        "--output",
        "out",
        env=kit_environment(hub_url=hub.url, storage=server_storage, catalog=catalog.path),
        cwd=work,
    )
    assert completed.returncode == 0, completed.stderr
    result = Path(json.loads(completed.stdout)["upscale"])
    assert result.parent == work / "out"
    with Image.open(result) as upscaled:
        assert upscaled.size == (64, 48)
