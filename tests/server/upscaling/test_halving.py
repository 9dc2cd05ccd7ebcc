"""Band-streamed 2× Lanczos downscale against Pillow resizing the whole image."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image as PILImage

from imageforge.server.upscaling import halving
from imageforge.server.upscaling.halving import BandHalver, halving_taps


def pillow_half(image: np.ndarray) -> np.ndarray:
    height, width = image.shape[:2]
    planes = [
        PILImage.fromarray(image[..., c]).resize((width // 2, height // 2), PILImage.Resampling.LANCZOS)
        for c in range(image.shape[2])
    ]
    return np.stack([np.asarray(plane) for plane in planes], axis=2)


@pytest.mark.parametrize("cuts", [[], [1], [7, 8, 30], list(range(1, 40))])
def test_any_banding_equals_pillow_on_the_whole_image(cuts):
    image = np.random.default_rng(len(cuts)).random((40, 62, 3), dtype=np.float32)
    out = np.full((20, 31, 3), np.nan, dtype=np.float32)
    written = []

    def sink(top: int, rows: np.ndarray) -> None:
        written.append((top, len(rows)))
        out[top : top + len(rows)] = rows

    halver = BandHalver(40, 62, sink)
    for top, bottom in zip([0, *cuts], [*cuts, 40], strict=True):
        halver.push(top, image[top:bottom])
    assert halver.finished
    assert sum(count for _, count in written) == 20 and [top for top, _ in written] == sorted({t for t, _ in written})
    np.testing.assert_allclose(out, pillow_half(image), atol=5e-7)


def gathered_half(image: np.ndarray) -> np.ndarray:
    """Both passes written the obvious way over the whole image (as halving.py had them): every tap a strided
    column view or a gather of clamped rows, weighted and added in tap order."""
    height, width, channels = image.shape
    kernel, norm, _ = halving._kernel_and_norm(width // 2, width)
    padded = np.pad(image, ((0, 0), (5, 6), (0, 0)))
    halved = np.zeros((height, width // 2, channels), dtype=np.float32)
    for tap in range(12):
        halved += padded[:, tap : tap + width : 2] * kernel[tap]
    halved /= norm[None, :, None]
    indices, weights = halving_taps(height)
    out = np.zeros((height // 2, width // 2, channels), dtype=np.float32)
    for tap in range(12):
        out += halved[indices[:, tap]] * weights[:, tap, None, None]
    return out


@pytest.mark.parametrize("chunk_bytes", [halving.CHUNK_BYTES, 1, 700])  # one chunk, one row, a few rows
@pytest.mark.parametrize("cuts", [0, 3, 12])
@pytest.mark.parametrize(("height", "width", "channels"), [(2, 2, 1), (4, 6, 4), (14, 12, 3), (100, 38, 3)])
def test_chunked_strided_passes_are_bit_identical_to_the_obvious_sums(
    height, width, channels, cuts, chunk_bytes, monkeypatch
):
    monkeypatch.setattr(halving, "CHUNK_BYTES", chunk_bytes)
    rng = np.random.default_rng(height + cuts)
    image = rng.random((height, width, channels), dtype=np.float32)
    tops = sorted(rng.integers(0, height + 1, size=cuts).tolist())  # repeats give empty pushes
    out = np.full((height // 2, width // 2, channels), np.nan, dtype=np.float32)

    def sink(top: int, rows: np.ndarray) -> None:
        out[top : top + len(rows)] = rows

    halver = BandHalver(height, width, sink)
    for top, bottom in zip([0, *tops], [*tops, height], strict=True):
        halver.push(top, image[top:bottom])
    assert halver.finished
    np.testing.assert_array_equal(out, gathered_half(image))


def test_rows_must_arrive_in_order_and_sizes_be_even():
    halver = BandHalver(8, 8, lambda top, rows: None)
    with pytest.raises(ValueError, match="in order"):
        halver.push(2, np.zeros((2, 8, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="run past"):
        halver.push(0, np.zeros((10, 8, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="even"):
        BandHalver(9, 8, lambda top, rows: None)
