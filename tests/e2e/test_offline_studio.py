"""An offline studio machine, end to end: `imageforge setup --wheelhouse`, `imageforge models import`, then a job,
with no network at all: inside a network namespace that has only loopback (as root, `unshare --net`), and with
every package index, the hub, the model mirror and the proxies pointing at a dead loopback port besides; uv
starts with an empty cache. The wheelhouse is the real Linux one tests/sync exported with the production code
(tests/kit/server_wheels.py); the model comes from a "connected machine" through `imageforge models export`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.kit.catalog import publish_kit_catalog
from tests.kit.hub import LoopbackHub
from tests.kit.package_index import dead_url
from tests.kit.server_wheels import WHEELHOUSE

pytestmark = pytest.mark.slow


def network_namespace() -> list[str]:
    """The command prefix that runs a shell with loopback only, or [] where this machine cannot make one."""
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("ip") is None:
        return []
    probe = subprocess.run(["unshare", "--net", "true"], capture_output=True, check=False)
    return ["unshare", "--net"] if probe.returncode == 0 else []


def test_an_offline_machine_sets_up_from_a_wheelhouse_imports_models_and_runs_a_job(tmp_path):
    assert any(WHEELHOUSE.glob("onnxruntime*.whl")), f"run `bash tests/sync` first: {WHEELHOUSE} has no wheels"
    with LoopbackHub() as hub:
        catalog = publish_kit_catalog(hub, tmp_path / "catalog", keys=("KIT_BEN2",))
    connected = tmp_path / "connected"  # a machine that downloaded the model
    model = connected / "models" / "kit_ben2" / "model.onnx"
    model.parent.mkdir(parents=True)
    model.write_bytes(catalog.files["KIT_BEN2"])
    share = tmp_path / "share"
    base = {**os.environ, "IMAGEFORGE_MODEL_CATALOG": str(catalog.path), "PYTHONUNBUFFERED": "1"}
    cli = [sys.executable, "-m", "imageforge.cli.main"]
    exported = subprocess.run([*cli, "--storage-root", str(connected), "models", "export", str(share)],
                              env=base, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert exported.returncode == 0, exported.stderr

    pixels = np.random.default_rng(4).integers(0, 256, size=(48, 64, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(tmp_path / "still.png")
    dead = dead_url()
    offline = {
        **base,
        "IMAGEFORGE_STORAGE_ROOT": str(tmp_path / "studio"),
        "UV_CACHE_DIR": str(tmp_path / "empty-uv-cache"),
        "UV_PYTHON_DOWNLOADS": "never",
        "IMAGEFORGE_PACKAGE_INDEX": dead, "UV_INDEX_URL": dead, "UV_DEFAULT_INDEX": dead, "PIP_INDEX_URL": dead,
        "HF_ENDPOINT": dead.removesuffix("/simple"), "IMAGEFORGE_MODEL_MIRROR": dead.removesuffix("/simple"),
        "HTTP_PROXY": dead.removesuffix("/simple"), "HTTPS_PROXY": dead.removesuffix("/simple"),
        "XDG_STATE_HOME": str(tmp_path / "state"), "IMAGEFORGE_SERVER_LINGER": "1",
    }  # fmt: skip
    steps = " && ".join(
        [
            "ip link set lo up" if network_namespace() else "true",
            f"{_quoted(cli)} setup --wheelhouse {_q(WHEELHOUSE)}",
            f"{_quoted(cli)} models import {_q(share)}",
            # the cut-out's colour is the source's only without foreground estimation (on by default since 0028)
            f"{_quoted(cli)} run remove-background input={_q(tmp_path / 'still.png')} estimate_foreground=false "
            f"--output {_q(tmp_path / 'out')}",
        ]
    )
    completed = subprocess.run([*network_namespace(), "sh", "-c", steps], env=offline, capture_output=True,
                               text=True, timeout=900)  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert f"Packages from: wheelhouse {WHEELHOUSE.resolve()}" in completed.stderr
    assert "copied        KIT_BEN2 model.onnx" in completed.stdout
    result = json.loads(completed.stdout[completed.stdout.index("{") :])
    cutout = np.asarray(Image.open(result["foreground"]))
    assert cutout.shape == (48, 64, 4) and (cutout[..., :3] == pixels).all()
    manifest = json.loads((tmp_path / "studio" / "manifest.json").read_text())
    assert manifest["package_source"] == f"wheelhouse {WHEELHOUSE.resolve()}"
    print("network namespace:", "yes (loopback only)" if network_namespace() else "no (dead ports only)")


def _q(path: Path | str) -> str:
    return "'" + str(path).replace("'", "'\\''") + "'"


def _quoted(command: list[str]) -> str:
    return " ".join(_q(part) for part in command)
