"""An image job whose model is missing downloads it inside the job: the download fills only the model-preparation
share of the bar (the job's PREPARING stage, before it reads its input), keeps its bytes message, and the job's
progress never goes backwards."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
from blendjob.server import JobContext
from PIL import Image

from imageforge.contract import JOB_SPECS, JobId
from imageforge.contract.results import ResultName
from imageforge.server.app import create_server
from imageforge.server.blendjob_compat import job_status
from imageforge.server.handler import make_handler
from imageforge.server.job_steps.progress import PREPARING, READING
from imageforge.server.jobs import JOB_RUNNERS
from imageforge.server.jobs.upscale_image import STAGES
from tests.kit.catalog import publish_kit_catalog


class PublishedProgress(JobContext):
    """A real JobContext that records every (fraction, message) it publishes, as /jobs/{id} serves them."""

    def __init__(self, *args: Any):
        super().__init__(*args)
        self.published: list[tuple[float, str]] = []

    def progress(self, progress: float, message: str) -> None:
        super().progress(progress, message)
        status = job_status(self)
        self.published.append((status["progress"], status["message"]))


def test_a_model_downloaded_inside_an_image_job_stays_in_the_preparation_share(
    hub, storage_root: Path, tmp_path: Path, monkeypatch
):
    catalog = publish_kit_catalog(hub, tmp_path / "catalog", keys=("KIT_UPSCALE",))
    monkeypatch.setenv("IMAGEFORGE_MODEL_CATALOG", str(catalog.path))
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    image = tmp_path / "still.png"
    Image.fromarray(np.random.default_rng(2).integers(0, 255, (12, 16, 3), dtype=np.uint8)).save(image)
    model = storage_root / "models" / "kit_upscale" / "model.onnx"
    assert not model.exists()

    server = create_server()
    server.bind(storage_root)
    try:
        directory = storage_root / "jobs" / "job-1"
        directory.mkdir(parents=True)
        parameters = {"input": str(image)}
        context = PublishedProgress("job-1", "upscale-image", parameters, server.resources, storage_root, directory)
        spec = JOB_SPECS[JobId.UPSCALE_IMAGE]
        result = make_handler(spec, JOB_RUNNERS[spec.id])(context, parameters)
    finally:
        server.close()

    assert (directory / result[ResultName.UPSCALE]).is_file()
    assert model.read_bytes() == catalog.files["KIT_UPSCALE"]  # it really was downloaded by this job
    messages = [message for _, message in context.published]
    fractions = [fraction for fraction, _ in context.published]
    assert any(message.startswith("Downloading Kit Upscale") for message in messages), messages
    running = next(index for index, message in enumerate(messages) if message.startswith("Upscaling tile"))
    assert running > messages.index("Models are ready")
    reading = messages.index(READING.message)
    downloading = [index for index, message in enumerate(messages) if message.startswith("Downloading")]
    assert max(fractions[index] for index in downloading) < STAGES.span(PREPARING)[1] == fractions[reading]
    assert max(fractions[:running]) <= STAGES.span(READING)[1], context.published
    assert all(later >= earlier for earlier, later in pairwise(fractions)), repr(context.published)
