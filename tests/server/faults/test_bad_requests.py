"""A corpus of bad requests against one real server: each fails with one sentence, leaves no result file,
and the very next valid job on the same server succeeds."""

from __future__ import annotations

import json
import math
import os
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from imageforge.client.job_runner import JobFailedError, make_runtime, run_job
from imageforge.contract.results import ResultName
from tests.kit.catalog import publish_kit_catalog
from tests.kit.hub import LoopbackHub
from tests.kit.server_env import install_server_environment

pytestmark = pytest.mark.slow

KEPT = {"job.log", "job-state.json"}


def png_bytes(width: int, height: int) -> bytes:
    pixels = np.random.default_rng(0).integers(0, 255, (height, width, 3), dtype=np.uint8)
    from io import BytesIO

    buffer = BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def bomb_png(width: int, height: int) -> bytes:
    """A valid PNG header declaring a huge image, with almost no data (a decompression bomb's shape)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")
    )


def audio_only_mp4(path: Path) -> Path:
    import av

    with av.open(str(path), "w") as container:
        stream = container.add_stream("aac", rate=8000)
        frame = av.AudioFrame.from_ndarray(np.zeros((1, 1024), dtype=np.float32), format="fltp", layout="mono")
        frame.rate = 8000
        for packet in stream.encode(frame):
            container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("inputs ü spaces")
    good = folder / "bild mit ümlaut.png"
    good.write_bytes(png_bytes(40, 30))
    paths = {"good": good}
    (paths.setdefault("empty", folder / "empty.png")).write_bytes(b"")
    (paths.setdefault("corrupt", folder / "corrupt.png")).write_bytes(os.urandom(2000))
    (paths.setdefault("truncated", folder / "truncated.png")).write_bytes(png_bytes(200, 150)[:400])
    (paths.setdefault("bomb", folder / "bomb.png")).write_bytes(bomb_png(100_000, 100_000))
    (paths.setdefault("text", folder / "notes.txt")).write_text("not an image")
    (paths.setdefault("empty_folder", folder / "no frames")).mkdir()
    frames = [Image.new("RGB", (8, 8), (i * 60, 0, 0)) for i in range(3)]
    paths["animated"] = folder / "anim.gif"
    frames[0].save(paths["animated"], save_all=True, append_images=frames[1:], duration=50, loop=0)
    paths["audio_only"] = audio_only_mp4(folder / "voice.mp4")
    paths["fifo"] = folder / "pipe.png"
    os.mkfifo(paths["fifo"])
    paths["missing"] = folder / "nicht da ✓.png"
    return paths


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    root = tmp_path_factory.mktemp("server")
    storage = install_server_environment(root / "storage")
    with LoopbackHub() as hub:
        catalog = publish_kit_catalog(hub, root / "catalog")
        server = make_runtime(storage)
        # The server process starts on the first job and inherits these; the tests set them (the autouse
        # isolation fixture clears the environment per test).
        server.test_variables = {"IMAGEFORGE_MODEL_CATALOG": str(catalog.path), "HF_ENDPOINT": hub.url}
        try:
            yield server
        finally:
            server.server.stop()


def cases(files: dict[str, Path]) -> list[tuple[str, str, dict, str]]:
    """(case id, job, parameters, a fragment the one-sentence error must contain)."""
    good = str(files["good"])
    box = {"box": [1, 1, 10, 10]}
    return [
        ("missing input", "remove-background", {}, "Missing required parameter 'input'"),
        ("input is a number", "remove-background", {"input": 5}, "'input' must be text"),
        ("input is a list", "remove-background", {"input": [good]}, "'input' must be text"),
        ("input is null", "remove-background", {"input": None}, "'input' must not be null"),
        ("unknown output kind", "remove-background", {"input": good, "output_kind": "mask"}, "'output_kind'"),
        ("mps device", "remove-background", {"input": good, "device": "mps"}, "'device' must be one of"),
        ("unknown device", "upscale-image", {"input": good, "device": "tpu"}, "'device' must be one of"),
        ("size zero", "remove-background", {"input": good, "max_input_size": 0}, "'max_input_size'"),
        ("size negative", "upscale-image", {"input": good, "max_input_size": -5}, "'max_input_size'"),
        ("size absurd", "upscale-image", {"input": good, "max_input_size": 10**15}, "'max_input_size'"),
        ("size NaN", "upscale-image", {"input": good, "max_input_size": math.nan}, "'max_input_size'"),
        ("size text", "upscale-image", {"input": good, "max_input_size": "big"}, "'max_input_size'"),
        ("size bool", "upscale-image", {"input": good, "max_input_size": True}, "'max_input_size'"),
        ("unknown parameter", "upscale-image", {"input": good, "colour": "red"}, "Unknown parameter 'colour'"),
        ("scale 3", "upscale-image", {"input": good, "scale": 3}, "'scale' must be one of 2, 4"),
        ("scale 8", "upscale-image", {"input": good, "scale": 8}, "'scale' must be one of 2, 4"),
        ("negative tile", "upscale-image", {"input": good, "tile_size": -1}, "'tile_size'"),
        ("no selection", "refine-image-selection", {"input": good}, "Missing required parameter 'selection'"),
        ("empty box", "refine-image-selection", {"input": good, "selection": {"box": [5, 5, 5, 9]}}, "empty"),
        ("NaN box", "refine-image-selection", {"input": good, "selection": {"box": [0, 0, math.nan, 5]}}, "finite"),
        (
            "collinear lasso",
            "refine-image-selection",
            {"input": good, "selection": {"lasso": [[0, 0], [5, 5], [9, 9]]}},
            "enclosing an area",
        ),
        (
            "selection outside the image",
            "refine-image-selection",
            {"input": good, "selection": {"box": [500, 500, 900, 900]}},
            "outside",
        ),
        ("unknown model", "remove-background", {"input": good, "model": "NOPE"}, "Unknown model 'NOPE'"),
        ("wrong family", "remove-background", {"input": good, "model": "KIT_MOGE2"}, "geometry model"),
        ("unknown download", "download-model", {"model": "NOPE"}, "Unknown model 'NOPE'"),
        ("models not a list", "download-required-models", {"models": "KIT_BEN2"}, "'models' must be a list"),
        ("models of numbers", "download-required-models", {"models": [1, 2]}, "'models' must be a list"),
        ("level 10", "generate-depth-plane-geometry", {"input": good, "resolution_level": 10}, "'resolution_level'"),
        ("normal mode", "generate-cutout-artifacts", {"input": good, "normal_mode": "weird"}, "'normal_mode'"),
        ("frame step 0", "generate-multiview-cameras", {"input": good, "frame_step": 0}, "'frame_step'"),
        (
            "budget NaN",
            "generate-multiview-cameras",
            {"input": good, "memory_budget_gib": math.nan},
            "'memory_budget_gib'",
        ),
        ("NUL in path", "remove-background", {"input": good + "\x00.png"}, "NUL"),
        ("path too long", "remove-background", {"input": "x" * 5000}, "too long"),
        ("missing file", "remove-background", {"input": str(files["missing"])}, "Cannot find"),
        ("folder for a still", "generate-depth-plane-geometry", {"input": str(files["empty_folder"])}, "folder"),
        ("zero-byte file", "remove-background", {"input": str(files["empty"])}, "empty (0 bytes)"),
        ("corrupt image", "upscale-image", {"input": str(files["corrupt"])}, "damaged"),
        ("truncated image", "remove-background", {"input": str(files["truncated"])}, "damaged"),
        ("decompression bomb", "upscale-image", {"input": str(files["bomb"])}, "megapixel limit"),
        ("unsupported type", "remove-background", {"input": str(files["text"])}, "not a supported file type"),
        ("animated still", "generate-depth-plane-geometry", {"input": str(files["animated"])}, "animated"),
        ("video without frames", "remove-background", {"input": str(files["audio_only"])}, "no video track"),
        ("not a regular file", "remove-background", {"input": str(files["fifo"])}, "not a regular file"),
        ("empty frame folder", "remove-background", {"input": str(files["empty_folder"])}, "no numbered images"),
        ("bad selection type", "generate-cutout-artifacts", {"input": good, "selection": box | {"x": 1}}, "box"),
    ]


def test_corpus_has_at_least_forty_cases(files):
    assert len(cases(files)) >= 40


def test_every_bad_request_fails_cleanly_and_the_next_job_succeeds(runtime, files, monkeypatch):
    for name, value in runtime.test_variables.items():
        monkeypatch.setenv(name, value)
    report = []
    for name, job, parameters, fragment in cases(files):
        jobs = runtime.storage_root() / "jobs"
        submitted_before = set(jobs.glob("*"))
        with pytest.raises(JobFailedError) as failure:
            run_job(runtime, job, json.loads(json.dumps(parameters)))
        message = str(failure.value)
        folder = next(iter(set(jobs.glob("*")) - submitted_before))
        leftovers = {entry.name for entry in folder.iterdir()} - KEPT
        problems = []
        if fragment not in message:
            problems.append(f"message lacks {fragment!r}")
        if "\n" in message or "Traceback" in message or len(message) > 300 or not message.endswith("."):
            problems.append("not one sentence")
        if leftovers:
            problems.append(f"left {sorted(leftovers)}")
        if json.loads((folder / "job-state.json").read_text())["state"] != "failed":
            problems.append("folder not marked failed")
        result = run_job(runtime, "remove-background", {"input": str(files["good"])})
        if not result.file(ResultName.FOREGROUND).is_file():
            problems.append("next valid job produced no foreground")
        if problems:
            report.append(f"{name}: {'; '.join(problems)} — {message!r}")
    assert report == []
