"""The band-by-band PNG writer, read back by independent decoders (Pillow for 8-bit, FFmpeg for 16-bit)."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image as PILImage

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
