"""The server and every child process it starts, in the environment users get: the one Set Up Server builds from
client/server_environment.json (tests/kit/server_env.py builds it with the production code), never the
development environment, which has more (BlendJob, onnx, pytest). Issue 28: the CPU copy's child imported
`blendjob` through its package `__init__`s, failed on every user's machine, and the tests never saw it."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import blendjob
import numpy as np
import onnxruntime as ort
import pytest
from blendjob.environment import resolved_packages
from PIL import Image as PILImage

from imageforge.cli.main import main as cli_main
from imageforge.client.environment import server_environment
from imageforge.client.job_runner import run_job
from imageforge.contract.cpu_copies import CopyStatus, copy_path, read_record
from imageforge.contract.results import ResultName
from imageforge.server import child_python
from tests.kit.kit_server import served_kit
from tests.kit.server_env import cached_environment

pytestmark = pytest.mark.slow

SOURCE = Path(__file__).resolve().parents[2] / "src"
BLENDJOB_ROOT = str(Path(blendjob.__file__).resolve().parents[1])
CHECKED = ("server", "contract")  # what the server process and its children import from our package


def shipped_python() -> str:
    return str(cached_environment() / ".venv" / "bin" / "python")


def run_in_shipped(code: str, *arguments: str) -> str:
    completed = subprocess.run(
        [shipped_python(), "-I", "-c", code, *arguments], capture_output=True, text=True, check=False, timeout=120
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout.strip().splitlines()[-1]


def pinned_distributions() -> set[str]:
    """What Set Up Server installs here: our pins for this platform plus BlendJob's own server packages."""
    return {pin.split("==")[0].lower().replace("_", "-") for pin in resolved_packages(server_environment())}


PROVIDERS = """
import importlib.metadata, json, sys
print(json.dumps({name: [d.lower().replace("_", "-") for d in dists]
                  for name, dists in importlib.metadata.packages_distributions().items()}))
"""


def imported_top_level_names(folder: Path) -> dict[str, str]:
    """Every absolute import in `folder`'s modules, at any depth (function-level ones too): name -> a module."""
    found: dict[str, str] = {}
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], str(path.relative_to(SOURCE)))
    return found


def test_every_module_the_server_imports_is_in_the_pins():
    providers = json.loads(run_in_shipped(PROVIDERS))
    pinned = pinned_distributions()
    missing = {}
    for folder in CHECKED:
        for name, where in imported_top_level_names(SOURCE / "imageforge" / folder).items():
            if name in sys.stdlib_module_names or name in ("imageforge", "blendjob", "__future__"):
                continue
            if not set(providers.get(name, [])) & pinned:
                missing[name] = where
    assert missing == {}, f"imported by the server but in no pinned distribution: {missing}"


IMPORT_EVERY_MODULE = """
import importlib, json, pkgutil, sys
sys.path.insert(0, sys.argv[1])
from imageforge.server.launcher import import_blendjob
import_blendjob(sys.argv[2])  # as the real server process does: BlendJob from the client's side, nothing else
import imageforge.server
failed = {}
for info in pkgutil.walk_packages(imageforge.server.__path__, "imageforge.server."):
    try:
        importlib.import_module(info.name)
    except Exception as error:
        failed[info.name] = repr(error)
print(json.dumps(failed))
"""


def test_every_server_module_imports_in_the_shipped_environment():
    failed = json.loads(run_in_shipped(IMPORT_EVERY_MODULE, str(SOURCE), BLENDJOB_ROOT))
    assert failed == {}


def test_every_child_module_imports_in_the_shipped_environment_without_blendjob():
    pinned = pinned_distributions()
    providers = json.loads(run_in_shipped(PROVIDERS))
    report = "import json, sys; print(json.dumps(sorted({name.split('.')[0] for name in sys.modules})))"
    for module in child_python.CHILD_MODULES:
        command = child_python.child_command(module, [], python=shipped_python())
        assert ".main(arguments)" in command[3]
        command[3] = command[3].replace(".main(arguments)", "") + report  # import the module, then list modules
        completed = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
        assert completed.returncode == 0, completed.stderr
        loaded = set(json.loads(completed.stdout.strip().splitlines()[-1]))
        assert module.split(".")[0] in loaded
        foreign = {
            name
            for name in loaded - set(sys.stdlib_module_names) - {"imageforge", "__main__"}
            if not set(providers.get(name, [])) & pinned and not name.startswith("_")
        }
        assert foreign == set(), f"{module} loads modules no pin provides: {foreign}"
        assert "blendjob" not in loaded


@pytest.fixture(scope="module")
def shipped_server(tmp_path_factory):
    with served_kit(tmp_path_factory.mktemp("shipped"), ("KIT_BEN2_FP16_LARGE",)) as served:
        yield served.runtime, served.storage, served.catalog


def test_the_shipped_server_writes_and_uses_the_cpu_copy_of_a_large_fp16_file(
    shipped_server, tmp_path, capsys, monkeypatch
):
    runtime, storage, catalog = shipped_server
    pixels = np.random.default_rng(2).integers(0, 256, size=(64, 64, 3), dtype=np.uint8)
    image = tmp_path / "still.png"
    PILImage.fromarray(pixels).save(image)
    result = run_job(runtime, "remove-background", {"input": str(image), "model": "KIT_BEN2_FP16_LARGE"})

    source = storage / "models" / "kit_ben2_fp16_large" / "model.onnx"
    assert source.stat().st_size > 8 * 1024 * 1024  # over cpu_copy.IN_PROCESS_BYTES: rewritten in a child
    record = read_record(source)
    assert record is not None and record.status is CopyStatus.READY, record
    copy = copy_path(source, record.source_sha256)
    log = (Path(result.directory) / "job.log").read_text(encoding="utf-8")
    assert f"from its fp32 CPU copy {copy.name}" in log
    # the copy's matte is the fp16 original's, to the rounding the check allows
    original = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"])
    expected = original.run(None, {"input": (pixels.transpose(2, 0, 1)[None] / 255).astype(np.float32)})[0][0, 0]
    stretched = (expected - expected.min()) / (expected.max() - expected.min())
    alpha = np.asarray(PILImage.open(result.file(ResultName.FOREGROUND)))[..., 3] / 255
    np.testing.assert_allclose(alpha, stretched, atol=4 / 255)

    capsys.readouterr()
    monkeypatch.setenv("IMAGEFORGE_MODEL_CATALOG", str(catalog.path))
    assert cli_main(["--storage-root", str(storage), "models", "list"]) == 0
    assert "ready (fp32 CPU copy ready)" in capsys.readouterr().out
