"""Videos stream frame by frame and come back out in the same codec family, rate, duration and audio."""

from __future__ import annotations

import os
from fractions import Fraction

import av
import numpy as np
import pytest

from imageforge.contract import InputError
from imageforge.server.media import MediaKind, SampleKind, VideoWriter, open_input, plan_video_output

from . import makers


def _streams(path):
    with av.open(str(path)) as container:
        video = container.streams.video[0]
        audio = [
            (stream.codec_context.name, float(stream.duration * stream.time_base) if stream.duration else None)
            for stream in container.streams.audio
        ]
        times = [float(frame.pts * frame.time_base) for frame in container.decode(video)]
        return video.codec_context.name, audio, times


def _rewrite(source, out, *, alpha=False, transform=lambda image: image.pixels):
    plan = plan_video_output(source.video, size=(source.width, source.height), alpha=alpha)
    with VideoWriter(out.with_suffix(plan.suffix), plan, audio_from=source.path) as writer:
        for frame in source.frames():
            writer.write(transform(frame.image), frame.pts)
    return plan, out.with_suffix(plan.suffix)


def test_h264_mp4_with_audio_round_trip(tmp_path):
    path = makers.video(tmp_path / "clip one ü.mp4", frames=8, rate=Fraction(25), audio="aac")
    source = open_input(str(path))
    assert source.kind is MediaKind.VIDEO and source.format == "h264"
    assert (source.frame_count, source.frame_rate, source.has_audio) == (8, Fraction(25), True)
    assert source.duration == pytest.approx(8 / 25, abs=1 / 25)
    assert source.sample_kind is SampleKind.UINT8 and not source.has_alpha

    frames = list(source.frames())
    assert [frame.index for frame in frames] == list(range(8)) and frames[-1].number == 8
    for frame in frames:
        np.testing.assert_allclose(frame.image.pixels[24, 32] * 255, makers.frame_colour(frame.index), atol=4)

    plan, out = _rewrite(source, tmp_path / "inverted", transform=lambda image: 1.0 - image.pixels)
    assert (plan.encoder, plan.container_format, plan.keeps_alpha) == ("libx264", "mp4", False)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["clip one ü.mp4", "inverted.mp4"]

    result = open_input(str(out))
    assert (result.format, result.frame_count, result.frame_rate) == ("h264", 8, Fraction(25))
    assert result.duration == pytest.approx(source.duration, abs=1 / 25)
    codec, audio, times = _streams(out)
    _, source_audio, source_times = _streams(path)
    assert times == pytest.approx(source_times, abs=1e-3)
    assert [name for name, _ in audio] == ["aac"]
    assert audio[0][1] == pytest.approx(source_audio[0][1], abs=1 / 25)
    for frame in result.frames():
        expected = 255 - np.array(makers.frame_colour(frame.index))
        np.testing.assert_allclose(frame.image.pixels[24, 32] * 255, expected, atol=6)


def test_webm_vp9_keeps_alpha_and_counts_frames_without_a_header_count(tmp_path):
    path = makers.video(tmp_path / "key.webm", codec="libvpx-vp9", pix_fmt="yuva420p", alpha=True, audio="libopus")
    source = open_input(str(path))
    assert (source.frame_count, source.has_alpha, source.has_audio) == (6, True, True)
    first = next(source.frames()).image
    assert first.alpha[24, 8] == pytest.approx(1.0, abs=0.02) and first.alpha[24, 56] == pytest.approx(0.25, abs=0.03)

    plan, out = _rewrite(source, tmp_path / "out", alpha=True)
    assert (plan.encoder, plan.pix_fmt, plan.keeps_alpha, plan.suffix) == ("libvpx-vp9", "yuva420p", True, ".webm")
    result = open_input(str(out))
    assert (result.frame_count, result.has_alpha, result.has_audio) == (6, True, True)
    alpha = next(result.frames()).image.alpha
    assert alpha[24, 56] == pytest.approx(0.25, abs=0.04)


def test_prores_4444_keeps_alpha_and_10_bit_precision(tmp_path):
    path = makers.video(tmp_path / "matte.mov", codec="prores_ks", pix_fmt="yuva444p10le", alpha=True, frames=3)
    source = open_input(str(path))
    assert source.sample_kind is SampleKind.UINT16 and source.has_alpha
    plan, out = _rewrite(source, tmp_path / "out", alpha=True)
    assert (plan.encoder, plan.keeps_alpha, plan.deep, plan.container_format) == ("prores_ks", True, True, "mov")
    result = open_input(str(out))
    assert result.format == "prores" and result.frame_count == 3 and result.has_alpha
    image = next(result.frames()).image
    assert image.alpha[24, 56] == pytest.approx(64 / 255, abs=0.01)
    np.testing.assert_allclose(image.rgb[24, 8] * 255, makers.frame_colour(0), atol=2)


def test_alpha_into_h264_is_composited_over_black_and_says_so(tmp_path):
    source = open_input(str(makers.video(tmp_path / "plain.mp4", frames=2)))

    def half_transparent(image):
        return np.concatenate([image.pixels, np.full_like(image.pixels[..., :1], 0.5)], axis=2)

    plan, out = _rewrite(source, tmp_path / "out", alpha=True, transform=half_transparent)
    assert plan.keeps_alpha is False and plan.encoder == "libx264"
    frame = next(open_input(str(out)).frames())
    np.testing.assert_allclose(frame.image.pixels[24, 32] * 255, np.array(makers.frame_colour(0)) * 0.5, atol=5)


def test_irregular_timestamps_survive(tmp_path):
    path = tmp_path / "vfr.mkv"
    with av.open(str(path), "w") as container:
        stream = container.add_stream("ffv1", rate=24)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        for index, pts in enumerate((0, 1, 2, 5, 9)):
            frame = av.VideoFrame.from_ndarray(np.full((48, 64, 3), index * 40, np.uint8), format="rgb24")
            frame.pts, frame.time_base = pts, Fraction(1, 24)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    source = open_input(str(path))
    assert source.frame_count == 5
    _, out = _rewrite(source, tmp_path / "out")
    assert _streams(out)[2] == pytest.approx([0, 1 / 24, 2 / 24, 5 / 24, 9 / 24], abs=1e-3)


def test_sequence_to_video_plans(tmp_path):
    plan = plan_video_output(None, size=(64, 48), alpha=False, frame_rate=Fraction(30))
    assert (plan.encoder, plan.suffix, plan.frame_rate) == ("libx264", ".mp4", Fraction(30))
    with VideoWriter(tmp_path / "seq.mp4", plan) as writer:
        for index in range(4):
            writer.write(np.full((48, 64, 3), index / 4, np.float32))
    result = open_input(str(tmp_path / "seq.mp4"))
    assert (result.frame_count, result.frame_rate) == (4, Fraction(30))
    assert result.duration == pytest.approx(4 / 30, abs=1 / 30)

    alpha_plan = plan_video_output(None, size=(64, 48), alpha=True)
    assert (alpha_plan.encoder, alpha_plan.suffix, alpha_plan.keeps_alpha) == ("prores_ks", ".mov", True)


def test_odd_sizes_fall_back_to_full_chroma(tmp_path):
    source = open_input(str(makers.video(tmp_path / "even.mp4", frames=1)))
    plan = plan_video_output(source.video, size=(63, 47), alpha=False)
    assert plan.pix_fmt == "yuv444p"
    with VideoWriter(tmp_path / "odd.mp4", plan) as writer:
        writer.write(np.full((47, 63, 3), 0.5, np.float32))
    assert (open_input(str(tmp_path / "odd.mp4")).width, open_input(str(tmp_path / "odd.mp4")).height) == (63, 47)


def test_failed_video_write_leaves_nothing(tmp_path):
    source = open_input(str(makers.video(tmp_path / "in.mp4", frames=3, audio="aac")))
    plan = plan_video_output(source.video, size=(64, 48), alpha=False)
    with pytest.raises(RuntimeError), VideoWriter(tmp_path / "out.mp4", plan, audio_from=source.path) as writer:
        for frame in source.frames():
            writer.write(frame.image.pixels, frame.pts)
            raise RuntimeError("cancelled")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.mp4"]


def _open_files() -> set[str]:
    names = set()
    for descriptor in os.listdir("/proc/self/fd"):
        try:
            names.add(os.readlink(f"/proc/self/fd/{descriptor}"))
        except OSError:
            continue  # closed meanwhile (the listing's own descriptor)
    return names


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="lists open files through /proc")
def test_audio_the_output_container_cannot_hold_fails_without_leaking_the_source(tmp_path):
    # A ".webm" that is really Matroska with FLAC audio (WebM cannot hold FLAC): the result is WebM, so adding
    # the audio stream fails at once, and the source opened to copy it from must be closed again at once.
    path = makers.video(tmp_path / "clip.webm", codec="libvpx-vp9", fmt="matroska", frames=4, audio="flac")
    source = open_input(str(path))
    assert source.has_audio
    plan = plan_video_output(source.video, size=(source.width, source.height), alpha=False)
    assert plan.container_format == "webm"
    out = tmp_path / f"out{plan.suffix}"

    with pytest.raises(InputError) as failure, VideoWriter(out, plan, audio_from=source.path):
        pass

    assert str(failure.value) == (
        "The audio of 'clip.webm' (flac) cannot be copied into a webm file; "
        "choose the PNG sequence output or convert the video's audio first."
    )
    assert failure.value.__traceback__ is not None  # the failed frames (and what they opened) are still alive
    assert str(path.resolve()) not in _open_files()
    assert list(tmp_path.iterdir()) == [path]  # no partial output either
