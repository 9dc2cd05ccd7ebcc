"""upscale-image in-process on the kit upscaler (box blur radius 2, then 4× nearest): tiles, depth, alpha, clips."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from blendjob.server import JobCancelled
from PIL import Image as PILImage

from imageforge.contract.results import ResultName
from imageforge.server.media import open_input
from tests.kit.onnx_models import upscaler_reference
from tests.server.media.makers import spec_png16

from .conftest import write_video


def upscaled(pixels: np.ndarray) -> np.ndarray:
    """The kit model on the whole image [H, W, C] in [0, 1], clamped: [4H, 4W, C]."""
    chw = pixels.transpose(2, 0, 1)[None].astype(np.float32)
    return np.clip(upscaler_reference(chw, receptive_radius=2)[0].transpose(1, 2, 0), 0, 1)


@pytest.fixture
def photo(tmp_path: Path) -> tuple[Path, np.ndarray]:
    pixels = np.random.default_rng(2).integers(0, 256, size=(30, 40, 3), dtype=np.uint8)
    path = tmp_path / "photo.png"
    PILImage.fromarray(pixels).save(path)
    return path, pixels


def test_tiled_upscale_equals_the_model_on_the_whole_image(run_job, photo):
    path, pixels = photo
    result, context = run_job("upscale-image", {"input": str(path), "tile_size": 12})
    assert result[ResultName.UPSCALE].name == "upscale.png"
    out = np.asarray(PILImage.open(result[ResultName.UPSCALE]))
    assert out.shape == (120, 160, 3) and out.dtype == np.uint8
    expected = np.round(upscaled(pixels / 255) * 255)
    assert np.abs(out.astype(int) - expected).max() <= 1
    tiles = [message for message in context.messages if message.startswith("Upscaling tile")]
    total = int(tiles[-1].split("/")[1])
    assert total > 4 and tiles[1:] == [f"Upscaling tile {done}/{total}" for done in range(1, total + 1)]
    assert f"{total} tile(s) of 12px cores" in context.log_text


def test_sixteen_bit_rgba_keeps_its_depth_and_upscales_alpha_separately(run_job, tmp_path: Path):
    rng = np.random.default_rng(4)
    codes = rng.integers(0, 65536, size=(12, 10, 4), dtype=np.uint16)
    codes[..., 3] = 65535
    codes[:6, :, 3] = 0  # top half transparent
    source = spec_png16(tmp_path / "deep.png", codes)
    result, _ = run_job("upscale-image", {"input": str(source)})
    written = open_input(str(result[ResultName.UPSCALE]))
    assert (written.width, written.height, written.sample_kind.value, written.has_alpha) == (40, 48, "uint16", True)
    out = written.read_still().pixels
    values = codes / 65535
    np.testing.assert_allclose(out[..., :3], upscaled(values[..., :3]), atol=1 / 65535)
    np.testing.assert_allclose(out[..., 3], upscaled(np.repeat(values[..., 3:], 3, axis=2))[..., 0], atol=1 / 65535)


def test_scale_two_and_max_input_size_set_the_result_size(run_job, photo):
    path, _ = photo
    result, _ = run_job("upscale-image", {"input": str(path), "scale": 2})
    assert PILImage.open(result[ResultName.UPSCALE]).size == (80, 60)
    result, context = run_job("upscale-image", {"input": str(path), "max_input_size": 20})
    assert PILImage.open(result[ResultName.UPSCALE]).size == (80, 60)  # the source is reduced to 20×15 first
    assert "Upscaling 20×15 ×4" in context.log_text


def test_cancelling_between_tiles_leaves_no_partial_image(run_job, photo, storage_root: Path):
    path, _ = photo
    with pytest.raises(JobCancelled):
        run_job(
            "upscale-image",
            {"input": str(path), "tile_size": 20},
            cancel_when=lambda m: m.startswith("Upscaling tile 2/"),
        )
    (folder,) = (storage_root / "jobs").iterdir()
    assert sorted(entry.name for entry in folder.iterdir()) == ["job-state.json", "job.log"]
    assert json.loads((folder / "job-state.json").read_text())["state"] == "cancelled"


def test_a_clip_becomes_a_png_sequence_of_upscaled_frames(run_job, tmp_path: Path):
    frames = [np.full((16, 24, 3), value, dtype=np.uint8) for value in (40, 200)]
    for frame in frames:
        frame[4:8, 4:12] = 255 - frame[4:8, 4:12]
    source = write_video(tmp_path / "clip.mp4", frames)
    result, context = run_job("upscale-image", {"input": str(source), "sequence_output": "png_sequence"})
    first = result[ResultName.UPSCALE]
    assert first.name == "frame_0001.png"
    for number, original in enumerate(frames, start=1):
        out = np.asarray(PILImage.open(first.with_name(f"frame_{number:04d}.png")))
        assert out.shape == (64, 96, 3)
        assert np.abs(out / 255 - upscaled(original / 255)).mean() < 0.02  # H.264 is lossy
    assert "Frame 1/2 · tile 1/1" in context.messages  # no estimate before a frame has run
    assert any(re.fullmatch(r"Frame 2/2 · \d+ s left · tile 1/1", message) for message in context.messages)


def test_a_clip_becomes_a_video_of_the_same_family(run_job, tmp_path: Path):
    source = write_video(tmp_path / "clip.mp4", [np.full((16, 24, 3), 90, dtype=np.uint8)] * 3)
    result, _ = run_job("upscale-image", {"input": str(source), "scale": 2})
    video = open_input(str(result[ResultName.UPSCALE]))
    assert (video.width, video.height, video.frame_count, video.format) == (48, 32, 3, "h264")
