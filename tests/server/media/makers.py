"""Real media files for the media-layer tests, written by real encoders (Pillow, PyAV, OpenEXR) and, for
16-bit PNG, by a tiny spec-level encoder so the reader is checked against something it did not write."""

from __future__ import annotations

import struct
import zlib
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import OpenEXR
from PIL import Image as PILImage


def ramp(height: int, width: int, channels: int, maximum: int, dtype: type) -> np.ndarray:
    """A deterministic image whose every pixel and channel differs, spanning the code-value range."""
    count = height * width * channels
    values = (np.arange(count, dtype=np.int64) * 7919) % (maximum + 1)
    return values.reshape(height, width, channels).astype(dtype)


def spec_png16(path: Path, values: np.ndarray) -> Path:
    """Write a 16-bit PNG by the spec (filter type 0 on every row): grey, grey+alpha, RGB or RGBA."""
    if values.ndim == 2:
        values = values[..., None]
    height, width, channels = values.shape
    colour_type = {1: 0, 2: 4, 3: 2, 4: 6}[channels]
    rows = values.astype(">u2").reshape(height, width * channels)
    raw = b"".join(b"\x00" + row.tobytes() for row in rows)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 16, colour_type, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    path.write_bytes(png)
    return path


def patch_png_size(path: Path, width: int, height: int) -> Path:
    """Rewrite a PNG's IHDR to claim another size (valid CRC): zero-size and decompression-bomb files."""
    data = bytearray(path.read_bytes())
    data[16:24] = struct.pack(">II", width, height)
    data[29:33] = struct.pack(">I", zlib.crc32(bytes(data[12:29])))
    path.write_bytes(bytes(data))
    return path


def pyav_still(path: Path, codec: str, values: np.ndarray, native: str, encoded: str) -> Path:
    """Encode one frame with an FFmpeg image encoder (16-bit TIFF, Radiance HDR)."""
    frame = av.VideoFrame.from_ndarray(values, format=native)
    if encoded != native:
        frame = frame.reformat(format=encoded)
    encoder = av.CodecContext.create(codec, "w")
    encoder.width, encoder.height, encoder.pix_fmt = frame.width, frame.height, encoded
    path.write_bytes(b"".join(bytes(packet) for packet in encoder.encode(frame) + encoder.encode(None)))
    return path


def exr(path: Path, channels: dict[str, np.ndarray], **header: object) -> Path:
    # The binding reads raw buffers: a strided view (rgb[..., 0]) must be made contiguous first.
    planes = {name: np.ascontiguousarray(plane) for name, plane in channels.items()}
    OpenEXR.File({"compression": OpenEXR.ZIP_COMPRESSION, "type": OpenEXR.scanlineimage, **header}, planes).write(
        str(path)
    )
    return path


def pillow(path: Path, values: np.ndarray, **save: object) -> Path:
    PILImage.fromarray(values).save(path, **save)
    return path


def frame_colour(index: int) -> tuple[int, int, int]:
    """The flat colour of test video frame `index`: far apart so lossy codecs keep them distinguishable."""
    return (40 + 17 * index % 180, 200 - 13 * index % 160, 90)


def video(
    path: Path,
    *,
    codec: str = "libx264",
    pix_fmt: str = "yuv420p",
    frames: int = 6,
    rate: Fraction = Fraction(24),
    size: tuple[int, int] = (64, 48),
    audio: str | None = None,
    alpha: bool = False,
    fmt: str | None = None,
) -> Path:
    """A short clip of flat-coloured frames (left half opaque, right half 25% alpha when `alpha`),
    optionally with a silent audio track of the same duration."""
    width, height = size
    with av.open(str(path), "w", format=fmt) as container:
        stream = container.add_stream(codec, rate=rate)
        stream.width, stream.height, stream.pix_fmt = width, height, pix_fmt
        audio_stream = container.add_stream(audio, rate=48000) if audio else None
        container.start_encoding()  # header even when no frame follows
        for index in range(frames):
            pixels = np.zeros((height, width, 4), np.uint8)
            pixels[..., :3] = frame_colour(index)
            pixels[..., 3] = 255
            if alpha:
                pixels[:, width // 2 :, 3] = 64
            values, native = (pixels, "rgba") if alpha else (pixels[..., :3].copy(), "rgb24")
            frame = av.VideoFrame.from_ndarray(values, format=native)
            frame.pts = index
            frame.time_base = 1 / rate
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
        if audio_stream is not None:
            _silence(container, audio_stream, seconds=frames / rate)
    return path


def _silence(container, stream, seconds: Fraction) -> None:
    size = stream.codec_context.frame_size or 1024
    total, written = int(48000 * seconds), 0
    while written < total:
        frame = av.AudioFrame(format=stream.format.name, layout=stream.layout.name, samples=size)
        for plane in frame.planes:
            plane.update(bytes(plane.buffer_size))
        frame.sample_rate, frame.pts = 48000, written
        written += size
        for packet in stream.encode(frame):
            container.mux(packet)
    for packet in stream.encode(None):
        container.mux(packet)
