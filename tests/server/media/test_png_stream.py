"""The one PNG encoder, read back by independent decoders (Pillow for 8-bit, FFmpeg for 16-bit)."""

from __future__ import annotations

import zlib
from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image as PILImage

from imageforge.server.media import PngSequenceWriter, write_png
from imageforge.server.media.png_stream import PngStreamWriter


@pytest.mark.parametrize("channels", [1, 3, 4])
def test_eight_bit_rows_written_in_bands_decode_exactly(tmp_path: Path, channels: int):
    pixels = np.random.default_rng(channels).random((70, 45, channels), dtype=np.float32)
    with PngStreamWriter(tmp_path / "out.png", 45, 70, channels=channels, bits=8) as png:
        for top, bottom in ((0, 3), (3, 69), (69, 70)):
            png.write(pixels[top:bottom])
    decoded = np.asarray(PILImage.open(tmp_path / "out.png"))
    expected = (pixels * 255 + 0.5).astype(np.uint8)
    np.testing.assert_array_equal(decoded.reshape(expected.shape), expected)


@pytest.mark.parametrize(("channels", "native"), [(3, "rgb48le"), (4, "rgba64le")])
def test_sixteen_bit_rows_keep_every_code_value(tmp_path: Path, channels: int, native: str):
    codes = np.random.default_rng(3).integers(0, 65536, size=(130, 33, channels), dtype=np.uint16)
    with PngStreamWriter(tmp_path / "deep.png", 33, 130, channels=channels, bits=16) as png:
        png.write(codes[:100])  # already-quantised values pass through untouched
        png.write(codes[100:].astype(np.float32) / 65535)
    with av.open(str(tmp_path / "deep.png")) as container:
        decoded = next(container.decode(video=0)).to_ndarray(format=native)
    np.testing.assert_array_equal(decoded, codes)


def test_an_incomplete_image_leaves_no_file(tmp_path: Path):
    with pytest.raises(ValueError, match="5 of 10 rows"), PngStreamWriter(tmp_path / "x.png", 4, 10, channels=3) as png:
        png.write(np.zeros((5, 4, 3), dtype=np.float32))
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(RuntimeError), PngStreamWriter(tmp_path / "y.png", 4, 10, channels=3) as png:
        png.write(np.zeros((5, 4, 3), dtype=np.float32))
        raise RuntimeError("cancelled")
    assert list(tmp_path.iterdir()) == []


def _filter_bytes(path: Path) -> set[int]:
    """The filter type byte of every row, read from the file's IDAT chunks."""
    data, position, header = path.read_bytes(), 8, b""
    compressed = b""
    while position < len(data):
        length = int.from_bytes(data[position : position + 4], "big")
        kind, body = data[position + 4 : position + 8], data[position + 8 : position + 8 + length]
        header = body if kind == b"IHDR" else header
        compressed += body if kind == b"IDAT" else b""
        position += 12 + length
    width, bits, colour = int.from_bytes(header[:4], "big"), header[8], header[9]
    stride = 1 + width * {0: 1, 4: 2, 2: 3, 6: 4}[colour] * bits // 8
    raw = zlib.decompress(compressed)
    return {raw[row] for row in range(0, len(raw), stride)}


def test_every_png_result_goes_through_the_one_encoder(tmp_path: Path):
    """A whole image, a band-wise image and a sequence frame are the same bytes: one encoder, one policy."""
    pixels = np.random.default_rng(7).random((20, 9, 4), dtype=np.float32)
    whole = write_png(tmp_path / "whole.png", pixels, bits=16)
    with PngStreamWriter(tmp_path / "bands.png", 9, 20, channels=4, bits=16) as png:
        png.write(pixels[:11])
        png.write(pixels[11:])
    with PngSequenceWriter(tmp_path / "frames", bits=16) as sequence:
        sequence.write(1, pixels)
    assert whole.read_bytes() == (tmp_path / "bands.png").read_bytes() == sequence.first_file.read_bytes()
    assert _filter_bytes(whole) == {1}  # the Sub filter on every row, as png_stream's docstring says


def test_write_png_refuses_a_shape_that_is_no_image(tmp_path: Path):
    for shape in [(0, 4), (4, 4, 5), (2, 2, 2, 2)]:
        with pytest.raises(ValueError, match="PNG pixels must be"):
            write_png(tmp_path / "bad.png", np.zeros(shape, np.float32))
    assert list(tmp_path.iterdir()) == []
