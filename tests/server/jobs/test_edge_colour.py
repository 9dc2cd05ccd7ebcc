"""Every background tool's cut-out colour: foreground estimation on by default (off on request), the looks
(straight, premultiplied, over a solid colour), with BEN2 and BiRefNet kit models through the real handler."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

from imageforge.contract import InputError
from imageforge.contract.results import ResultName
from imageforge.server.matting import estimate_foreground
from imageforge.server.media import open_input
from tests.kit.hair_composite import hair_composite

MODELS = ["KIT_BEN2", "KIT_BIREFNET"]


@pytest.fixture
def hair(tmp_path: Path) -> tuple[Path, np.ndarray]:
    """An 8-bit photo of hair on a green wall (64 × 48): soft mattes from either kit model."""
    composite = hair_composite(64, 48, strands=20, seed=3)
    pixels = np.round(composite.image * 255).astype(np.uint8)
    path = tmp_path / "hair.png"
    PILImage.fromarray(pixels).save(path)
    return path, pixels


def read(path: Path) -> np.ndarray:
    return open_input(str(path)).read_still().pixels


def float_matte(run_job, path: Path, model: str) -> np.ndarray:
    result, _ = run_job("remove-background", {"input": str(path), "model": model, "output_kind": "alpha"})
    return read(result[ResultName.ALPHA])[..., 0]


@pytest.mark.parametrize("model", MODELS)
def test_remove_background_writes_the_estimated_colour_by_default(run_job, hair, model):
    path, pixels = hair
    matte = float_matte(run_job, path, model)
    soft = (matte > 0) & (matte < 1)
    assert soft.sum() > 100
    result, context = run_job("remove-background", {"input": str(path), "model": model})
    foreground = read(result[ResultName.FOREGROUND])
    expected = pixels.astype(np.float32) / 255
    estimate_foreground(expected, matte)
    np.testing.assert_allclose(foreground[..., :3], expected, atol=1 / 255 + 1e-6)
    assert np.abs(foreground[..., :3] - pixels / 255)[soft].max() > 0.05  # the edge colour really changed
    np.testing.assert_allclose(foreground[..., 3], matte, atol=1 / 255)
    assert "Foreground colour estimated on" in context.log_text
    off, context = run_job("remove-background", {"input": str(path), "model": model, "estimate_foreground": False})
    np.testing.assert_array_equal(np.round(read(off[ResultName.FOREGROUND])[..., :3] * 255), pixels)
    assert "Foreground colour: off" in context.log_text


def test_premultiplied_and_solid_colour_looks(run_job, hair):
    path, _ = hair
    common = {"input": str(path), "model": "KIT_BIREFNET"}
    straight = read(run_job("remove-background", common)[0][ResultName.FOREGROUND])
    premultiplied = read(run_job("remove-background", {**common, "premultiplied": True})[0][ResultName.FOREGROUND])
    alpha = straight[..., 3:]
    np.testing.assert_allclose(premultiplied[..., 3:], alpha)
    np.testing.assert_allclose(premultiplied[..., :3], straight[..., :3] * alpha, atol=1.5 / 255)
    result, context = run_job("remove-background", {**common, "background_color": "#FF8000"})
    solid = read(result[ResultName.FOREGROUND])
    assert solid.shape == (48, 64, 3)  # opaque: no alpha channel
    backdrop = np.array([1.0, 128 / 255, 0.0], np.float32)
    np.testing.assert_allclose(solid, straight[..., :3] * alpha + backdrop * (1 - alpha), atol=1.5 / 255)
    assert "over #ff8000, opaque" in context.log_text


def test_a_colour_that_is_not_hex_is_refused_before_any_model_loads(run_job, hair):
    path, _ = hair
    with pytest.raises(InputError, match=r"background_color must be a colour written #RRGGBB .* not 'green'"):
        run_job("remove-background", {"input": str(path), "background_color": "green"})


def test_a_crisp_matte_skips_the_estimate_and_says_so(run_job, tmp_path: Path):
    pixels = np.full((64, 64, 3), 30, dtype=np.uint8)  # the model's own size: its 0/1 matte is not resampled
    pixels[16:32, 8:24, 0] = 230  # the threshold model's foreground: a hard-edged red square
    path = tmp_path / "square.png"
    PILImage.fromarray(pixels).save(path)
    result, context = run_job("remove-background", {"input": str(path), "model": "KIT_BEN2_THRESHOLD"})
    np.testing.assert_array_equal(np.round(read(result[ResultName.FOREGROUND])[..., :3] * 255), pixels)
    assert "the matte has no soft pixel, colour kept" in context.log_text


@pytest.mark.parametrize("model", MODELS)
def test_refine_selection_cutout_gets_the_estimated_colour(run_job, hair, model):
    path, pixels = hair
    selection = {"box": [0, 0, 64, 48]}
    result, _ = run_job("refine-image-selection", {"input": str(path), "selection": selection, "model": model})
    alpha = read(result[ResultName.ALPHA])[..., 0]
    cutout = read(result[ResultName.CUTOUT])
    soft = (alpha > 0) & (alpha < 1)
    assert np.abs(cutout[..., :3] - pixels / 255)[soft].max() > 0.05
    hard = alpha == 1
    np.testing.assert_array_equal(np.round(cutout[..., :3] * 255)[hard], pixels[hard])


def test_a_sixteen_bit_source_keeps_sixteen_bits(run_job, tmp_path: Path):
    """Transparent pixels keep their exact 16-bit colour; estimated edge colours are not rounded to 8 bits."""
    from tests.server.media.makers import spec_png16

    composite = hair_composite(64, 48, strands=20, seed=5)
    colour = np.round(composite.image * 65535).astype(np.uint16) | 1  # odd codes: only 16 bits hold them
    alpha = np.full((48, 64, 1), 65535, np.uint16)
    alpha[:, :8] = 0  # a transparent strip: matte 0 there, colour kept as it is
    path = spec_png16(tmp_path / "deep.png", np.concatenate([colour, alpha], axis=2))
    result, _ = run_job("remove-background", {"input": str(path), "model": "KIT_BIREFNET"})
    written = open_input(str(result[ResultName.FOREGROUND]))
    assert written.sample_kind.value == "uint16"
    foreground = written.read_still().pixels
    codes = np.round(foreground[..., :3] * 65535).astype(np.int64)
    np.testing.assert_array_equal(codes[:, :8], colour[:, :8])
    soft = (foreground[..., 3] > 0) & (foreground[..., 3] < 1)
    assert soft.sum() > 100 and np.count_nonzero(codes[soft] % 257) > 0.9 * codes[soft].size


@pytest.mark.parametrize(
    ("job", "extra"), [("remove-background", {}), ("refine-image-selection", {"selection": {"box": [0, 0, 7, 20]}})]
)
def test_an_image_below_8_pixels_is_refused_in_one_sentence(run_job, tmp_path: Path, job, extra):
    path = tmp_path / "thin.png"
    PILImage.fromarray(np.zeros((20, 7, 3), np.uint8)).save(path)
    with pytest.raises(InputError, match=r"^The image is 7×20 pixels; removing a background needs at least 8 pixels"):
        run_job(job, {"input": str(path), **extra})


def test_the_sources_colour_profile_and_exif_orientation_are_kept(run_job, hair, tmp_path: Path):
    """Pixels stay in stored order (as Blender shows them); the result carries the source's ICC profile and EXIF
    block, so other viewers rotate and colour it as they do the source."""
    path, pixels = hair
    profile = b"\x00\x00\x02\x0cICC-profile-bytes-of-the-camera" * 8
    exif = PILImage.Exif()
    exif[0x0112] = 6  # rotate 90° clockwise to display
    exif[0x010F] = "Camera Maker"
    source = tmp_path / "camera.png"
    PILImage.fromarray(pixels).save(source, icc_profile=profile, exif=exif)
    for job, extra, name in (
        ("remove-background", {}, ResultName.FOREGROUND),
        ("refine-image-selection", {"selection": {"box": [0, 0, 64, 48]}}, ResultName.CUTOUT),
    ):
        result, _ = run_job(job, {"input": str(source), "model": "KIT_BIREFNET", **extra})
        with PILImage.open(result[name]) as written:
            assert written.size == (64, 48)  # stored order: not rotated
            assert written.info.get("icc_profile") == profile
            assert written.getexif()[0x0112] == 6 and written.getexif()[0x010F] == "Camera Maker"
    plain, context = run_job("remove-background", {"input": str(path), "model": "KIT_BIREFNET"})
    with PILImage.open(plain[ResultName.FOREGROUND]) as written:
        assert "icc_profile" not in written.info and len(written.getexif()) == 0
    assert "the source has no colour profile or EXIF" in context.log_text


def models_that_ran(result: dict) -> list[str]:
    from imageforge.contract.provenance import Provenance

    return [run.model for run in Provenance.read(result[ResultName.PROVENANCE]).models]


def test_the_cutouts_refine_step_runs_the_chosen_background_model(run_job, hair):
    """generate-cutout-artifacts with refine: `background_model` picks the model (BiRefNet here, not the family's
    default BEN2), its matte is the one remove-background makes with that model, and provenance names it."""
    path, pixels = hair
    whole = {"box": [0, 0, 64, 48]}
    mattes = {}
    for model in MODELS:
        result, context = run_job(
            "generate-cutout-artifacts",
            {"input": str(path), "selection": whole, "refine": True, "background_model": model},
        )
        assert models_that_ran(result) == [model]
        assert "Foreground colour estimated on" in context.log_text
        mattes[model] = read(result[ResultName.SELECTION_ALPHA])[..., 0]
    assert np.abs(mattes["KIT_BEN2"] - mattes["KIT_BIREFNET"]).max() > 0.1  # two models, two mattes
    expected = float_matte(run_job, path, "KIT_BIREFNET")
    rows, columns = np.nonzero(expected >= 1 / 512)  # the cutout is cropped to the visible matte
    crop = expected[rows.min() : rows.max() + 1, columns.min() : columns.max() + 1]
    crop = np.where(crop < 1 / 512, 0.0, crop)
    np.testing.assert_allclose(mattes["KIT_BIREFNET"], crop, atol=1 / 65535 + 1e-6)


def test_a_clips_frames_run_the_chosen_background_model(run_job, tmp_path: Path):
    """remove-background on a clip (the frame tools and batches over videos): `model` is honoured per frame."""
    from tests.server.jobs.conftest import write_video

    frames = [np.round(hair_composite(64, 48, strands=20, seed=seed).image * 255).astype(np.uint8) for seed in (3, 4)]
    clip = write_video(tmp_path / "hair.mp4", frames)
    alphas = {}
    for model in MODELS:
        parameters = {"input": str(clip), "model": model, "output_kind": "alpha", "sequence_output": "png_sequence"}
        result, _ = run_job("remove-background", parameters)
        assert models_that_ran(result) == [model]
        written = sorted(Path(result[ResultName.ALPHA]).parent.glob("frame_*.png"))
        assert len(written) == 2
        alphas[model] = read(written[0])[..., 0]
    assert np.abs(alphas["KIT_BEN2"] - alphas["KIT_BIREFNET"]).max() > 0.1


def test_a_float_exr_source_keeps_more_than_eight_bits_through_the_estimate(run_job, tmp_path: Path):
    """A float EXR's foreground is a 16-bit PNG holding the estimate made on the float colour (as displayed):
    nothing on the way rounds it to 8 bits."""
    from imageforge.server.models.display import display_pixels
    from tests.server.media.makers import exr

    composite = hair_composite(64, 48, strands=20, seed=6)
    colour = composite.image
    path = exr(tmp_path / "hair.exr", {"R": colour[..., 0], "G": colour[..., 1], "B": colour[..., 2]})
    result, context = run_job("remove-background", {"input": str(path), "model": "KIT_BIREFNET"})
    written = open_input(str(result[ResultName.FOREGROUND]))
    assert written.sample_kind.value == "uint16"
    foreground = written.read_still().pixels
    matte = float_matte(run_job, path, "KIT_BIREFNET")
    display = display_pixels(open_input(str(path)).read_still())[..., :3]  # the EXR is linear: shown as sRGB
    expected = display.copy()
    estimate = estimate_foreground(expected, matte)
    assert estimate.soft_pixels > 1000
    np.testing.assert_allclose(foreground[..., :3], expected, atol=0.5 / 65535 + 1e-6)
    quantised = np.round(display * 255) / 255
    estimate_foreground(quantised, matte)
    assert np.abs(foreground[..., :3] - quantised).mean() > 0.2 / 255  # what an 8-bit detour would have given
    assert "Foreground colour estimated on" in context.log_text
