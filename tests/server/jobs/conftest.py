"""Image jobs run in-process through the real handler (the same lifecycle the server gives them), on a real
BlendJob JobContext and the server's real resources, with kit models already in storage as if downloaded."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from blendjob.server import JobContext

from imageforge.contract import JOB_SPECS, JobId
from imageforge.server.app import create_server
from imageforge.server.handler import make_handler
from imageforge.server.jobs import JOB_RUNNERS
from tests.kit.onnx_models import build_ben2, build_birefnet, build_lama, build_upscaler

KIT_MODELS: dict[str, tuple[str, str, Callable[[Path], Path], dict[str, Any]]] = {
    "KIT_BEN2": ("background", "ben2", lambda path: build_ben2(path, size=64), {"normalization": "none"}),
    "KIT_BEN2_THRESHOLD": (
        "background",
        "ben2",
        lambda path: build_ben2(path, size=64, function="threshold"),
        {"normalization": "none"},
    ),
    "KIT_UPSCALE": (
        "upscale",
        "upscale",
        lambda path: build_upscaler(path, receptive_radius=2),
        {"tile_margin": 2, "tile_blend": 4},  # covers the receptive radius: tiles equal a whole-image run
    ),
    "KIT_LAMA": ("inpaint", "lama", build_lama, {}),
    "KIT_BIREFNET": (  # the published signature: input_image → output_image logits, no sigmoid inside
        "background",
        "birefnet",
        lambda path: build_birefnet(path, size=64, height=48),
        {"normalization": "imagenet", "final_activation": "none"},
    ),
}
DEFAULTS = {"KIT_BEN2", "KIT_UPSCALE", "KIT_LAMA"}


@pytest.fixture
def kit_catalog(storage_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The kit models in storage where downloads land, and a catalog naming them (no hashes: ready as found)."""
    models = []
    for key, (family, adapter, build, options) in KIT_MODELS.items():
        directory = key.lower()
        build(storage_root / "models" / directory / "model.onnx")
        models.append(
            {
                "key": key,
                "family": family,
                "adapter": adapter,
                "label": key.replace("_", " ").title(),
                "license": "MIT",
                "repository": f"kit/{directory}",
                "directory": directory,
                "default": key in DEFAULTS,
                "files": [{"path": "model.onnx"}],
                **options,
            }
        )
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"models": models}), encoding="utf-8")
    monkeypatch.setenv("IMAGEFORGE_MODEL_CATALOG", str(catalog))
    return catalog


class RecordingContext(JobContext):
    """A real JobContext that keeps every progress message and can request cancellation at one of them."""

    def __init__(self, *args: Any, cancel_when: Callable[[str], bool] | None = None):
        super().__init__(*args)
        self.messages: list[str] = []
        self.fractions: list[float] = []
        self._cancel_when = cancel_when

    def progress(self, progress: float, message: str) -> None:
        super().progress(progress, message)
        self.messages.append(str(message))
        self.fractions.append(float(progress))
        if self._cancel_when is not None and self._cancel_when(str(message)):
            self._request_cancel()

    @property
    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8")


@pytest.fixture
def run_job(storage_root: Path, kit_catalog: Path) -> Iterator[Callable[..., tuple[dict, RecordingContext]]]:
    """run_job(job id, parameters, cancel_when=None) → (result with absolute paths, context)."""
    server = create_server()
    server.bind(storage_root)
    numbers = itertools.count(1)

    def run(job_id: str, parameters: dict, *, cancel_when: Callable[[str], bool] | None = None):
        directory = storage_root / "jobs" / f"job-{next(numbers)}"
        directory.mkdir(parents=True)
        context = RecordingContext(
            directory.name, job_id, parameters, server.resources, storage_root, directory, cancel_when=cancel_when
        )
        spec = JOB_SPECS[JobId(job_id)]
        result = make_handler(spec, JOB_RUNNERS[spec.id])(context, parameters)
        return {name: directory / relative for name, relative in result.items()}, context

    yield run
    server.close()


def write_video(path: Path, frames: list[np.ndarray], rate: Fraction = Fraction(12), *, raw: bool = False) -> Path:
    """An H.264 clip (yuv444p keeps colour sharp enough to assert) of uint8 RGB frames; `raw`: uncompressed RGB
    (a MOV whose byte size depends only on the frame count and size, never on the picture)."""
    height, width = frames[0].shape[:2]
    with av.open(str(path), "w") as container:
        codec, options, pix_fmt = ("rawvideo", {}, "rgb24") if raw else ("libx264", {"crf": "1"}, "yuv444p")
        stream = container.add_stream(codec, rate=rate, options=options)
        stream.width, stream.height, stream.pix_fmt = width, height, pix_fmt
        for index, pixels in enumerate(frames):
            frame = av.VideoFrame.from_ndarray(pixels, format="rgb24")
            frame.pts = index
            frame.time_base = 1 / rate
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return path


def read_video(path: Path) -> list[np.ndarray]:
    with av.open(str(path)) as container:
        return [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]
