"""The `--into` folder's rules without a server: whole-PNG check, who may write, what a frame name holds."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from imageforge.cli.frames_into import FramesFolder, check_frame_job, identity, is_frame_job, parse_frame_numbers
from imageforge.contract import InputError, job_spec
from imageforge.contract.media_info import MediaInfo, frame_file_name
from imageforge.contract.png_integrity import png_is_complete


def png_bytes(mode: str = "RGBA", size: tuple[int, int] = (9, 5), seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    channels = {"RGBA": 4, "RGB": 3, "L": 1}[mode]
    values = rng.integers(0, 256, (size[1], size[0], channels), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(values[..., 0] if channels == 1 else values, mode).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.mark.parametrize("mode", ["RGBA", "RGB", "L"])
def test_every_truncation_and_every_flipped_byte_is_caught(tmp_path, mode):
    data = png_bytes(mode)
    path = tmp_path / "frame.png"
    path.write_bytes(data)
    assert png_is_complete(path)
    for length in range(len(data)):
        path.write_bytes(data[:length])
        assert not png_is_complete(path), length
    for offset in range(len(data)):
        damaged = bytearray(data)
        damaged[offset] ^= 0x40
        path.write_bytes(bytes(damaged))
        assert not png_is_complete(path), offset
    path.write_bytes(data + b"\0")
    assert not png_is_complete(path)
    assert not png_is_complete(tmp_path / "missing.png")


def test_sixteen_bit_frames_the_jobs_write_are_complete(tmp_path):
    path = tmp_path / "matte.png"
    Image.fromarray(np.arange(60, dtype=np.uint16).reshape(6, 10) * 1000).save(path)
    assert png_is_complete(path)


def test_frame_ranges():
    assert parse_frame_numbers("137-150") == (137, 150)
    assert parse_frame_numbers(" 7 ") == (7, 7)
    for bad in ("a-b", "5-3", "1,3", "-4", ""):
        with pytest.raises(InputError):
            parse_frame_numbers(bad)


def test_only_the_frame_jobs_run_in_chunks():
    assert is_frame_job(job_spec("upscale-image")) and is_frame_job(job_spec("remove-background"))
    assert not is_frame_job(job_spec("generate-depth-plane-geometry"))
    with pytest.raises(InputError, match="steady_edges"):
        check_frame_job(job_spec("remove-background"), {"steady_edges": True}, "--into")


def what(**parameters):
    spec = job_spec("upscale-image")
    return identity(spec, {"input": "/shots/clip.mp4", **parameters})


def test_a_folder_holds_the_frames_of_one_job_and_settings(tmp_path):
    into = tmp_path / "frames"
    FramesFolder.opened(str(into), inputs=["/shots/clip.mp4"], what=what(scale=2))
    recorded = json.loads((into / ".imageforge-frames.json").read_text())
    assert recorded["parameters"]["scale"] == 2 and recorded["input"] == "clip.mp4"
    # the same job from another machine (another mount point, device, range) may write too
    FramesFolder.opened(str(into), inputs=["/mnt/farm/clip.mp4"], what=what(scale=2, device="cpu", first_frame=3))
    with pytest.raises(InputError, match="scale"):
        FramesFolder.opened(str(into), inputs=["/shots/clip.mp4"], what=what(scale=4))
    with pytest.raises(InputError, match="input"):
        FramesFolder.opened(str(into), inputs=["/shots/other.mp4"], what=identity(job_spec("upscale-image"), {
            "input": "/shots/other.mp4", "scale": 2}))  # fmt: skip
    (into / ".imageforge-frames.json").write_text("{not json")
    with pytest.raises(InputError, match="cannot be read"):
        FramesFolder.opened(str(into), inputs=["/shots/clip.mp4"], what=what(scale=2))


def test_frames_are_placed_whole_by_many_writers_at_once_and_kept(tmp_path):
    folder = FramesFolder.opened(str(tmp_path / "frames"), inputs=[], what=what())
    sources = []
    for seed in range(8):
        source = tmp_path / f"made-{seed}.png"
        source.write_bytes(png_bytes(seed=seed))
        sources.append(source)
    outcomes: list[bool] = []

    def writer(source: Path) -> None:
        outcomes.append(folder.place(source, 42))

    threads = [threading.Thread(target=writer, args=(source,)) for source in sources]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    target = folder.path / frame_file_name(42)
    assert outcomes.count(True) == 1  # one writer's frame, whole; the others saw it there
    assert png_is_complete(target) and target.read_bytes() in [source.read_bytes() for source in sources]
    assert sorted(path.name for path in folder.path.iterdir()) == [".imageforge-frames.json", "frame_0042.png"]

    kept = target.stat()
    assert folder.place(sources[0], 42) is False
    assert (target.stat().st_ino, target.stat().st_mtime_ns) == (kept.st_ino, kept.st_mtime_ns)
    target.write_bytes(target.read_bytes()[:-5])  # damaged by someone else: replaced whole
    assert folder.place(sources[3], 42) is True and target.read_bytes() == sources[3].read_bytes()
    assert frame_file_name(12345) == "frame_12345.png"


def test_media_info_round_trips_and_refuses_what_it_cannot_read():
    info = MediaInfo("sequence", 32, 24, (1001, 1002, 1004), None, False, "1/1")
    assert MediaInfo.from_json(json.loads(json.dumps(info.to_json()))) == info
    assert list(info.positions(1)) == [1, 2] and info.frame_count == 3
    with pytest.raises(InputError, match="cannot start"):
        info.positions(3)
    for field, value in (("kind", "audio"), ("numbers", []), ("frame_rate", "fast"), ("version", 2)):
        with pytest.raises(InputError):
            MediaInfo.from_json({**info.to_json(), field: value})
