"""What the shared-server tests share: a kit catalog (a BEN2-shaped model, a slow download), the `imageforge`
command as a child process, and readers for the server's process record and job folders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from tests.cli.cli_process import kit_environment
from tests.client.job_in_flight import SLOW_BYTES, catalog_entry
from tests.kit.catalog import publish_kit_catalog
from tests.kit.hub import LoopbackHub


@dataclass
class SharedKit:
    hub: LoopbackHub
    root: Path
    env: dict[str, str]
    image: Path
    slow_key: str

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "imageforge.cli.main", *args]

    def start_cli(self, *args: str, **options) -> subprocess.Popen:
        return subprocess.Popen(
            self.command(*args), env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **options
        )

    def server_pid(self) -> int | None:
        try:
            return json.loads((self.root / "server-process.json").read_text(encoding="utf-8"))["pid"]
        except (OSError, ValueError, KeyError):
            return None

    def job_folders(self) -> list[Path]:
        jobs = self.root / "jobs"
        return sorted(jobs.iterdir(), key=lambda path: path.stat().st_mtime) if jobs.is_dir() else []

    def job_state(self, folder: Path) -> str:
        try:
            return json.loads((folder / "job-state.json").read_text(encoding="utf-8"))["state"]
        except (OSError, ValueError, KeyError):
            return ""

    def wait_for_slow_bytes(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while not any(r.path == self.slow_key and r.method == "GET" and r.bytes_sent for r in self.hub.requests):
            assert time.monotonic() < deadline, "the slow download never started"
            time.sleep(0.02)


def make_shared_kit(hub: LoopbackHub, root: Path, folder: Path) -> SharedKit:
    catalog = publish_kit_catalog(hub, folder / "kit", keys=("KIT_BEN2",))
    slow_key = hub.add_hub_file("kit/slow", "onnx/model.onnx", SLOW_BYTES)
    hub.faults[slow_key] = "slow"
    models = json.loads(catalog.path.read_text(encoding="utf-8"))["models"]
    catalog.path.write_text(json.dumps({"models": [*models, catalog_entry("SLOW", "slow", SLOW_BYTES)]}))
    image = folder / "photo.png"
    pixels = np.linspace(0, 255, 48 * 64 * 3).reshape(48, 64, 3).astype(np.uint8)
    Image.fromarray(pixels).save(image)
    env = kit_environment(hub_url=hub.url, storage=root, catalog=catalog.path)
    return SharedKit(hub, root, env, image, slow_key)


def process_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # our own child that exited: reap it
            if os.waitpid(pid, os.WNOHANG)[0]:
                return True
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return False


def children_of(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found
