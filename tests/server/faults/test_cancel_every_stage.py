"""Cancel every job type at every progress point: it ends `cancelled` within one stage and keeps nothing; and
uncancelled, its bar (computed from its declared stages) never goes back.

Each job runs through the server's real handler with a real BlendJob JobContext, real model sessions (kit
models already downloaded) and real files. A first run counts the job's progress reports; then, for each
report k, a fresh run requests cancellation the moment report k is published, exactly as BlendJob's
DELETE /jobs/{id} does from the HTTP thread.
"""

from __future__ import annotations

import json
import uuid
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from blendjob.server import JobCancelled, JobContext
from PIL import Image

from imageforge.contract import JOB_SPECS, JobId
from imageforge.contract.catalog import load_catalog
from imageforge.contract.parameters import field_docs, path_parameters
from imageforge.server.downloads.install import ensure_models
from imageforge.server.downloads.sources import DownloadSources
from imageforge.server.handler import make_handler
from imageforge.server.inference import ModelManager
from imageforge.server.job_steps.segment_embeddings import SegmentEmbeddings
from imageforge.server.jobs import JOB_RUNNERS
from tests.kit.catalog import publish_kit_catalog

KEPT = {"job.log", "job-state.json"}
MAX_REPORTS_AFTER_CANCEL = 1  # the report that was in flight when cancel arrived, at most


class CancellingContext(JobContext):
    """A real JobContext that requests its own cancellation when progress report number `cancel_at` arrives."""

    def __init__(self, *args, cancel_at: int | None, **kwargs):
        super().__init__(*args, **kwargs)
        self.cancel_at = cancel_at
        self.reports: list[str] = []
        self.fractions: list[float] = []
        self.reports_after_cancel = 0

    def progress(self, progress, message):
        super().progress(progress, message)
        self.reports.append(str(message))
        self.fractions.append(float(progress))
        if self._is_cancelled():
            self.reports_after_cancel += 1
        elif self.cancel_at is not None and len(self.reports) == self.cancel_at:
            self._request_cancel()


@pytest.fixture(scope="module")
def environment(tmp_path_factory, hub_module):
    root = tmp_path_factory.mktemp("cancel")
    with pytest.MonkeyPatch.context() as patch:
        catalog = publish_kit_catalog(hub_module, root / "catalog")
        patch.setenv("IMAGEFORGE_MODEL_CATALOG", str(catalog.path))
        patch.setenv("HF_ENDPOINT", hub_module.url)
        storage = root / "storage"
        sources = DownloadSources()
        ensure_models(
            storage, list(load_catalog().models), sources=sources, report=lambda *_: None, cancelled=lambda: False
        )
        manager = ModelManager(storage)
        yield {
            "storage": storage,
            "resources": {"models": manager, "downloads": sources, "segment_embeddings": SegmentEmbeddings()},
            "inputs": inputs(root),
            "variables": {"IMAGEFORGE_MODEL_CATALOG": str(catalog.path), "HF_ENDPOINT": hub_module.url},
        }
        manager.close()


@pytest.fixture(scope="module")
def hub_module():
    from tests.kit.hub import LoopbackHub

    with LoopbackHub() as running:
        yield running


def inputs(root: Path) -> dict[str, str]:
    folder = root / "inputs"
    folder.mkdir()
    image = folder / "still.png"
    pixels = np.random.default_rng(3).integers(0, 255, (40, 56, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(image)
    frames = folder / "frames"
    frames.mkdir()
    for number in range(1, 4):
        Image.fromarray(np.roll(pixels, number * 3, axis=1)).save(frames / f"frame_{number:04d}.png")
    large = folder / "large.png"
    Image.fromarray(np.random.default_rng(4).integers(0, 255, (80, 100, 3), dtype=np.uint8)).save(large)
    return {"image": str(image), "frames": str(frames), "large": str(large)}


# Jobs run with more than their required parameters, to reach more stages (frames, tiles, optional outputs), or
# whose required parameters are no image: every other job runs on the still image (and a box, where it needs a
# selection), so a new job is in this test without an entry here.
RICHER = {
    JobId.DOWNLOAD_MODEL: lambda files: {"model": "KIT_BEN2"},
    JobId.REMOVE_BACKGROUND: lambda files: {"input": files["frames"], "sequence_output": "png_sequence"},
    JobId.UPSCALE_IMAGE: lambda files: {"input": files["large"], "tile_size": 64},  # 6 tiles
    JobId.GENERATE_CUTOUT_ARTIFACTS: lambda files: {
        "input": files["image"],
        "selection": BOX,
        "generate_depth": True,
        "normal_mode": "tangent",
    },
    JobId.GENERATE_MULTIVIEW_CAMERAS: lambda files: {"input": files["frames"]},
    JobId.INPAINT_IMAGE: lambda files: {"input": files["image"], "selection": BOX},
    JobId.SEGMENT_IMAGE: lambda files: {"input": files["image"], "points": [[20, 20, 1]]},
    JobId.DEBUG_DA3: lambda files: {"input": files["frames"]},
    # the input folder's own frame_0001.png… stand for the frames farm chunks left
    JobId.ASSEMBLE_FRAMES: lambda files: {"input": files["frames"], "frames": files["frames"]},
}
BOX = {"box": [5, 5, 40, 30]}


def parameters(job_id: JobId, files: dict[str, str]) -> dict:
    if job_id in RICHER:
        return RICHER[job_id](files)
    spec, raw = JOB_SPECS[job_id], {}
    paths = path_parameters(spec.parameters)
    for field in field_docs(spec.parameters):
        if not field["required"]:
            continue
        if field["name"] in paths:
            raw[field["name"]] = files["image"]
        elif field["type"] == "Selection":
            raw[field["name"]] = BOX
        else:
            pytest.fail(f"{job_id}: say in RICHER how to run it (required parameter {field['name']})")
    return raw


def run(environment, job_id: JobId, *, cancel_at: int | None):
    storage = environment["storage"]
    directory = storage / "jobs" / uuid.uuid4().hex
    directory.mkdir(parents=True)
    raw = parameters(job_id, environment["inputs"])
    context = CancellingContext(
        directory.name, job_id.value, raw, environment["resources"], storage, directory, cancel_at=cancel_at
    )
    handler = make_handler(JOB_SPECS[job_id], JOB_RUNNERS[job_id])
    try:
        result = handler(context, raw)
    except JobCancelled:
        return context, directory, None
    return context, directory, result


# convert-model runs minutes of real torch per run; its cancel (the exporter's process group ended, nothing kept)
# is tested end to end in tests/cli/test_convert_model.py.
@pytest.mark.parametrize("job_id", sorted(set(JOB_RUNNERS) - {JobId.CONVERT_MODEL}, key=str), ids=str)
def test_cancel_at_every_progress_report(environment, job_id, monkeypatch):
    for name, value in environment["variables"].items():  # the autouse isolation fixture cleared them
        monkeypatch.setenv(name, value)
    context, directory, result = run(environment, job_id, cancel_at=None)
    assert result, f"{job_id} did not succeed uncancelled: {context.reports}"
    total = len(context.reports)
    assert total >= 2, f"{job_id} reports too little progress to cancel between stages"
    steps = list(zip(context.fractions, context.reports, strict=True))
    assert all(0 <= a <= b <= 1 for a, b in pairwise(context.fractions)), f"{job_id}: the bar went back: {steps}"
    for cancel_at in range(1, total + 1):
        context, directory, result = run(environment, job_id, cancel_at=cancel_at)
        where = f"{job_id} cancelled at report {cancel_at} ({context.reports[cancel_at - 1]!r})"
        assert result is None, f"{where}: it finished anyway"
        assert context.reports_after_cancel <= MAX_REPORTS_AFTER_CANCEL, f"{where}: went on {context.reports}"
        assert {entry.name for entry in directory.iterdir()} <= KEPT, f"{where}: left outputs"
        assert json.loads((directory / "job-state.json").read_text())["state"] == "cancelled", where
