"""Where a decode may start so that a farm chunk late in a clip decodes one group of pictures, not the clip.

A frame's number (its index) is its position in presentation order in a decode from the stream's first frame.
The stream's packets, read by demuxing (nothing is decoded) from the first one to REORDER_MARGIN packets past
the wanted frame, give every frame's timestamp in decode order. A keyframe K is a place to start when the
decode from the start shows every earlier packet (decode order) before K and every later one after it: then
K's index is the count of timestamps below its own, and the frames after it are the same frames a decode from
the start gives (no picture after K refers to one before it). HEVC allows leading pictures after a CRA/BLA
keyframe that are shown before it; they are never shown when a decode starts there (RASL) and the pictures
after the keyframe never refer to them, so for HEVC the later packets may hold lower timestamps. "Every later
packet" is every packet read: a decoder reorders pictures within a few frames (H.264 and HEVC at most 16), so
a packet further on cannot be shown before K by a decode from the start either. The timeline itself is refused
when it cannot count frames: a packet without a timestamp, two packets with one, a stream that does not start
on a keyframe shown first, or, when the whole stream was read, a count other than the file's frame count.

This module only plans; media/video_read.py seeks and then has the decoder prove each claim (the first
frame after the seek is that keyframe, and every frame up to the chunk's first carries the timestamp the
plan predicts), and decodes from the start whenever a claim fails.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import av

# Codecs whose standard keeps the pictures after a keyframe independent of the leading pictures decoded
# after it (HEVC CRA/BLA with RASL pictures, which a decoder starting there skips).
_LEADING_PICTURES_SKIPPED = frozenset({"hevc"})
# Packets read past the wanted frame: far more than any decoder's reordering (H.264/HEVC: 16 pictures), so
# every packet shown before the wanted frame has been read. Bytes read end there, not at the file's end.
REORDER_MARGIN = 64


@dataclass(frozen=True)
class Timeline:
    """The video stream's frame-carrying packets in decode order (empty flush packets and packets the
    container marks as discarded are not frames)."""

    pts: tuple[int | None, ...]
    keyframe: tuple[bool, ...]
    codec: str
    frame_count: int  # the file's own count (VideoInfo.frame_count), which every numbering must agree with
    complete: bool  # read to the stream's end (else to REORDER_MARGIN packets past the wanted frame)


@dataclass(frozen=True)
class SeekPlan:
    """Start the decode at the keyframe `pts` (index `index`); the decoder may land on any keyframe of
    `landings` (timestamp → index) instead, every one of them a proven place to start."""

    pts: int
    index: int
    shown: tuple[int, ...]  # the frames' timestamps in presentation order, shown[i] frame i's, at least to start
    landings: dict[int, int]


def read_timeline(path: Path, codec: str, frame_count: int, *, through: int | None = None) -> Timeline:
    """Demux the first video stream of `path` (read, not decoded) into its timeline: to its end, or to
    REORDER_MARGIN packets past frame `through`."""
    pts: list[int | None] = []
    keyframe: list[bool] = []
    enough = None if through is None else through + 1 + REORDER_MARGIN
    with av.open(str(path)) as container:
        for packet in container.demux(container.streams.video[0]):
            if packet.size and not packet.is_discard:
                pts.append(packet.pts)
                keyframe.append(packet.is_keyframe)
                if enough is not None and len(pts) >= enough:
                    return Timeline(tuple(pts), tuple(keyframe), codec, frame_count, complete=False)
    return Timeline(tuple(pts), tuple(keyframe), codec, frame_count, complete=True)


def plan_seek(timeline: Timeline, start: int) -> SeekPlan | str | None:
    """How to reach frame `start`: a SeekPlan, None when the best place to start is the first frame anyway,
    or one sentence saying why no seek can be proven exact for this file."""
    problem = _timeline_problem(timeline)
    if problem is not None:
        return problem
    stamps = [stamp for stamp in timeline.pts if stamp is not None]
    shown = tuple(sorted(stamps))
    index_of = {stamp: index for index, stamp in enumerate(shown)}
    target = shown[start]
    landings = {
        stamps[position]: index_of[stamps[position]]
        for position in _starting_points(stamps, timeline.keyframe, timeline.codec)
        if stamps[position] <= target
    }
    best = max(landings)
    if index_of[best] > 0:
        return SeekPlan(pts=best, index=index_of[best], shown=shown, landings=landings)
    later_keyframes = any(key and stamp <= target for key, stamp in zip(timeline.keyframe[1:], stamps[1:], strict=True))
    if later_keyframes:  # keyframes there are, but leading pictures of each refer to the group before it
        return f"none of its keyframes before frame {start + 1} starts a closed group of pictures"
    return None  # frame `start` lies in the first group of pictures: decoding from the start is the seek


def _timeline_problem(timeline: Timeline) -> str | None:
    stamps = timeline.pts
    if not stamps:
        return "its video packets could not be read"
    if any(stamp is None for stamp in stamps):
        return "some of its video packets carry no timestamp"
    if len(set(stamps)) != len(stamps):
        return "two of its video packets carry the same timestamp"
    if timeline.complete and len(stamps) != timeline.frame_count:
        return f"its header counts {timeline.frame_count} frame(s) but it holds {len(stamps)} video packet(s)"
    if not timeline.keyframe[0] or stamps[0] != min(stamp for stamp in stamps if stamp is not None):
        return "it does not start on a keyframe"
    return None


def _starting_points(stamps: Sequence[int], keyframe: Sequence[bool], codec: str) -> Iterator[int]:
    """Decode positions of the keyframes a decode may start at (see the module's docstring)."""
    later_minimum = [0] * len(stamps)
    lowest: int | None = None
    for position in range(len(stamps) - 1, -1, -1):
        later_minimum[position] = lowest if lowest is not None else stamps[position] + 1
        lowest = stamps[position] if lowest is None else min(lowest, stamps[position])
    leading_allowed = codec in _LEADING_PICTURES_SKIPPED
    earlier_maximum: int | None = None
    for position, stamp in enumerate(stamps):
        before_all_later = leading_allowed or stamp < later_minimum[position]
        after_all_earlier = earlier_maximum is None or earlier_maximum < stamp
        if keyframe[position] and before_all_later and after_all_earlier:
            yield position
        earlier_maximum = stamp if earlier_maximum is None else max(earlier_maximum, stamp)
