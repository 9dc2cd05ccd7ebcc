"""Still images decode at the precision the file stores, with their alpha, from every supported format."""

from __future__ import annotations

import numpy as np
import pytest

from imageforge.server.media import AlphaMode, MediaKind, SampleKind, open_input

from . import makers


def _read(path):
    source = open_input(str(path), still_only=True)
    assert source.kind is MediaKind.STILL
    image = source.read_still()
    assert image.pixels.dtype == np.float32
    assert (image.width, image.height) == (source.width, source.height)
    return source, image


@pytest.mark.parametrize(
    ("name", "mode", "save"),
    [
        ("rgb.png", "RGB", {}),
        ("rgba.png", "RGBA", {}),
        ("grey.png", "L", {}),
        ("rgba.webp", "RGBA", {"lossless": True}),
        ("rgb.bmp", "RGB", {}),
        ("rgba.tga", "RGBA", {}),
        ("rgb.tif", "RGB", {}),
    ],
)
def test_lossless_8bit_formats_decode_exactly(tmp_path, name, mode, save):
    channels = {"RGB": 3, "RGBA": 4, "L": 1}[mode]
    values = makers.ramp(5, 7, channels, 255, np.uint8)
    path = makers.pillow(tmp_path / name, values[..., 0] if channels == 1 else values, **save)

    source, image = _read(path)

    assert source.sample_kind is SampleKind.UINT8 and image.sample_kind is SampleKind.UINT8
    assert source.has_alpha == image.has_alpha == (channels == 4)
    expected = np.repeat(values, 3, axis=2) if channels == 1 else values
    np.testing.assert_array_equal(np.rint(image.pixels * 255).astype(np.uint8), expected)


def test_jpeg_decodes_close_to_its_source(tmp_path):
    values = np.full((16, 16, 3), (200, 100, 50), np.uint8)
    _, image = _read(makers.pillow(tmp_path / "photo.jpg", values, quality=95))
    assert not image.has_alpha
    np.testing.assert_allclose(image.pixels * 255, values, atol=3)


def test_palette_gif_with_transparency_keeps_alpha(tmp_path):
    from PIL import Image as PILImage

    palette_image = PILImage.new("P", (4, 2), 0)
    palette_image.putpalette([255, 0, 0, 0, 255, 0] + [0] * 762)
    palette_image.putpixel((1, 0), 1)
    palette_image.save(tmp_path / "sprite.gif", transparency=0)

    _, image = _read(tmp_path / "sprite.gif")

    assert image.has_alpha
    assert image.alpha[0, 0] == 0.0 and image.alpha[0, 1] == 1.0
    np.testing.assert_array_equal(image.rgb[0, 1], [0.0, 1.0, 0.0])


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_16bit_png_keeps_all_16_bits(tmp_path, channels):
    values = makers.ramp(4, 6, channels, 65535, np.uint16)
    _, image = _read(makers.spec_png16(tmp_path / f"deep{channels}.png", values))

    assert image.sample_kind is SampleKind.UINT16
    assert image.has_alpha == (channels in (2, 4))
    colour = np.repeat(values[..., :1], 3, axis=2) if channels <= 2 else values[..., :3]
    np.testing.assert_array_equal(np.rint(image.rgb * 65535).astype(np.uint16), colour)
    if image.has_alpha:
        np.testing.assert_array_equal(np.rint(image.alpha * 65535).astype(np.uint16), values[..., -1])


def test_16bit_tiff_colour_and_grey(tmp_path):
    colour = makers.ramp(4, 6, 3, 65535, np.uint16)
    path = makers.pyav_still(tmp_path / "deep.tif", "tiff", colour, "rgb48le", "rgb48le")
    _, image = _read(path)
    assert image.sample_kind is SampleKind.UINT16
    np.testing.assert_array_equal(np.rint(image.pixels * 65535).astype(np.uint16), colour)

    grey = makers.ramp(4, 6, 1, 65535, np.uint16)[..., 0]
    from PIL import Image as PILImage

    PILImage.fromarray(grey).save(tmp_path / "grey.tif")  # Pillow writes mode I;16
    _, image = _read(tmp_path / "grey.tif")
    assert image.sample_kind is SampleKind.UINT16
    np.testing.assert_array_equal(np.rint(image.pixels[..., 1] * 65535).astype(np.uint16), grey)


def test_exr_rgba_float_values_are_kept_unclamped_and_premultiplied(tmp_path):
    rgb = np.stack([np.linspace(-0.5, 8.0, 12, dtype=np.float32).reshape(3, 4)] * 3, axis=2)
    rgb[..., 1] *= 2
    alpha = np.full((3, 4), 0.5, np.float32)
    channels = {"R": rgb[..., 0], "G": rgb[..., 1], "B": rgb[..., 2], "A": alpha}
    source, image = _read(makers.exr(tmp_path / "render.exr", channels))

    assert source.sample_kind is SampleKind.FLOAT and source.format == "OpenEXR"
    assert image.alpha_mode is AlphaMode.PREMULTIPLIED
    np.testing.assert_array_equal(image.rgb, rgb)
    np.testing.assert_array_equal(image.alpha, alpha)
    np.testing.assert_array_equal(image.over_black(), rgb)  # premultiplied colour is already over black


def test_exr_blender_multilayer_prefers_combined_and_widens_half(tmp_path):
    plane = np.arange(12, dtype=np.float32).reshape(3, 4) / 4
    channels = {
        "ViewLayer.Combined.R": plane.astype(np.float16),
        "ViewLayer.Combined.G": (plane * 2).astype(np.float16),
        "ViewLayer.Combined.B": (plane * 3).astype(np.float16),
        "ViewLayer.Combined.A": np.ones_like(plane, dtype=np.float16),
        "ViewLayer.Depth.Z": plane + 100,
        "ViewLayer.AO.R": plane + 50,
        "ViewLayer.AO.G": plane + 50,
        "ViewLayer.AO.B": plane + 50,
    }
    _, image = _read(makers.exr(tmp_path / "multilayer.exr", channels))
    np.testing.assert_array_equal(image.pixels[..., 0], plane)
    np.testing.assert_array_equal(image.pixels[..., 2], plane * 3)
    assert image.has_alpha


def test_exr_luminance_only_becomes_grey(tmp_path):
    luminance = np.linspace(0, 4, 6, dtype=np.float32).reshape(2, 3)
    _, image = _read(makers.exr(tmp_path / "y.exr", {"Y": luminance}))
    assert not image.has_alpha
    for channel in range(3):
        np.testing.assert_array_equal(image.pixels[..., channel], luminance)


def test_exr_border_render_data_window_lands_in_display_window(tmp_path):
    data = np.full((2, 2), 3.0, np.float32)
    header = {
        "dataWindow": (np.array([1, 1], np.int32), np.array([2, 2], np.int32)),
        "displayWindow": (np.array([0, 0], np.int32), np.array([3, 2], np.int32)),
    }
    channels = {"R": data, "G": data, "B": data, "A": np.ones_like(data)}
    source, image = _read(makers.exr(tmp_path / "border.exr", channels, **header))
    assert (source.width, source.height) == (4, 3)
    assert image.alpha[0].tolist() == [0, 0, 0, 0]
    assert image.alpha[1].tolist() == [0, 1, 1, 0]
    assert image.pixels[2, 2, 0] == 3.0


def test_radiance_hdr_decodes_as_float_through_pyav(tmp_path):
    rgb = np.zeros((4, 6, 3), np.float32)
    rgb[..., 0], rgb[..., 1], rgb[..., 2] = 0.5, 2.0, 12.0
    rgb[0, 0] = (50.0, 25.0, 100.0)
    path = makers.pyav_still(tmp_path / "sky.hdr", "hdr", rgb, "gbrpf32le", "gbrpf32le")
    source, image = _read(path)
    assert source.sample_kind is SampleKind.FLOAT and source.format == "Radiance HDR"
    # RGBE: 8 mantissa bits per channel under one shared exponent (set by the brightest channel)
    np.testing.assert_allclose(image.pixels, rgb, atol=0.01 * 100.0, rtol=0.01)
    np.testing.assert_allclose(image.pixels[1:], rgb[1:], rtol=0.01)


def test_paths_with_spaces_and_unicode_work(tmp_path):
    folder = tmp_path / "Ünïcode földer 写真"
    folder.mkdir()
    values = makers.ramp(3, 3, 3, 255, np.uint8)
    _, image = _read(makers.pillow(folder / "my image ✓.png", values))
    np.testing.assert_array_equal(np.rint(image.pixels * 255).astype(np.uint8), values)


def test_exif_orientation_is_not_applied(tmp_path):
    """Blender shows stored pixel order; a result must line up with it."""
    from PIL import Image as PILImage

    values = np.zeros((2, 4, 3), np.uint8)
    values[0, 0] = 255
    exif = PILImage.Exif()
    exif[0x0112] = 6  # "rotate 90° CW to display"
    PILImage.fromarray(values).save(tmp_path / "phone.jpg", exif=exif, quality=100)
    source, image = _read(tmp_path / "phone.jpg")
    assert (source.width, source.height) == (4, 2)
    assert image.pixels[0, 0, 0] > 0.8


def test_literal_percent_d_in_a_16bit_file_name_is_not_a_pattern(tmp_path):
    """FFmpeg's image demuxer would read `%04d` as a frame pattern; the file must open as itself."""
    values = makers.ramp(3, 4, 3, 65535, np.uint16)
    _, image = _read(makers.spec_png16(tmp_path / "take%04d 100%.png", values))
    np.testing.assert_array_equal(np.rint(image.pixels * 65535).astype(np.uint16), values)
