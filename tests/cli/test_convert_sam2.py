"""`imageforge models convert SAM2_TINY` for real, offline, then segment-image on the two graphs it made.

The loopback hub serves a random-weight checkpoint of the real SAM 2.1 Hiera Tiny architecture (every parameter
and buffer random, written by the converter's own `sam2_export.random_checkpoint` in the converter environment:
tests/kit/converter_env.py) as facebook/sam2.1-hiera-tiny; the converter environment (sam2 and its sdists built
without isolation) is built by the production code from the local wheelhouse; the job server, the verified
download, the exporter subprocess and its ONNX-Runtime-against-torch check all run for real. Minutes of CPU:
marked slow.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime
import pytest
from PIL import Image

from imageforge.contract.catalog import load_catalog, local_overlay_path
from imageforge.contract.conversions import WHEELHOUSE_VARIABLE
from imageforge.server.models.sam2 import model_input
from imageforge.server.models.sam2_resize import bilinear
from tests.cli.cli_process import kit_environment
from tests.kit.converter_env import install_converter, sam2_tiny_checkpoint, wheelhouse

pytestmark = pytest.mark.slow

REPOSITORY, WEIGHTS = "facebook/sam2.1-hiera-tiny", "sam2.1_hiera_tiny.pt"
GRAPHS = ["encoder.onnx", "decoder.onnx"]


def imageforge(*args: str, env: dict[str, str], timeout: float = 1500) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "imageforge.cli.main", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def photo(path: Path) -> Path:
    """A 200×120 picture (not square: the predictor's resize is not uniform) with a disc and a square."""
    ys, xs = np.mgrid[0:120, 0:200]
    pixels = np.full((120, 200, 3), 128, np.uint8)
    pixels[np.hypot(xs - 60, ys - 60) < 30] = (220, 30, 30)
    pixels[30:80, 120:180] = (30, 30, 220)
    Image.fromarray(pixels).save(path)
    return path


def graphs_mask(folder: Path, image: Path, point: tuple[float, float], token: int) -> np.ndarray:
    """The mask the two converted graphs give for one click, run here directly with ONNX Runtime."""
    pixels = np.asarray(Image.open(image).convert("RGB"), np.float32) / 255
    height, width = pixels.shape[:2]
    encoder = onnxruntime.InferenceSession(str(folder / "encoder.onnx"), providers=["CPUExecutionProvider"])
    decoder = onnxruntime.InferenceSession(str(folder / "decoder.onnx"), providers=["CPUExecutionProvider"])
    names = [item.name for item in encoder.get_outputs()]
    features = dict(zip(names, encoder.run(None, {"image": model_input(pixels)}), strict=True))
    coords = np.asarray([[[point[0] / width * 1024, point[1] / height * 1024]]], np.float32)
    masks, _ = decoder.run(
        ["masks", "iou_predictions"], {**features, "point_coords": coords, "point_labels": np.ones((1, 1), np.float32)}
    )
    return bilinear(masks[0, token], (width, height)) > 0


def test_convert_sam2_tiny_then_segment_image(hub, server_storage, tmp_path):
    install_converter(server_storage)
    hub.add_hub_file(REPOSITORY, WEIGHTS, sam2_tiny_checkpoint().read_bytes())
    env = {**kit_environment(hub_url=hub.url, storage=server_storage), WHEELHOUSE_VARIABLE: str(wheelhouse())}

    started = time.perf_counter()
    converted = imageforge("models", "convert", "SAM2_TINY", env=env)
    convert_seconds = time.perf_counter() - started
    assert converted.returncode == 0, converted.stderr
    assert "SAM2_TINY_ONNX is ready and is now the default segmentation model" in converted.stderr

    # stdout is the folder of the two graphs; the overlay records both with their SHA-256; nothing partial is left.
    folder = Path(converted.stdout.strip())
    assert folder == server_storage / "models" / "SAM2.1-hiera-tiny-onnx"
    assert sorted(path.name for path in folder.iterdir()) == sorted(GRAPHS)
    overlay = json.loads(local_overlay_path(server_storage).read_text(encoding="utf-8"))
    (record,) = overlay["models"]
    assert (record["key"], record["family"], record["adapter"]) == ("SAM2_TINY_ONNX", "segment", "sam2")
    assert record["default"] and record["converted_from"] == "SAM2_TINY"
    assert (record["encoder"], record["decoder"]) == ("encoder.onnx", "decoder.onnx")
    assert (record["stability_delta"], record["stability_threshold"]) == (0.05, 0.98)  # build_sam2's, reported
    assert record["files"] == [
        {
            "path": name,
            "size": (folder / name).stat().st_size,
            "sha256": hashlib.sha256((folder / name).read_bytes()).hexdigest(),
        }
        for name in GRAPHS
    ]
    assert not (server_storage / "models" / ".staging" / "convert-SAM2_TINY").exists()
    served = f"{REPOSITORY}/resolve/main/{WEIGHTS}"
    assert (server_storage / "models" / "SAM2.1-hiera-tiny" / WEIGHTS).read_bytes() == hub.files[served]
    assert len(hub.served(served)) == 1
    assert "Checking the ONNX files against torch" in converted.stderr, converted.stderr  # the exporter's stages
    (job,) = [folder for folder in (server_storage / "jobs").iterdir()]
    report = json.loads((job / "conversion.json").read_text(encoding="utf-8"))
    assert report["model"] == "SAM2_TINY_ONNX" and report["path"] == str(folder)
    assert [item["sha256"] for item in report["files"]] == [item["sha256"] for item in record["files"]]
    assert set(report["check_max_abs"]) == set(report["check_relative_error"]) == {"encoder", "decoder"}
    assert max(report["check_relative_error"].values()) < 1e-3
    print(f"\nconvert: {convert_seconds:.0f} s wall; {report}")

    catalog = load_catalog(storage_root=server_storage)
    assert catalog.default_for(catalog.get("SAM2_TINY_ONNX").family).key == "SAM2_TINY_ONNX"

    # segment-image on the converted pair, no model named: the mask is the graphs' own answer for the click.
    image = photo(tmp_path / "photo.png")
    ran = imageforge("run", "segment-image", f"input={image}", "points=[[60,60,1]]", "device=cpu", env=env)
    assert ran.returncode == 0, ran.stderr
    outputs = json.loads(ran.stdout)
    result = json.loads(Path(outputs["segment"]).read_text(encoding="utf-8"))
    assert result["model"] == "SAM2_TINY_ONNX" and result["multimask"]  # one click: the best of three candidates
    mask = np.asarray(Image.open(outputs["mask"]))
    assert mask.shape == (120, 200) and set(np.unique(mask)) <= {0, 255}
    expected = graphs_mask(folder, image, (60, 60), token=result["chosen"] + 1)
    assert np.mean((mask > 0) == expected) > 0.999  # the same graphs; a logit at 0 ± float noise may flip
