"""The kit SAM 2 pair in a storage root and a photo to click on: fixtures for the segment-image and click tests.

A test module imports `kit_sam2_fixture` and `photo_fixture` (and geometry_kit's `use_catalog_fixture`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

from imageforge.server.models.sam2 import model_input
from tests.kit.onnx_models import build_sam2, sam2_reference

from .geometry_kit import catalog_entry

WIDTH, HEIGHT = 160, 120


def sam2_entry(key: str = "KIT_SAM2") -> dict:
    entry = catalog_entry(key, "segment", "sam2", encoder="encoder.onnx", decoder="decoder.onnx")
    entry["files"] = [{"path": "encoder.onnx"}, {"path": "decoder.onnx"}]
    return entry


@pytest.fixture(name="kit_sam2")
def kit_sam2_fixture(use_catalog, storage_root: Path) -> Path:
    use_catalog([sam2_entry()])
    build_sam2(storage_root / "models" / "kit_sam2")
    return storage_root / "models" / "kit_sam2"


@pytest.fixture(name="photo")
def photo_fixture(tmp_path: Path) -> tuple[Path, np.ndarray]:
    """A grey 160×120 photo with a red disc (radius 25 around (50, 60)) and a blue square (100–140, 30–70)."""
    ys, xs = np.mgrid[0:HEIGHT, 0:WIDTH]
    pixels = np.full((HEIGHT, WIDTH, 3), 128, np.uint8)
    disc = np.hypot(xs - 50, ys - 60) < 25
    pixels[disc] = (220, 30, 30)
    pixels[30:70, 100:140] = (30, 30, 220)
    path = tmp_path / "photo.png"
    PILImage.fromarray(pixels).save(path)
    return path, disc


def expected_mask(path: Path, point: tuple[float, float], token: int) -> np.ndarray:
    """What the predictor's processing gives for the kit decoder: its logits, upsampled, above 0."""
    from imageforge.server.models.sam2_resize import bilinear

    pixels = np.asarray(PILImage.open(path), np.float32) / 255
    scaled = (point[0] / WIDTH * 1024, point[1] / HEIGHT * 1024)
    return bilinear(sam2_reference(model_input(pixels), scaled)[token], (WIDTH, HEIGHT)) > 0
