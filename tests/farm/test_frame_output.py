"""A video written from frames as the model made them is fed exactly what one written from the same frames read
back from a chunk's PNG sequence is fed: the single run and the assembled farm run encode the same pictures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import imageforge.server.media.video_write as video_write
from imageforge.contract.jobs import SequenceOutput
from imageforge.contract.results import ResultName
from imageforge.server.job_steps.frame_output import FrameResultWriter
from imageforge.server.media import PngSequenceWriter, open_input
from imageforge.server.media.stills import probe_still, read_still
from tests.server.media.makers import video


class Context:
    def __init__(self, directory: Path):
        self.directory = str(directory)
        self.logged: list[str] = []

    def log(self, message: str, level: str = "INFO") -> None:
        self.logged.append(message)

    def progress(self, fraction: float, message: str) -> None:
        pass


@pytest.mark.parametrize(("channels", "bits"), [(4, 8), (4, 16), (3, 8), (1, 16)])
def test_the_encoder_gets_the_same_codes_from_model_frames_and_from_their_png(tmp_path, monkeypatch, channels, bits):
    """RGBA over black into H.264 (the foreground of remove-background), RGB, and 16-bit mattes."""
    source = open_input(str(video(tmp_path / "clip.mp4", frames=3, size=(64, 48))))
    rng = np.random.default_rng(channels * bits)
    shape = (48, 64) if channels == 1 else (48, 64, channels)
    frames = [rng.random(shape, dtype=np.float32) for _ in range(3)]
    slots = list(source.frame_slots())
    fed: list[np.ndarray] = []
    quantise = video_write.to_integers
    monkeypatch.setattr(
        video_write, "to_integers", lambda pixels, depth: fed.append(quantise(pixels, depth)) or fed[-1]
    )

    def writer(folder: Path) -> FrameResultWriter:
        folder.mkdir()
        return FrameResultWriter(
            Context(folder), source, result=ResultName.FOREGROUND, sequence_output=SequenceOutput.VIDEO,
            size=(64, 48), alpha=channels == 4, bits=bits, trimmed=False,
        )  # fmt: skip

    with writer(tmp_path / "single") as single:
        for slot, pixels in zip(slots, frames, strict=True):
            single.write(slot, pixels)
    from_model, fed[:] = list(fed), []
    with PngSequenceWriter(tmp_path / "chunks", bits=bits) as sequence:
        for slot, pixels in zip(slots, frames, strict=True):
            sequence.write(slot.number, pixels)
    with writer(tmp_path / "assembled") as assembled:
        for slot in slots:
            assembled.write(slot, read_still(probe_still(tmp_path / "chunks" / f"frame_{slot.number:04d}.png")).pixels)
    fed_back = [codes for codes in fed if codes.ndim == 3]  # the PNG writer's own codes are not the encoder's
    from_model = [codes for codes in from_model if codes.ndim == 3]
    assert len(from_model) == len(fed_back) == 3
    for one, other in zip(from_model, fed_back, strict=True):
        np.testing.assert_array_equal(one, other)
    assert (tmp_path / "single" / single.files[ResultName.FOREGROUND]).read_bytes() == (
        tmp_path / "assembled" / assembled.files[ResultName.FOREGROUND]
    ).read_bytes()
    assert len({slot.pts for slot in slots}) == 3 and [slot.number for slot in slots] == [1, 2, 3]
