"""Running the geometry jobs in tests: kit models behind a test catalog, in process or in the real server.

Fixtures `jobs`, `use_catalog` and `real_server`: a test module imports `jobs_fixture` and so on.

In process, a job runs through the server's own handler (parameter parsing, job-state file, clean-up of
outputs on failure or cancellation) with a real BlendJob JobContext and the server's real "models" resource,
so a test can cancel it at an exact stage. Through the real server, the job runs in a subprocess started by
the client runtime and downloads its kit model from the loopback hub, as a user's first run would.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from blendjob.server import JobCancelled, JobContext
from PIL import Image as PILImage

from imageforge.client import retirement
from imageforge.client.job_runner import make_runtime
from imageforge.contract import JOB_SPECS, ImageForgeError, JobId
from imageforge.contract.catalog import CATALOG_ENVIRONMENT_VARIABLE
from imageforge.server.app import create_server
from imageforge.server.handler import make_handler
from imageforge.server.jobs import JOB_RUNNERS

MODEL_FILE = "model.onnx"


def catalog_entry(key: str, family: str, adapter: str, **options: Any) -> dict[str, Any]:
    return {
        "key": key,
        "family": family,
        "adapter": adapter,
        "label": key.replace("_", " ").title(),
        "license": "MIT",
        "repository": f"kit/{key.lower()}",
        "directory": key.lower(),
        "default": True,
        "files": [{"path": MODEL_FILE}],
        **options,
    }


def write_catalog(path: Path, entries: list[dict[str, Any]], models: dict[str, bytes] | None = None) -> Path:
    """A catalog file; entries whose key is in `models` declare that content's size and SHA-256."""
    for entry in entries:
        content = (models or {}).get(entry["key"])
        if content is not None:
            entry["files"] = [{"path": MODEL_FILE, "size": len(content), "sha256": hashlib.sha256(content).hexdigest()}]
    path.write_text(json.dumps({"models": entries}), encoding="utf-8")
    return path


def model_path(storage_root: Path, key: str) -> Path:
    """Where the store keeps a catalog entry's model file (models/<directory>/<path>)."""
    return storage_root / "models" / key.lower() / MODEL_FILE


def write_rgba(path: Path, pixels: np.ndarray) -> Path:
    """An 8-bit PNG of (H, W, 3|4) floats in [0, 1]."""
    values = (np.clip(pixels, 0, 1) * 255 + 0.5).astype(np.uint8)
    PILImage.fromarray(values).save(path)
    return path


@dataclass
class Outcome:
    state: str  # succeeded | failed | cancelled
    result: dict[str, str] | None
    error: str | None
    directory: Path
    messages: list[str]

    def file(self, name: str) -> Path:
        assert self.result is not None and name in self.result, self
        return self.directory / self.result[name]

    def outputs(self) -> set[str]:
        return {path.name for path in self.directory.iterdir()} - {"job.log", "job-state.json"}


class RecordingContext(JobContext):
    """A JobContext that records progress messages and can request cancellation when one matches."""

    def __init__(self, *args: Any, cancel_when: Callable[[str], bool] | None = None) -> None:
        super().__init__(*args)
        self.messages: list[str] = []
        self.cancel_when = cancel_when

    def progress(self, progress: float, message: str) -> None:
        super().progress(progress, message)
        self.messages.append(message)
        if self.cancel_when is not None and self.cancel_when(message):
            self._request_cancel()


class InProcessJobs:
    """The real server object bound to a storage root; `run` executes one job through its handler."""

    def __init__(self, storage_root: Path) -> None:
        self.storage_root = storage_root
        self.server = create_server()
        self.server.bind(storage_root)
        self.count = 0

    def run(
        self,
        job_id: JobId,
        parameters: dict[str, Any],
        *,
        cancel_when: Callable[[str], bool] | None = None,
        resources: dict[str, Any] | None = None,
    ) -> Outcome:
        self.count += 1
        directory = self.storage_root / "jobs" / f"job{self.count}"
        directory.mkdir(parents=True)
        context = RecordingContext(
            f"job{self.count}",
            job_id.value,
            parameters,
            self.server.resources if resources is None else resources,
            self.storage_root,
            directory,
            cancel_when=cancel_when,
        )
        handler = make_handler(JOB_SPECS[job_id], JOB_RUNNERS[job_id])
        try:
            result = handler(context, parameters)
        except JobCancelled:
            return Outcome("cancelled", None, None, directory, context.messages)
        except ImageForgeError as error:
            return Outcome("failed", None, str(error), directory, context.messages)
        return Outcome("succeeded", result, None, directory, context.messages)

    def close(self) -> None:
        self.server.close()


@pytest.fixture(name="jobs")
def jobs_fixture(storage_root: Path) -> Iterator[InProcessJobs]:
    running = InProcessJobs(storage_root)
    yield running
    running.close()


@pytest.fixture(name="use_catalog")
def use_catalog_fixture(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[..., Path]:
    """use_catalog(entries) writes a catalog and points IMAGEFORGE_MODEL_CATALOG at it."""

    def install(entries: list[dict[str, Any]]) -> Path:
        path = write_catalog(tmp_path / "catalog.json", entries)
        monkeypatch.setenv(CATALOG_ENVIRONMENT_VARIABLE, str(path))
        return path

    return install


@pytest.fixture(name="real_server")
def real_server_fixture(
    hub, server_storage: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable]:
    """real_server([(entry, model bytes), ...]) → a client runtime whose server subprocess downloads those
    models from the loopback hub on first use (declared size and SHA-256, as the built-in catalog does)."""
    started = []

    def start(models: list[tuple[dict[str, Any], bytes]]):
        for entry, content in models:
            hub.add_hub_file(entry["repository"], MODEL_FILE, content)
        contents = {entry["key"]: content for entry, content in models}
        catalog = write_catalog(tmp_path / "server-catalog.json", [entry for entry, _ in models], contents)
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv(CATALOG_ENVIRONMENT_VARIABLE, str(catalog))
        runtime = make_runtime(server_storage)
        started.append(runtime)
        return runtime

    yield start
    for runtime in started:
        runtime.server.stop()
        assert retirement.wait_until_retired(server_storage.resolve(), timeout=20)
