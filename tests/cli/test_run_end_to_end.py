"""`imageforge run` end to end: real server subprocess, real HTTP, the kit's loopback hub."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from imageforge.contract.results import ResultName
from tests.cli.cli_process import imageforge, kit_environment

pytestmark = pytest.mark.slow

MODEL_BYTES = os.urandom(3 * 1024 * 1024 + 17)


def write_catalog(path: Path, content: bytes, *, sha256: str | None = None) -> Path:
    catalog = {
        "models": [
            {
                "key": "TEST_BEN2",
                "family": "background",
                "adapter": "ben2",
                "label": "Test BEN2",
                "license": "Apache-2.0",
                "repository": "kit/test-ben2",
                "directory": "test-ben2",
                "default": True,
                "files": [
                    {
                        "path": "onnx/model.onnx",
                        "size": len(content),
                        "sha256": sha256 or hashlib.sha256(content).hexdigest(),
                    }
                ],
            }
        ]
    }
    path.write_text(json.dumps(catalog), encoding="utf-8")
    return path


@pytest.fixture
def cli_env(hub, server_storage: Path, tmp_path: Path) -> dict[str, str]:
    hub.add_hub_file("kit/test-ben2", "onnx/model.onnx", MODEL_BYTES)
    catalog = write_catalog(tmp_path / "catalog.json", MODEL_BYTES)
    return kit_environment(hub_url=hub.url, storage=server_storage, catalog=catalog)


def test_download_model_runs_on_a_real_server_and_copies_results(cli_env, server_storage, tmp_path, hub):
    output = tmp_path / "out"
    completed = imageforge("run", "download-model", "model=TEST_BEN2", "--output", str(output), env=cli_env)

    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout)
    manifest = json.loads(Path(result[ResultName.MANIFEST]).read_text())
    assert Path(result[ResultName.MANIFEST]).parent == output
    assert manifest == {"models": {"TEST_BEN2": {"onnx/model.onnx": "downloaded"}}}
    model_file = server_storage / "models" / "test-ben2" / "onnx" / "model.onnx"
    assert model_file.read_bytes() == MODEL_BYTES
    assert not model_file.with_name("model.onnx.part").exists()
    # The job ran in a server subprocess of the storage root: its job folder and log are there.
    (job_folder,) = (server_storage / "jobs").iterdir()
    assert json.loads((job_folder / "job-state.json").read_text())["state"] == "succeeded"
    assert "Succeeded" in (job_folder / "job.log").read_text()
    assert "Downloading Test BEN2" in completed.stderr or "Models are ready" in completed.stderr
    # The CLI leaves its server to linger for the next call (2 s in the tests); unused, it exits and tidies up.
    server = json.loads((server_storage / "server-process.json").read_text())["pid"]
    for _ in range(600):
        if not Path(f"/proc/{server}").exists():
            break
        time.sleep(0.05)
    assert not Path(f"/proc/{server}").exists() and not (server_storage / "server-process.json").exists()

    again = imageforge("run", "download-model", "model=TEST_BEN2", env=cli_env)
    assert again.returncode == 0, again.stderr
    manifest = json.loads(Path(json.loads(again.stdout)["manifest"]).read_text())
    assert manifest["models"]["TEST_BEN2"]["onnx/model.onnx"] == "ready"
    assert [r.method for r in hub.requests] == ["GET"]  # the second run downloaded nothing


def test_failures_are_one_line_without_traceback(cli_env):
    unknown = imageforge("run", "download-model", "model=NOPE", env=cli_env)
    assert unknown.returncode == 1
    assert unknown.stderr.strip().splitlines()[-1] == ("imageforge: Unknown model 'NOPE'; valid models are: TEST_BEN2.")
    assert "Traceback" not in unknown.stderr

    bad_parameter = imageforge("run", "upscale-image", "input=x.png", "scale=3", env=cli_env)
    assert bad_parameter.returncode == 2
    assert bad_parameter.stderr.strip() == "imageforge: 'scale' must be one of 2, 4; got 3."

    unknown_job = imageforge("run", "make-coffee", env=cli_env)
    assert unknown_job.returncode == 2
    assert "Unknown job 'make-coffee'" in unknown_job.stderr


def test_a_job_whose_input_is_broken_fails_clearly(cli_env, tmp_path):
    image = tmp_path / "photo.png"
    image.write_bytes(b"not really a png")
    completed = imageforge("run", "generate-cutout-artifacts", f"input={image}", env=cli_env)
    assert completed.returncode == 1
    assert completed.stderr.strip().splitlines()[-1] == (
        "imageforge: 'photo.png' is damaged or incomplete and cannot be read (not a recognisable image); "
        "re-export or re-download it."
    )
    assert "Traceback" not in completed.stderr
