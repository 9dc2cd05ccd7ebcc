"""remove-background in-process on the kit BEN2 (luma matte, 64² input): stills, depths, mattes, clips."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import OpenEXR
import pytest
from blendjob.server import JobCancelled
from PIL import Image as PILImage

from imageforge.contract.results import ResultName
from imageforge.server.media import open_input
from tests.kit.onnx_models import BEN2_LUMA
from tests.server.media.makers import spec_png16

from .conftest import read_video, write_video

LUMA = np.array(BEN2_LUMA)


def column_ramp(width: int = 64, height: int = 48) -> np.ndarray:
    """uint8 RGB whose colour changes only along x, so the model's vertical resize changes nothing."""
    red = np.round(np.linspace(0, 255, width)).astype(np.uint8)
    pixels = np.zeros((height, width, 3), dtype=np.uint8)
    pixels[..., 0] = red
    pixels[..., 1] = 255 - red
    pixels[..., 2] = 128
    return pixels


def expected_matte(pixels: np.ndarray) -> np.ndarray:
    luma = (pixels.astype(np.float64) / 255) @ LUMA
    return (luma - luma.min()) / (luma.max() - luma.min())


def test_a_still_keeps_its_colour_and_size_and_gains_the_matte_as_alpha(run_job, tmp_path: Path):
    pixels = column_ramp()
    source = tmp_path / "ramp.png"
    PILImage.fromarray(pixels).save(source)
    result, context = run_job("remove-background", {"input": str(source), "estimate_foreground": False})
    assert (
        set(result) == {ResultName.FOREGROUND, ResultName.PROVENANCE}
        and result[ResultName.FOREGROUND].name == "foreground.png"
    )
    (ran,) = json.loads(result[ResultName.PROVENANCE].read_text())["models"]
    assert (ran["model"], ran["device"], ran["provider"], ran["runs"]) == (
        "KIT_BEN2",
        "cpu",
        "CPUExecutionProvider",
        1,
    )
    foreground = np.asarray(PILImage.open(result[ResultName.FOREGROUND]))
    assert foreground.shape == (48, 64, 4) and foreground.dtype == np.uint8
    np.testing.assert_array_equal(foreground[..., :3], pixels)
    np.testing.assert_allclose(foreground[..., 3] / 255, expected_matte(pixels), atol=3 / 255)
    assert context.messages[0] == "Preparing model" and context.messages[-1] == "Writing result"
    assert "Reading input" in context.messages and "Removing background" in context.messages
    assert "runs on cpu (CPUExecutionProvider)" in context.log_text
    assert "Model ran 1 time(s) on CPUExecutionProvider" in context.log_text


def test_sixteen_bit_rgba_stays_sixteen_bit_and_the_source_alpha_multiplies(run_job, tmp_path: Path):
    ramp = column_ramp(64, 64).astype(np.uint16) * 257  # square: the model sees it unresampled
    alpha = np.full((64, 64, 1), 65535, dtype=np.uint16)
    alpha[:32] = 32768  # top half half-transparent
    codes = np.concatenate([ramp + 3, alpha], axis=2)  # + 3: values only 16 bits can hold
    source = spec_png16(tmp_path / "deep.png", codes)
    result, _ = run_job("remove-background", {"input": str(source), "estimate_foreground": False})
    written = open_input(str(result[ResultName.FOREGROUND]))
    assert (written.sample_kind.value, written.has_alpha) == ("uint16", True)
    foreground = written.read_still().pixels
    np.testing.assert_array_equal(np.round(foreground[..., :3] * 65535), codes[..., :3])
    # The model sees the colour over black: the top half is darker, but min-max spans the whole image.
    over_black = (codes[..., :3] / 65535) * (codes[..., 3:] / 65535)
    luma = over_black @ LUMA
    matte = (luma - luma.min()) / (luma.max() - luma.min()) * (codes[..., 3] / 65535)
    np.testing.assert_allclose(foreground[..., 3], matte, atol=3e-3)


def test_alpha_output_is_a_float_exr_matte(run_job, tmp_path: Path):
    pixels = column_ramp()
    source = tmp_path / "ramp.png"
    PILImage.fromarray(pixels).save(source)
    result, _ = run_job("remove-background", {"input": str(source), "output_kind": "alpha"})
    assert set(result) == {ResultName.ALPHA, ResultName.PROVENANCE} and result[ResultName.ALPHA].suffix == ".exr"
    part = OpenEXR.File(str(result[ResultName.ALPHA]), separate_channels=True).parts[0]
    assert list(part.channels) == ["Y"]
    matte = part.channels["Y"].pixels
    assert matte.dtype == np.float32 and matte.shape == (48, 64)
    np.testing.assert_allclose(matte, expected_matte(pixels), atol=3e-3)


def test_max_input_size_limits_what_the_model_sees_not_the_result(run_job, tmp_path: Path):
    stripes = np.zeros((64, 64, 3), dtype=np.uint8)
    stripes[:, 1::2] = 255  # one-pixel stripes: gone once the image is reduced to 32²
    source = tmp_path / "stripes.png"
    PILImage.fromarray(stripes).save(source)
    full, _ = run_job("remove-background", {"input": str(source), "estimate_foreground": False})
    limited, context = run_job(
        "remove-background", {"input": str(source), "max_input_size": 32, "estimate_foreground": False}
    )
    sharp = np.asarray(PILImage.open(full[ResultName.FOREGROUND]))
    soft = np.asarray(PILImage.open(limited[ResultName.FOREGROUND]))
    assert sharp.shape == soft.shape == (64, 64, 4)
    np.testing.assert_array_equal(soft[..., :3], stripes)  # colour is never resampled
    assert np.all(sharp[:, 0::2, 3] == 0) and np.all(sharp[:, 1::2, 3] == 255)
    # No stripe survives in the limited matte: neighbouring columns (away from the borders) barely differ.
    assert np.abs(np.diff(soft[:, 8:56, 3].astype(int), axis=1)).max() < 20


def test_a_video_streams_into_a_video_and_says_when_alpha_cannot_be_kept(run_job, tmp_path: Path):
    frames = [np.roll(column_ramp(), shift * 8, axis=1) for shift in range(3)]
    source = write_video(tmp_path / "clip.mp4", frames)
    result, context = run_job("remove-background", {"input": str(source), "estimate_foreground": False})
    assert result[ResultName.FOREGROUND].name == "foreground.mp4"
    written = read_video(result[ResultName.FOREGROUND])
    assert len(written) == 3
    for original, output in zip(frames, written, strict=True):
        over_black = original / 255 * expected_matte(original)[..., None]
        assert np.abs(output / 255 - over_black).mean() < 0.03
    assert [message.split(" · ")[0] for message in context.messages if message.startswith("Frame")] == [
        "Frame 1/3",
        "Frame 2/3",
        "Frame 3/3",
    ]
    assert any("cannot store transparency" in message for message in context.messages)
    assert "Model ran 3 time(s)" in context.log_text


def test_png_sequence_output_keeps_alpha_and_the_source_numbers(run_job, tmp_path: Path):
    folder = tmp_path / "shot"
    folder.mkdir()
    frames = {7: column_ramp(), 8: column_ramp()[:, ::-1].copy()}
    for number, pixels in frames.items():
        PILImage.fromarray(pixels).save(folder / f"shot_{number:04d}.png")
    result, _ = run_job(
        "remove-background", {"input": str(folder), "sequence_output": "png_sequence", "estimate_foreground": False}
    )
    first = result[ResultName.FOREGROUND]
    assert first.relative_to(first.parents[1]).as_posix() == "foreground/frame_0007.png"
    for number, pixels in frames.items():
        written = np.asarray(PILImage.open(first.with_name(f"frame_{number:04d}.png")))
        np.testing.assert_array_equal(written[..., :3], pixels)
        np.testing.assert_allclose(written[..., 3] / 255, expected_matte(pixels), atol=3 / 255)


def test_cancelling_between_frames_leaves_only_the_log(run_job, storage_root: Path, tmp_path: Path):
    source = write_video(tmp_path / "clip.mp4", [column_ramp()] * 4)
    seen = []

    def cancel_at_second_frame(message: str) -> bool:
        seen.append(message)
        return message.startswith("Frame 2/4")

    with pytest.raises(JobCancelled):
        run_job("remove-background", {"input": str(source)}, cancel_when=cancel_at_second_frame)
    assert seen[-1].startswith("Frame 2/4 · ")  # the next check stopped it: no frame 3 (2 has an estimate)
    (folder,) = (storage_root / "jobs").iterdir()
    assert sorted(entry.name for entry in folder.iterdir()) == ["job-state.json", "job.log"]
    assert json.loads((folder / "job-state.json").read_text())["state"] == "cancelled"
