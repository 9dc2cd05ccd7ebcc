"""Frame sequences: patterns and folders in, numbered PNG sequences out."""

from __future__ import annotations

import numpy as np
import pytest

from imageforge.contract.errors import InputError
from imageforge.server.media import MediaKind, PngSequenceWriter, SampleKind, from_integers, open_input

from . import makers


def _frames(folder, names, size=(6, 4)):
    folder.mkdir(exist_ok=True)
    for value, name in enumerate(names):
        makers.pillow(folder / name, np.full((size[1], size[0], 3), 10 * value + 5, np.uint8))
    return folder


def _values(source):
    return [(frame.index, frame.number, round(float(frame.image.pixels[0, 0, 0]) * 255)) for frame in source.frames()]


@pytest.mark.parametrize("pattern", ["shot_%04d.png", "shot_####.png"])
def test_padded_patterns_match_only_their_padding_and_sort_by_number(tmp_path, pattern):
    folder = _frames(tmp_path / "renders", ["shot_0010.png", "shot_0009.png", "shot_0001.png", "shot_1.png"])
    source = open_input(str(folder / pattern))
    assert source.kind is MediaKind.SEQUENCE
    assert (source.frame_count, source.width, source.height) == (3, 6, 4)
    assert source.sequence.numbers == (1, 9, 10)  # numeric order, gaps kept, unpadded shot_1 ignored
    assert _values(source) == [(0, 1, 25), (1, 9, 15), (2, 10, 5)]


def test_unpadded_printf_pattern(tmp_path):
    folder = _frames(tmp_path / "f", ["f2.png", "f10.png", "f03.png"])
    assert open_input(str(folder / "f%d.png")).sequence.numbers == (2, 10)


def test_folder_with_one_sequence(tmp_path):
    folder = _frames(tmp_path / "my frames ü", ["a_0002.png", "a_0001.png"])
    (folder / "notes.txt").write_text("not a frame")
    (folder / ".hidden_0003.png").write_bytes(b"")
    source = open_input(str(folder))
    assert source.kind is MediaKind.SEQUENCE and source.sample_kind is SampleKind.UINT8
    assert source.path.name == "a_####.png"
    assert _values(source) == [(0, 1, 15), (1, 2, 5)]


def test_folder_with_several_sequences_is_ambiguous(tmp_path):
    folder = _frames(tmp_path / "mixed", ["a_0001.png", "b_0001.png"])
    with pytest.raises(InputError) as caught:
        open_input(str(folder))
    assert "several image sequences (a_####.png, b_####.png)" in str(caught.value)


def test_folder_without_numbered_images(tmp_path):
    folder = _frames(tmp_path / "loose", ["cover.png"])
    with pytest.raises(InputError, match="'loose' contains no numbered images"):
        open_input(str(folder))


def test_pattern_matching_nothing(tmp_path):
    _frames(tmp_path / "r", ["x_0001.png"])
    with pytest.raises(InputError, match=r"No frames match 'y_####\.png'"):
        open_input(str(tmp_path / "r" / "y_####.png"))
    with pytest.raises(InputError, match="Cannot find the folder"):
        open_input(str(tmp_path / "nowhere" / "y_####.png"))


def test_frame_of_another_size_is_named_when_reached(tmp_path):
    folder = _frames(tmp_path / "s", ["s_0001.png"])
    _frames(folder, ["s_0002.png"], size=(8, 4))
    frames = open_input(str(folder)).frames()
    next(frames)
    with pytest.raises(InputError, match="Frame 's_0002.png' is 8×4 but the sequence starts at 6×4"):
        next(frames)


def test_damaged_frame_inside_a_sequence_is_named(tmp_path):
    folder = _frames(tmp_path / "d", ["d_0001.png"])
    (folder / "d_0002.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(40))
    with pytest.raises(InputError, match="'d_0002.png' is damaged"):
        list(open_input(str(folder)).frames())


def test_png_sequence_writer_round_trip_16_bit_with_frame_numbers(tmp_path):
    values = makers.ramp(4, 6, 4, 65535, np.uint16)
    with PngSequenceWriter(tmp_path / "foreground", bits=16) as writer:
        for number in (7, 8, 10):
            writer.write(number, from_integers(values))
    assert writer.first_file == tmp_path / "foreground" / "frame_0007.png"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["foreground"]

    source = open_input(str(tmp_path / "foreground" / "frame_####.png"))
    assert source.sequence.numbers == (7, 8, 10) and source.sample_kind is SampleKind.UINT16
    for frame in source.frames():
        np.testing.assert_array_equal(np.rint(frame.image.pixels * 65535).astype(np.uint16), values)


def test_png_sequence_writer_failure_leaves_no_folder(tmp_path):
    with pytest.raises(RuntimeError), PngSequenceWriter(tmp_path / "upscale") as writer:
        writer.write(1, np.zeros((2, 2, 3), np.float32))
        raise RuntimeError("cancelled at frame 2")
    assert list(tmp_path.iterdir()) == []
