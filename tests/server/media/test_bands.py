"""Large stills are decoded, resampled and written band by band; the bands must add up to the whole-image result.

Each test shrinks the band size so a small image spans many bands, and compares with one band covering it all
(what every image below the band size gets). Memory itself is measured by bench/memory_at_limit.py, not here.
"""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image as PILImage

from imageforge.server.media import open_input, png_stream, resample, stills, write_png

from . import makers


@pytest.fixture
def small_bands(monkeypatch):
    """Bands of a few rows for 37-pixel-wide images; returns a function restoring one band for everything."""
    monkeypatch.setattr(stills, "DECODE_BAND_PIXELS", 37 * 3)
    monkeypatch.setattr(resample, "RESIZE_BAND_PIXELS", 5 * 7)
    monkeypatch.setattr(png_stream, "BAND_PIXELS", 37 * 2)

    def whole() -> None:
        for module, name in (
            (stills, "DECODE_BAND_PIXELS"),
            (resample, "RESIZE_BAND_PIXELS"),
            (png_stream, "BAND_PIXELS"),
        ):
            monkeypatch.setattr(module, name, 1 << 40)

    return whole


@pytest.mark.parametrize(("mode", "suffix"), [("RGB", ".png"), ("RGBA", ".png"), ("L", ".png"), ("P", ".gif")])
def test_a_still_decoded_in_bands_equals_its_whole_conversion(tmp_path, small_bands, mode, suffix):
    values = makers.ramp(29, 37, 4, 255, np.uint8)
    image = PILImage.fromarray(values, "RGBA").convert(mode) if mode != "P" else None
    if mode == "P":
        image = PILImage.fromarray(values[..., :3], "RGB").quantize(16)
        image.info["transparency"] = 3
    path = tmp_path / f"still{suffix}"
    image.save(path, **({"transparency": 3} if mode == "P" else {}))
    banded = open_input(str(path)).read_still().pixels
    small_bands()
    whole = open_input(str(path)).read_still().pixels
    np.testing.assert_array_equal(banded, whole)
    with PILImage.open(path) as reference:
        target = "RGBA" if mode in ("RGBA", "P") else "RGB"
        expected = np.asarray(reference.convert(target), np.float32) / np.float32(255)
    np.testing.assert_allclose(banded, expected, atol=1e-7)
    assert banded.shape[2] == (4 if mode in ("RGBA", "P") else 3)


@pytest.mark.parametrize(
    ("source", "size"), [((29, 37), (7, 5)), ((29, 37), (111, 87)), ((13, 9), (37, 60)), ((60, 37), (37, 59))]
)
def test_resampling_in_bands_equals_resampling_the_whole_image(small_bands, source, size):
    pixels = np.random.default_rng(7).random((*source, 3), dtype=np.float32)
    banded = resample.resize(pixels, size)
    plane = resample.resize(pixels[..., 0], size)  # a strided channel: Pillow's image is filled band by band
    contiguous = resample.resize(np.ascontiguousarray(pixels[..., 0]), size)  # handed to Pillow at once
    np.testing.assert_array_equal(plane, contiguous)
    small_bands()
    whole = resample.resize(pixels, size)
    assert banded.shape == whole.shape == (size[1], size[0], 3)
    np.testing.assert_allclose(banded, whole, atol=5e-5)  # Pillow's band boxes differ by float rounding only
    np.testing.assert_allclose(plane, whole[..., 0], atol=5e-5)


def test_a_png_composed_in_bands_equals_the_whole_image_written_at_once(tmp_path, small_bands):
    rng = np.random.default_rng(3)
    colour, alpha = rng.random((29, 37, 3), dtype=np.float32), rng.random((29, 37), dtype=np.float32)
    calls = []

    def rows(top: int, bottom: int) -> np.ndarray:
        calls.append((top, bottom))
        return np.concatenate([colour[top:bottom], alpha[top:bottom, :, None]], axis=2)

    png_stream.write_png_bands(tmp_path / "banded.png", (37, 29), rows, channels=4, bits=16)
    write_png(tmp_path / "whole.png", np.concatenate([colour, alpha[..., None]], axis=2), bits=16)
    assert len(calls) == 15 and calls[0] == (0, 2) and calls[-1] == (28, 29)  # 2 rows a band
    banded = open_input(str(tmp_path / "banded.png")).read_still().pixels
    np.testing.assert_array_equal(banded, open_input(str(tmp_path / "whole.png")).read_still().pixels)


@pytest.mark.parametrize("channels", [3, 4])
def test_compositing_over_black_per_channel_equals_compositing_first(channels):
    from imageforge.server.models.display import over_black, over_black_at

    pixels = np.random.default_rng(9).random((41, 53, channels), dtype=np.float32)
    for size in ((17, 13), (60, 90)):
        np.testing.assert_array_equal(over_black_at(pixels, size), resample.resize(over_black(pixels), size))


def test_resizing_straight_alpha_premultiplies_each_channel_as_the_whole_image_would():
    from imageforge.server.media import Image, SampleKind

    pixels = np.random.default_rng(11).random((23, 31, 4), dtype=np.float32)
    pixels[:5, :, 3] = 0.0
    alpha = pixels[..., 3:4]
    whole = resample.resize(np.concatenate([pixels[..., :3] * alpha, alpha], axis=2), (12, 9))  # the old way
    new_alpha = np.clip(whole[..., 3:4], 0.0, 1.0)
    rgb = np.where(new_alpha > 1e-6, whole[..., :3] / np.where(new_alpha > 1e-6, new_alpha, 1.0), 0.0)
    expected = np.clip(np.concatenate([rgb, new_alpha], axis=2), 0.0, 1.0)
    resized = resample.resize_image(Image(pixels, SampleKind.UINT8), (12, 9))
    np.testing.assert_array_equal(resized.pixels, expected.astype(np.float32))
