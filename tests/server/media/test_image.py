"""The Image's precision model and the operations adapters need: over-black compositing and resizing."""

from __future__ import annotations

import numpy as np
import pytest

from imageforge.server.media import (
    AlphaMode,
    Image,
    SampleKind,
    fit_long_edge,
    fit_long_edge_size,
    from_integers,
    resize_image,
    to_integers,
)


def test_integer_round_trip_is_exact_for_every_16_bit_value():
    values = np.arange(65536, dtype=np.uint16)
    np.testing.assert_array_equal(to_integers(from_integers(values), 16), values)
    eight = np.arange(256, dtype=np.uint8)
    np.testing.assert_array_equal(to_integers(from_integers(eight), 8), eight)


def test_over_black_multiplies_straight_alpha_only():
    pixels = np.array([[[1.0, 0.5, 0.25, 0.5]]], np.float32)
    straight = Image(pixels, SampleKind.UINT8)
    np.testing.assert_allclose(straight.over_black(), [[[0.5, 0.25, 0.125]]])
    premultiplied = Image(pixels, SampleKind.FLOAT, AlphaMode.PREMULTIPLIED)
    np.testing.assert_allclose(premultiplied.over_black(), [[[1.0, 0.5, 0.25]]])
    np.testing.assert_allclose(premultiplied.straight().pixels, [[[2.0, 1.0, 0.5, 0.5]]])


@pytest.mark.parametrize(
    ("size", "limit", "expected"),
    [((4000, 3000), 2048, (2048, 1536)), ((3000, 4000), 2048, (1536, 2048)), ((100, 50), 2048, (100, 50))],
)
def test_fit_long_edge_size_downscales_only(size, limit, expected):
    assert fit_long_edge_size(size, limit) == expected


def test_fit_long_edge_keeps_source_size_kind_and_flat_colour():
    pixels = np.empty((40, 60, 3), np.float32)
    pixels[...] = (0.2, 0.4, 0.6)
    image = Image(pixels, SampleKind.UINT16)
    small = fit_long_edge(image, 30)
    assert small.size == (30, 20) and small.source_size == (60, 40)
    assert small.sample_kind is SampleKind.UINT16
    np.testing.assert_allclose(small.pixels, 0.2 * np.array([1, 2, 3]) * np.ones((20, 30, 1)), atol=1e-5)
    assert fit_long_edge(image, 60) is image  # never upscales, never copies
    back = resize_image(small, small.source_size)
    assert back.size == (60, 40)


def test_resize_is_alpha_aware_no_fringe_from_transparent_colour():
    """Transparent pixels' colour (bright green here) must not bleed into the shrunk edge."""
    pixels = np.zeros((8, 8, 4), np.float32)
    pixels[:, :4] = (1.0, 0.0, 0.0, 1.0)  # opaque red
    pixels[:, 4:] = (0.0, 1.0, 0.0, 0.0)  # fully transparent "green"
    shrunk = resize_image(Image(pixels, SampleKind.UINT8), (3, 3))
    edge = shrunk.pixels[:, 1]
    assert 0.2 < edge[0, 3] < 0.8  # partially covered
    assert np.all(edge[:, 1] < 0.02), edge  # no green
    assert np.all(edge[:, 0] > 0.98)


def test_resize_keeps_float_range_for_hdr():
    pixels = np.full((10, 10, 3), 25.0, np.float32)
    pixels[0, 0] = -1.0
    image = resize_image(Image(pixels, SampleKind.FLOAT), (5, 5))
    assert image.pixels.max() > 24.0 and image.pixels.min() < 25.0  # not clipped to [0, 1]


def test_invalid_pixels_are_rejected():
    with pytest.raises(ValueError):
        Image(np.zeros((4, 4, 3), np.float64), SampleKind.UINT8)
    with pytest.raises(ValueError):
        Image(np.zeros((4, 4), np.float32), SampleKind.UINT8)
