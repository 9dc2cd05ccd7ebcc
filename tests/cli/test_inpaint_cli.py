"""`imageforge run inpaint-image` end to end: the kit LaMa model downloaded from the loopback hub into a real
server subprocess, relative paths, an odd-sized photo."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

from tests.cli.cli_process import imageforge, kit_environment
from tests.kit.catalog import publish_kit_catalog
from tests.kit.onnx_models import LAMA_FILL

pytestmark = pytest.mark.slow


def test_inpaint_image_fills_the_mask_and_keeps_every_other_pixel(hub, server_storage: Path, tmp_path: Path):
    catalog = publish_kit_catalog(hub, tmp_path / "catalog", keys=("KIT_LAMA",))
    rng = np.random.default_rng(11)
    pixels = rng.integers(0, 256, (61, 77, 3), dtype=np.uint8)  # odd sizes: padded to 64×96 for the model
    PILImage.fromarray(pixels).save(tmp_path / "photo.png")
    mask = np.zeros((61, 77), np.uint8)
    mask[20:41, 30:55] = 255
    PILImage.fromarray(mask).save(tmp_path / "mask.png")

    completed = imageforge(
        "run", "inpaint-image", "input=photo.png", "mask=mask.png", "--output", "out",
        env=kit_environment(hub_url=hub.url, storage=server_storage, catalog=catalog.path),
        cwd=tmp_path,
    )  # fmt: skip

    assert completed.returncode == 0, completed.stderr
    result = Path(json.loads(completed.stdout)["inpaint"])
    assert result.parent == tmp_path / "out"
    output = np.asarray(PILImage.open(result))
    hole = mask > 0
    assert output.shape == pixels.shape
    np.testing.assert_array_equal(output[~hole], pixels[~hole])
    fill = np.round(np.array(LAMA_FILL) * 255).astype(np.uint8)
    np.testing.assert_array_equal(output[hole], np.broadcast_to(fill, (int(hole.sum()), 3)))
