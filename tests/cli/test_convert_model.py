"""`imageforge models convert DA3_SMALL` for real, offline, then Camera Path from Video on what it made.

The loopback hub serves a random-weight `model.safetensors` of the real DA3-Small architecture as
depth-anything/DA3-SMALL (made with the converter environment's own torch: tests/kit/converter_env.py); the
converter environment is built by the production code from the local wheelhouse; the job server, the verified
download, the exporter subprocess and its check against torch all run for real. Minutes of CPU: marked slow.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from PIL import Image

from imageforge.contract.catalog import load_catalog, local_overlay_path
from imageforge.contract.conversions import WHEELHOUSE_VARIABLE
from tests.cli.cli_process import kit_environment
from tests.kit.converter_env import install_converter, wheelhouse

pytestmark = pytest.mark.slow

REPOSITORY, WEIGHTS = "depth-anything/DA3-SMALL", "model.safetensors"


def imageforge(*args: str, env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "imageforge.cli.main", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


@pytest.fixture
def convert_env(hub, server_storage: Path) -> dict[str, str]:
    weights = install_converter(server_storage)
    hub.add_hub_file(REPOSITORY, WEIGHTS, weights.read_bytes())
    return {**kit_environment(hub_url=hub.url, storage=server_storage), WHEELHOUSE_VARIABLE: str(wheelhouse())}


def frames(folder: Path, count: int = 4, size: tuple[int, int] = (160, 90)) -> Path:
    """A short 16:9 frame sequence: a textured scene panning a few pixels a frame."""
    folder.mkdir()
    rng = np.random.default_rng(5)
    scene = (rng.random((size[1], size[0] + 8 * count, 3)) * 255).astype(np.uint8)
    for index in range(count):
        Image.fromarray(scene[:, 8 * index : 8 * index + size[0]]).save(folder / f"frame_{index + 1:04d}.png")
    return folder


def test_convert_then_camera_path_from_video(convert_env, server_storage, hub, tmp_path):
    started = time.perf_counter()
    converted = imageforge("models", "convert", "DA3_SMALL", env=convert_env)
    convert_seconds = time.perf_counter() - started
    assert converted.returncode == 0, converted.stderr

    # stdout is the new file's path; it is the SHA-256 the overlay records, and nothing partial is left.
    path = Path(converted.stdout.strip())
    assert path == server_storage / "models" / "DA3-SMALL-cameras" / "da3_small_cameras.onnx"
    overlay = json.loads(local_overlay_path(server_storage).read_text(encoding="utf-8"))
    (record,) = overlay["models"]
    assert record["key"] == "DA3_SMALL_CAMERAS" and record["default"] and record["converted_from"] == "DA3_SMALL"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert record["files"] == [{"path": "da3_small_cameras.onnx", "size": path.stat().st_size, "sha256": digest}]
    assert not (server_storage / "models" / ".staging" / "convert-DA3_SMALL").exists()
    assert not list(path.parent.glob("*.part"))
    # The weights came through the verified download, from the hub, once.
    served = f"{REPOSITORY}/resolve/main/{WEIGHTS}"
    assert (server_storage / "models" / "DA3-SMALL" / WEIGHTS).read_bytes() == hub.files[served]
    assert len(hub.served(served)) == 1
    # Progress reached stderr (polled: the long stages are seen): the exporter's own stages, the elapsed time.
    for stage in ("Exporting to ONNX (traced with 3 views) · 0 m", "Checking the ONNX file against torch (4/4"):
        assert stage in converted.stderr, converted.stderr
    (job,) = [folder for folder in (server_storage / "jobs").iterdir()]
    report = json.loads((job / "conversion.json").read_text(encoding="utf-8"))
    assert report["model"] == "DA3_SMALL_CAMERAS" and report["sha256"] == record["files"][0]["sha256"]
    checked = {"depth", "depth_conf", "extrinsics", "intrinsics", "position_table"}  # two views in both orders too
    assert set(report["check_relative_error"]) == checked
    assert max(report["check_relative_error"].values()) < 1e-3
    # The weights' position embedding is random (tests/kit/da3_weights.py), so the table check compared something.
    metadata = {entry.key: entry.value for entry in onnx.load(str(path), load_external_data=False).metadata_props}
    assert metadata["imageforge.da3_export"] == "2"  # the revision that gates the reference view below 3 views
    print(f"\nconvert: {convert_seconds:.0f} s wall; {report}")

    # The catalog the CLI, the add-on and the server read now offers it as the multiview default.
    catalog = load_catalog(storage_root=server_storage)
    assert catalog.default_for(catalog.get("DA3_SMALL_CAMERAS").family).key == "DA3_SMALL_CAMERAS"
    listed = imageforge("models", "list", env=convert_env)
    (line,) = [line for line in listed.stdout.splitlines() if "DA3_SMALL_CAMERAS" in line]
    assert line.startswith("*") and line.endswith("ready")

    # Camera Path from Video on the converted model, through the CLI, with no model named.
    started = time.perf_counter()
    ran = imageforge(
        "run", "generate-multiview-cameras", f"input={frames(tmp_path / 'clip')}", "device=cpu", env=convert_env
    )
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    cameras = json.loads(Path(result["cameras"]).read_text(encoding="utf-8"))
    assert [frame["frame"] for frame in cameras["frames"]] == [1, 2, 3, 4]
    for frame in cameras["frames"]:
        extrinsics = np.asarray(frame["extrinsics"], dtype=np.float64)
        assert extrinsics.shape == (3, 4) and np.isfinite(extrinsics).all()
        rotation = extrinsics[:, :3]
        np.testing.assert_allclose(rotation @ rotation.T, np.eye(3), atol=1e-4)
        assert np.linalg.det(rotation) == pytest.approx(1.0, abs=1e-4)
        intrinsics = frame["intrinsics"]
        assert all(np.isfinite(intrinsics[name]) and intrinsics[name] > 0 for name in ("fx", "fy", "cx", "cy"))
    np.testing.assert_allclose(cameras["frames"][0]["extrinsics"], np.eye(3, 4), atol=1e-5)  # the first frame's world
    with np.load(result["depth"]) as archive:
        assert archive["depth"].shape == (4, 90, 160) and np.isfinite(archive["depth"]).all()
    provenance = json.loads(Path(result["provenance"]).read_text(encoding="utf-8"))
    assert [run["model"] for run in provenance["models"]] == ["DA3_SMALL_CAMERAS"]
    assert provenance["input_warnings"] == []  # a dynamic export takes 16:9 as it is: nothing letterboxed
    print(f"camera path: {time.perf_counter() - started:.0f} s wall")
    # Two frames run through the gated export (an earlier conversion is refused for them).
    pair = imageforge(
        "run", "generate-multiview-cameras", f"input={tmp_path / 'clip'}", "max_frames=2", "device=cpu", env=convert_env
    )
    assert pair.returncode == 0, pair.stderr
    assert len(json.loads(Path(json.loads(pair.stdout)["cameras"]).read_text(encoding="utf-8"))["frames"]) == 2


def test_weights_of_another_architecture_fail_in_one_sentence_and_keep_nothing(convert_env, server_storage, hub):
    hub.add_hub_file(REPOSITORY, WEIGHTS, tiny_safetensors())
    failed = imageforge("models", "convert", "DA3_SMALL", env=convert_env)
    assert failed.returncode == 1
    last = failed.stderr.strip().splitlines()[-1]
    assert last.startswith("imageforge: Exporting Depth Anything 3 Small failed: The weights do not fit da3-small")
    assert "Traceback" not in failed.stderr
    assert not (server_storage / "models" / "DA3-SMALL-cameras").exists()
    assert not local_overlay_path(server_storage).exists()
    assert not (server_storage / "models" / ".staging" / "convert-DA3_SMALL").exists()


def test_ctrl_c_stops_the_exporter_and_leaves_no_partial_model(convert_env, server_storage):
    process = subprocess.Popen(
        [sys.executable, "-m", "imageforge.cli.main", "models", "convert", "DA3_SMALL"],
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=convert_env,
    )
    seen = []
    assert process.stderr is not None
    for line in process.stderr:
        seen.append(line)
        if "Exporting to ONNX" in line:
            break
    exporters = exporter_processes(server_storage)
    assert exporters, "the exporter should be running"
    process.send_signal(signal.SIGINT)
    _, rest = process.communicate(timeout=120)
    assert process.returncode == 130, "".join(seen) + rest
    assert "cancelled" in rest.lower()
    for pid in exporters:  # the exporter and its process group are gone
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
    assert not (server_storage / "models" / ".staging" / "convert-DA3_SMALL").exists()
    assert not (server_storage / "models" / "DA3-SMALL-cameras").exists()
    assert not local_overlay_path(server_storage).exists()
    assert (server_storage / "models" / "DA3-SMALL" / WEIGHTS).is_file()  # kept for the next try


def exporter_processes(storage: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(part.endswith(b"da3_export.py") for part in command) and str(storage).encode() in b" ".join(command):
            found.append(int(entry.name))
    return found


def tiny_safetensors() -> bytes:
    """A valid safetensors file holding one tensor that DA3 does not have."""
    header = json.dumps({"model.unrelated": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    header += b" " * (-len(header) % 8)
    return len(header).to_bytes(8, "little") + header + np.zeros(2, np.float32).tobytes()


if os.name != "posix":  # pragma: no cover - the suite runs on Linux
    pytest.skip("POSIX process groups", allow_module_level=True)
