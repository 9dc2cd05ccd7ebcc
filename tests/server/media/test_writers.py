"""Writers round-trip exactly at their depth, and a failed write never leaves a file under the result name."""

from __future__ import annotations

import json

import numpy as np
import OpenEXR
import pytest
from PIL import Image as PILImage

from imageforge.server.media import (
    SampleKind,
    atomic_file,
    from_integers,
    open_input,
    write_exr,
    write_json,
    write_npz,
    write_png,
)

from . import makers


def _leftovers(folder):
    return sorted(path.name for path in folder.iterdir())


@pytest.mark.parametrize("channels", [1, 3, 4])
def test_8bit_png_round_trip_through_pillow(tmp_path, channels):
    values = makers.ramp(5, 7, channels, 255, np.uint8)
    path = write_png(tmp_path / "out.png", from_integers(values), bits=8)
    with PILImage.open(path) as image:
        assert image.mode == {1: "L", 3: "RGB", 4: "RGBA"}[channels]
        decoded = np.asarray(image)
    np.testing.assert_array_equal(decoded.reshape(values.shape), values)
    assert _leftovers(tmp_path) == ["out.png"]


@pytest.mark.parametrize("channels", [1, 3, 4])
def test_16bit_png_round_trip_keeps_every_bit(tmp_path, channels):
    values = makers.ramp(5, 7, channels, 65535, np.uint16)
    path = write_png(tmp_path / "deep.png", from_integers(values), bits=16)

    assert path.read_bytes()[24] == 16  # IHDR bit depth
    image = open_input(str(path)).read_still()
    assert image.sample_kind is SampleKind.UINT16
    decoded = np.rint(image.pixels * 65535).astype(np.uint16)
    expected = np.repeat(values, 3, axis=2) if channels == 1 else values
    np.testing.assert_array_equal(decoded, expected)
    with PILImage.open(path) as pillow:  # an independent decoder agrees on the high byte
        high = np.asarray(pillow.convert("RGBA" if channels == 4 else "RGB"))
    if channels != 1:
        np.testing.assert_array_equal(high, (values >> 8).astype(np.uint8))


def test_png_writer_clips_and_rounds(tmp_path):
    path = write_png(tmp_path / "clip.png", np.array([[-0.5, 0.5, 1.7, 0.2 / 255]], np.float32), bits=8)
    assert np.asarray(PILImage.open(path)).tolist() == [[0, 128, 255, 0]]


def test_exr_writer_named_channels_float32_zip(tmp_path):
    rng = np.random.default_rng(3)
    points = rng.normal(size=(6, 5, 3)).astype(np.float32) * 10
    alpha = rng.random((6, 5), dtype=np.float32)
    channels = {"R": points[..., 0], "G": points[..., 1], "B": points[..., 2], "A": alpha}  # strided views
    write_exr(tmp_path / "depth.exr", channels)

    written = OpenEXR.File(str(tmp_path / "depth.exr"), separate_channels=True)
    assert written.header()["compression"] == OpenEXR.ZIP_COMPRESSION
    read = written.channels()
    assert sorted(read) == ["A", "B", "G", "R"]
    for name, plane in channels.items():
        assert read[name].type() == OpenEXR.FLOAT
        np.testing.assert_array_equal(read[name].pixels, plane)


def test_exr_writer_single_matte_channel(tmp_path):
    matte = np.linspace(0, 1, 12, dtype=np.float32).reshape(3, 4)
    write_exr(tmp_path / "alpha.exr", {"Y": matte})
    read = OpenEXR.File(str(tmp_path / "alpha.exr"), separate_channels=True).channels()
    assert list(read) == ["Y"]
    np.testing.assert_array_equal(read["Y"].pixels, matte)
    image = open_input(str(tmp_path / "alpha.exr")).read_still()  # our reader sees a grey image
    np.testing.assert_array_equal(image.pixels[..., 1], matte)


def test_exr_writer_rejects_mismatched_channels(tmp_path):
    with pytest.raises(ValueError):
        write_exr(tmp_path / "bad.exr", {"R": np.zeros((2, 2)), "G": np.zeros((2, 3))})
    assert _leftovers(tmp_path) == []


def test_json_and_npz_round_trip(tmp_path):
    data = {"size": [640, 480], "fx": 1.5, "name": "Ünïcode"}
    assert json.loads(write_json(tmp_path / "meta.json", data).read_text(encoding="utf-8")) == data
    arrays = {"depth": np.arange(6, dtype=np.float32).reshape(2, 3), "mask": np.array([True, False])}
    with np.load(write_npz(tmp_path / "raw.npz", arrays)) as loaded:
        assert sorted(loaded.files) == ["depth", "mask"]
        np.testing.assert_array_equal(loaded["depth"], arrays["depth"])
        np.testing.assert_array_equal(loaded["mask"], arrays["mask"])


def test_json_with_nan_fails_without_leaving_a_file(tmp_path):
    with pytest.raises(ValueError):
        write_json(tmp_path / "meta.json", {"depth": float("nan")})
    assert _leftovers(tmp_path) == []


def test_failed_write_leaves_nothing_under_the_result_name(tmp_path):
    final = tmp_path / "result.png"
    with pytest.raises(RuntimeError), atomic_file(final) as temporary:
        temporary.write_bytes(b"\x89PNG half")
        raise RuntimeError("encoder crashed half way")
    assert _leftovers(tmp_path) == []


def test_failure_after_the_file_is_complete_still_cleans_up(tmp_path):
    """The final rename itself fails (the result name is taken by a folder): the temporary goes."""
    (tmp_path / "cutout.png").mkdir()
    with pytest.raises(OSError):
        write_png(tmp_path / "cutout.png", np.zeros((4, 4, 4), np.float32), bits=16)
    assert _leftovers(tmp_path) == ["cutout.png"]
    assert (tmp_path / "cutout.png").is_dir()


def test_failed_write_keeps_an_earlier_complete_result(tmp_path):
    final = write_json(tmp_path / "meta.json", {"ok": True})
    with pytest.raises(ValueError):
        write_json(final, {"bad": float("inf")})
    assert json.loads(final.read_text()) == {"ok": True}
    assert _leftovers(tmp_path) == ["meta.json"]
