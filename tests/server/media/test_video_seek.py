"""A range that starts late in a video seeks to a keyframe before it, and gives exactly the frames (index, number,
timestamp, every pixel) of a decode from the first frame: for every start, in every codec and container the
kit writes, with B-frames, variable frame rate, a first timestamp other than 0, open groups of pictures, and
files whose index lies (then the decoder's answer refutes the seek and the decode starts from the first
frame, saying so)."""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np
import pytest

from imageforge.server.media import MediaSource, open_input
from imageforge.server.media.video_seek import REORDER_MARGIN, read_timeline

from .seek_clips import grouped_clip, with_later_edit, with_sync_samples, without_sync_samples

CHUNK = 3  # frames per range: every start from 1 to the last frame is tried

# name: (codec, options, pix_fmt, clip settings, whether every start past the first group seeks)
SEEKING = {
    "h264 B-frames.mp4": ("libx264", {"bf": "3", "g": "8", "preset": "medium"}, "yuv420p", {"frames": 100}),
    "h264 B-frames, first pts 250.mov": ("libx264", {"bf": "2", "g": "6"}, "yuv420p", {"first_pts": 250}),
    "h264 variable rate.mkv": (
        "libx264", {"bf": "2", "g": "7"}, "yuv420p", {"durations": (40, 40, 20, 60, 33), "time_base": Fraction(1, 1000)}
    ),
    "h264 variable rate.mp4": (
        "libx264", {"bf": "2", "g": "7"}, "yuv420p", {"durations": (40, 20, 60), "time_base": Fraction(1, 1000)}
    ),
    "hevc open GOP (CRA).mp4": (
        "libx265", {"x265-params": "keyint=8:min-keyint=8:log-level=error"}, "yuv420p", {"frames": 100}
    ),
    "prores 10-bit.mov": ("prores_ks", {}, "yuv422p10le", {}),
    "vp9.webm": ("libvpx-vp9", {"g": "8"}, "yuv420p", {}),
}  # fmt: skip


def whole_decode(source: MediaSource) -> list[tuple[int, int, int | None, np.ndarray]]:
    return [(frame.index, frame.number, frame.pts, frame.image.pixels) for frame in source.frames()]


def chunks_against_whole(source: MediaSource) -> tuple[list[str], int]:
    """Decode a CHUNK-frame range from every start; each frame must be the whole decode's. Returns the notes
    and how many ranges seeked."""
    whole = whole_decode(source)
    assert [item[0] for item in whole] == list(range(source.frame_count))
    notes: list[str] = []
    seeked = 0
    for start in range(1, source.frame_count):
        told: list[str] = []
        got = list(source.frames(source.frame_range(start, CHUNK), note=told.append))
        assert [frame.index for frame in got] == list(range(start, min(start + CHUNK, source.frame_count)))
        for frame in got:
            index, number, pts, pixels = whole[frame.index]
            assert (frame.number, frame.pts) == (number, pts), f"start {start}"
            np.testing.assert_array_equal(frame.image.pixels, pixels, err_msg=f"frame {index} from start {start}")
        seeked += any(line.startswith("Seeked") for line in told)
        notes.extend(told)
    return notes, seeked


@pytest.mark.parametrize("name", SEEKING)
def test_every_range_seeks_and_gives_the_whole_decodes_frames(tmp_path, name):
    codec, options, pix_fmt, settings = SEEKING[name]
    source = open_input(str(grouped_clip(tmp_path / name, codec, options=options, pix_fmt=pix_fmt, **settings)))
    notes, seeked = chunks_against_whole(source)
    assert not [line for line in notes if not line.startswith("Seeked")]
    assert seeked >= source.frame_count // 2  # every start past the first group of pictures


def test_a_range_reads_the_packets_only_a_little_past_its_start(tmp_path):
    """The timeline of a range early in a long clip stops REORDER_MARGIN packets past it (the bytes a chunk
    reads end there, not at the file's end); the whole stream is read only for a range near the end."""
    path = grouped_clip(tmp_path / "long.mp4", options={"bf": "3", "g": "8"}, frames=150)
    info = open_input(str(path)).video
    assert info is not None
    early = read_timeline(path, info.codec, info.frame_count, through=20)
    assert (len(early.pts), early.complete) == (20 + 1 + REORDER_MARGIN, False)
    late = read_timeline(path, info.codec, info.frame_count, through=140)
    assert (len(late.pts), late.complete) == (150, True)


def test_timestamps_for_assembling_seek_the_same_way(tmp_path):
    source = open_input(str(grouped_clip(tmp_path / "clip.mp4", options={"bf": "3", "g": "8"}, first_pts=9)))
    whole = [(slot.index, slot.number, slot.pts) for slot in source.frame_slots()]
    told: list[str] = []
    late = [(slot.index, slot.number, slot.pts) for slot in source.frame_slots(range(20, 26), note=told.append)]
    assert late == whole[20:26]
    (line,) = told
    match = re.fullmatch(
        r"Seeked 'clip.mp4' to the keyframe at frame (\d+): (\d+) frame\(s\) decoded before frame 21.", line
    )
    assert match and 13 <= int(match[1]) <= 21 and int(match[2]) == 21 - int(match[1])


def test_an_open_group_of_pictures_decodes_from_the_first_frame_and_says_why(tmp_path):
    """MPEG-4 Part 2 with B-frames: the B-frames after each keyframe refer to the group before it."""
    clip = grouped_clip(tmp_path / "open.mp4", "mpeg4", options={"bf": "2", "g": "6"})
    source = open_input(str(clip))
    notes, seeked = chunks_against_whole(source)
    assert seeked == 0
    assert (
        f"Decoding 'open.mp4' from its first frame to reach frame {source.frame_count}: no exact seek, none of "
        f"its keyframes before frame {source.frame_count} starts a closed group of pictures." in notes
    )


def test_keyframes_the_index_invents_are_refuted_by_the_decoder(tmp_path):
    """MPEG-4 P-frames the sync-sample table calls keyframes: the demuxer believes it, the decoder does not
    (a P-frame decoded without its reference would come out wrong with the right timestamp)."""
    clip = grouped_clip(tmp_path / "clip.mp4", "mpeg4", options={"bf": "0", "g": "10"})
    lying = with_sync_samples(clip, tmp_path / "lying.mp4", [4, 5, 15, 16, 17, 25])
    source = open_input(str(lying))
    notes, seeked = chunks_against_whole(source)
    refuted = [line for line in notes if "after the seek the decoder gave" in line]
    assert refuted and seeked  # some ranges refuted, the true keyframes still seek


def test_an_index_without_sync_samples_is_refuted(tmp_path):
    """HEVC in MOV without `stss` (every sample a keyframe, says the format): seeks land on P- and B-frames."""
    clip = grouped_clip(tmp_path / "clip.mov", "libx265", options={"x265-params": "keyint=8:log-level=error"})
    source = open_input(str(without_sync_samples(clip, tmp_path / "no index.mov")))
    notes, seeked = chunks_against_whole(source)
    assert any("Decoding 'no index.mov' from its first frame" in line for line in notes)


def test_an_edit_list_that_drops_frames_is_not_trusted(tmp_path):
    """The edit list starts three frames in: the header still counts every sample, the decode shows fewer."""
    clip = grouped_clip(tmp_path / "clip.mp4", options={"bf": "0", "g": "5"}, time_base=Fraction(1, 25))
    edited = with_later_edit(clip, tmp_path / "edited.mp4", ticks=3 * 512)
    source = open_input(str(edited))
    whole = whole_decode(source)
    told: list[str] = []
    got = [(frame.index, frame.pts) for frame in source.frames(range(15, 18), note=told.append)]
    assert got == [(index, pts) for index, _, pts, _ in whole[15:18]]
    assert told == [
        f"Decoding 'edited.mp4' from its first frame to reach frame 16: no exact seek, its header counts "
        f"{source.frame_count} frame(s) but it holds {len(whole)} video packet(s)."
    ]


def test_seeking_can_be_switched_off(tmp_path, monkeypatch):
    monkeypatch.setenv("IMAGEFORGE_VIDEO_SEEK", "0")
    source = open_input(str(grouped_clip(tmp_path / "clip.mp4", options={"g": "4"})))
    told: list[str] = []
    assert [frame.index for frame in source.frames(range(20, 22), note=told.append)] == [20, 21]
    assert told == [
        "Decoding 'clip.mp4' from its first frame to reach frame 21: seeking is off (IMAGEFORGE_VIDEO_SEEK=0)."
    ]


def test_a_range_in_the_first_group_decodes_from_the_start_without_a_word(tmp_path):
    source = open_input(str(grouped_clip(tmp_path / "clip.mp4", options={"g": "250"})))
    told: list[str] = []
    assert [frame.index for frame in source.frames(range(20, 22), note=told.append)] == [20, 21]
    assert told == []
