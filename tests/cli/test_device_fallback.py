"""A device fallback is never silent in `imageforge run`: stderr says so and the result JSON names the device.

Real server subprocess, real ONNX Runtime (the CPU build): asking for NVIDIA CUDA on a machine whose ONNX
Runtime cannot offer it runs the job on CPU with a warning. The warning's progress message lasts only until
the job's next step, so the CLI takes it from the job's provenance.json.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from imageforge.contract.results import ResultName
from tests.cli.cli_process import imageforge, kit_environment
from tests.kit.catalog import publish_kit_catalog

pytestmark = pytest.mark.slow


def test_a_cpu_fallback_is_a_stderr_line_and_the_result_names_the_device(hub, server_storage, tmp_path):
    catalog = publish_kit_catalog(hub, tmp_path / "catalog", keys=("KIT_BEN2",))
    photo = tmp_path / "photo.png"
    Image.fromarray(np.random.default_rng(3).integers(0, 255, (24, 32, 3), dtype=np.uint8)).save(photo)
    environment = kit_environment(hub_url=hub.url, storage=server_storage, catalog=catalog.path)

    completed = imageforge("run", "remove-background", f"input={photo}", "device=cuda", env=environment)

    assert completed.returncode == 0, completed.stderr
    warnings = [line for line in completed.stderr.splitlines() if line.startswith("imageforge: warning: ")]
    assert len(warnings) == 1, completed.stderr
    # The reason depends on the ONNX Runtime build ("no NVIDIA driver was found" with onnxruntime-gpu).
    assert warnings[0].startswith("imageforge: warning: NVIDIA CUDA is not available on this computer (")
    assert warnings[0].endswith("); running on CPU.")
    result = json.loads(completed.stdout)
    assert result["devices"] == {"KIT_BEN2": "cpu"}
    assert result["warnings"] == [warnings[0].removeprefix("imageforge: warning: ")]
    provenance = json.loads(Path(result[ResultName.PROVENANCE]).read_text())
    assert provenance["models"][0]["requested_device"] == "cuda"
    assert Path(result[ResultName.FOREGROUND]).is_file()

    quiet = imageforge("run", "remove-background", f"input={photo}", "device=cpu", env=environment)
    assert quiet.returncode == 0, quiet.stderr
    assert "warning" not in quiet.stderr
    assert json.loads(quiet.stdout)["devices"] == {"KIT_BEN2": "cpu"} and "warnings" not in json.loads(quiet.stdout)
