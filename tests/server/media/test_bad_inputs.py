"""Every unusable input is one sentence a Blender artist understands, naming the file, raised before any
pixel of a too-large image is decoded."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

from imageforge.contract.errors import InputError, ResourceExhaustedError
from imageforge.server.media import open_input

from . import makers


def _one_sentence(message: str) -> str:
    assert message.endswith("."), message
    assert not re.search(r"[.!?]\s+[A-Z]", message), f"more than one sentence: {message}"
    assert "\n" not in message
    return message


def _refused(path, *, still_only: bool = False, error=InputError) -> str:
    with pytest.raises(error) as caught:
        source = open_input(str(path), still_only=still_only)
        source.read_still() if still_only else list(source.frames())
    return _one_sentence(str(caught.value))


def _png(tmp_path, name="image.png", size=(8, 6)):
    values = makers.ramp(size[1], size[0], 3, 255, np.uint8)
    return makers.pillow(tmp_path / name, values)


def test_missing_file_names_the_path(tmp_path):
    message = _refused(tmp_path / "gone.png")
    assert "Cannot find" in message and "gone.png" in message


def test_empty_input_parameter():
    message = _refused("")
    assert "No input" in message


def test_directory_where_a_still_is_required(tmp_path):
    folder = tmp_path / "renders"
    folder.mkdir()
    message = _refused(folder, still_only=True)
    assert "'renders' is a folder" in message and "still image" in message


def test_video_and_pattern_where_a_still_is_required(tmp_path):
    clip = makers.video(tmp_path / "clip.mp4", frames=2)
    assert "'clip.mp4' is a video" in _refused(clip, still_only=True)
    _png(tmp_path, "frame_0001.png")
    assert "frame sequence" in _refused(tmp_path / "frame_####.png", still_only=True)


def test_unsupported_format_lists_the_supported_ones(tmp_path):
    path = tmp_path / "painting.psd"
    path.write_bytes(b"8BPS" + bytes(100))
    message = _refused(path)
    assert "'painting.psd' is not a supported file type" in message
    for name in ("PNG", "JPEG", "OpenEXR", "Radiance HDR", "MP4", "WebM", "numbered"):
        assert name in message


def test_zero_byte_file(tmp_path):
    path = tmp_path / "unsaved.png"
    path.touch()
    assert "'unsaved.png' is empty (0 bytes)" in _refused(path)


def test_garbage_with_an_image_extension_is_damaged(tmp_path):
    path = tmp_path / "noise.jpg"
    path.write_bytes(bytes(range(256)) * 4)
    message = _refused(path)
    assert "'noise.jpg' is damaged" in message


def test_truncated_png_says_truncated_and_chains_the_cause(tmp_path):
    noise = np.random.default_rng(1).integers(0, 255, (48, 64, 3), dtype=np.uint8)
    path = makers.pillow(tmp_path / "cut.png", noise)
    path.write_bytes(path.read_bytes()[:3000])
    with pytest.raises(InputError) as caught:
        open_input(str(path)).read_still()
    message = _one_sentence(str(caught.value))
    assert "'cut.png' is damaged or incomplete" in message and "truncated" in message
    assert caught.value.__cause__ is not None


def test_truncated_exr_is_damaged(tmp_path):
    plane = np.random.default_rng(2).random((64, 64), dtype=np.float32)
    path = makers.exr(tmp_path / "cut.exr", {"R": plane, "G": plane, "B": plane})
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    assert "'cut.exr' is damaged" in _refused(path, still_only=True)


def test_exr_without_colour_channels_lists_what_it_has(tmp_path):
    path = makers.exr(tmp_path / "depth.exr", {"Z": np.ones((2, 2), np.float32)})
    message = _refused(path)
    assert "'depth.exr' has no colour channels" in message and "Z" in message


def test_zero_size_png(tmp_path):
    path = makers.patch_png_size(_png(tmp_path, "flat.png"), 0, 6)
    assert "'flat.png' has no pixels" in _refused(path)


def test_decompression_bomb_is_refused_from_the_header_alone(tmp_path):
    path = makers.patch_png_size(_png(tmp_path, "bomb.png"), 20000, 20000)
    started = time.perf_counter()
    message = _refused(path, error=ResourceExhaustedError)
    assert time.perf_counter() - started < 1.0
    assert "'bomb.png' is 20000 × 20000 pixels" in message and "16384 × 16384" in message
    assert "scale it down" in message


def test_decompression_bomb_in_a_gif_header(tmp_path):
    path = makers.pillow(tmp_path / "bomb.gif", np.zeros((2, 2), np.uint8))
    data = bytearray(path.read_bytes())
    data[6:10] = (65535).to_bytes(2, "little") * 2  # logical screen 65535 × 65535
    path.write_bytes(bytes(data))
    message = _refused(path, error=ResourceExhaustedError)
    assert "'bomb.gif'" in message and "megapixel limit" in message


@pytest.mark.parametrize("name", ["anim.gif", "anim.png", "anim.webp"])
def test_animated_images_are_refused(tmp_path, name):
    from PIL import Image as PILImage

    frames = [PILImage.new("RGB", (4, 4), (index * 60, 0, 0)) for index in range(3)]
    frames[0].save(tmp_path / name, save_all=True, append_images=frames[1:])
    message = _refused(tmp_path / name, still_only=True)
    assert f"'{name}' is an animated image" in message and "PNG sequence" in message


def test_multipage_tiff_reads_its_first_page(tmp_path):
    from PIL import Image as PILImage

    pages = [PILImage.new("RGB", (4, 4), (value, 0, 0)) for value in (10, 200)]
    pages[0].save(tmp_path / "pages.tif", save_all=True, append_images=pages[1:])
    image = open_input(str(tmp_path / "pages.tif"), still_only=True).read_still()
    assert round(float(image.pixels[0, 0, 0]) * 255) == 10


def test_fifo_is_not_a_regular_file(tmp_path):
    path = tmp_path / "pipe.png"
    os.mkfifo(path)
    assert "'pipe.png' is not a regular file" in _refused(path)  # and never blocks opening it


_PROBE = """
import sys
from imageforge.server.media import open_input
try:
    open_input(sys.argv[1])
except Exception as error:
    print(type(error).__name__, error)
"""


def test_unreadable_file_says_permission(tmp_path):
    path = _png(tmp_path, "locked.png")
    path.chmod(0)
    try:
        if os.geteuid() != 0:
            message = f"InputError {_refused(path)}"
        elif shutil.which("setpriv"):  # root reads anything: drop the override capabilities for one process
            drop = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
            run = subprocess.run([*drop, sys.executable, "-c", _PROBE, str(path)], capture_output=True, text=True)
            message = run.stdout.strip()
        else:
            pytest.skip("running as root without setpriv: permissions cannot be denied")
    finally:
        path.chmod(0o644)
    assert message.startswith("InputError ImageForge is not allowed to read"), message
    assert "locked.png" in _one_sentence(message)


def test_video_that_is_not_a_video(tmp_path):
    path = tmp_path / "clip.mov"
    path.write_bytes(b"\x00\x00\x00\x18ftypqt  " + bytes(range(256)) * 8)
    assert "'clip.mov' is damaged" in _refused(path)


def test_truncated_mp4_is_damaged(tmp_path):
    path = makers.video(tmp_path / "cut.mp4", frames=4)
    path.write_bytes(path.read_bytes()[:600])
    assert "'cut.mp4' is damaged" in _refused(path)


def test_video_without_a_picture_track(tmp_path):
    import av

    path = tmp_path / "voice.mp4"
    with av.open(str(path), "w") as container:
        stream = container.add_stream("aac", rate=48000)
        makers._silence(container, stream, seconds=0.1)
    assert "'voice.mp4' has no video track" in _refused(path)


@pytest.mark.parametrize("name", ["empty.mkv", "empty.mp4"])
def test_video_with_no_frames(tmp_path, name):
    path = makers.video(tmp_path / name, codec="ffv1" if name.endswith("mkv") else "libx264", frames=0)
    assert f"'{name}' contains no video frames" in _refused(path)
