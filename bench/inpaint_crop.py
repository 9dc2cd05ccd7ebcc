"""inpaint-image on a large photo with a small hole: the crop around the hole versus analysing the whole photo.

Run: `.venv/bin/python bench/inpaint_crop.py [--size 6000x4000] [--hole 300]` (CPU; about two minutes here).

The model is a LaMa-shaped stand-in written once to `bench/models/lama-shaped.onnx` with random weights: LaMa's
exact signature (`input` [1, 4, H, W] → `output` [1, 3, H, W]) and Big-LaMa's shape of work (a 7×7 stem,
three stride-2 convolutions to 512 channels at 1/8 resolution, 9 residual blocks of two 3×3 convolutions there,
three 2× upsamplings with 3×3 convolutions, a 7×7 head; 43 M parameters against Big-LaMa's 51 M). Its
Fourier units are plain convolutions (the public export's FFTs do not export with the exporter here), so
absolute seconds are indicative; the ratios between cases follow the pixels each run analyses, which is
what the crop changes.

Each case runs the job's own code (hole_fill.inpaint_pixels on a real ONNX Runtime session through the
ModelManager) in a child process, which reports its wall time, model time and peak RSS:
- `crop`: the job's default: the hole plus context, analysed at its own resolution (≤ 1024);
- `whole@1024`: the whole photo reduced to 1024 px for the model, as a job without the crop would;
- `whole@2048`: the same at 2048 px (sharper, 4× the pixels).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]
MODEL = ROOT / "bench" / "models" / "lama-shaped.onnx"
CASES = {"crop": (False, 1024), "whole@1024": (True, 1024), "whole@2048": (True, 2048)}


def build_model(path: Path) -> Path:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, weights = [], []
    count = 0

    def conv(x: str, cin: int, cout: int, kernel: int, stride: int = 1, relu: bool = True) -> str:
        nonlocal count
        count += 1
        w = (rng.standard_normal((cout, cin, kernel, kernel)) * (2.0 / (cin * kernel * kernel)) ** 0.5).astype(
            np.float32
        )
        weights.append(numpy_helper.from_array(w, f"w{count}"))
        weights.append(numpy_helper.from_array(np.zeros(cout, np.float32), f"b{count}"))
        pad = kernel // 2
        out = f"c{count}"
        nodes.append(
            helper.make_node(
                "Conv", [x, f"w{count}", f"b{count}"], [out], kernel_shape=[kernel] * 2, strides=[stride] * 2,
                pads=[pad] * 4,
            )
        )  # fmt: skip
        if relu:
            nodes.append(helper.make_node("Relu", [out], [f"{out}r"]))
            return f"{out}r"
        return out

    x = conv("input", 4, 64, 7)
    for cin, cout in ((64, 128), (128, 256), (256, 512)):
        x = conv(x, cin, cout, 3, stride=2)
    for block in range(9):
        y = conv(conv(x, 512, 512, 3), 512, 512, 3, relu=False)
        nodes.append(helper.make_node("Add", [x, y], [f"res{block}"]))
        x = f"res{block}"
    weights.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "twice"))
    for step, (cin, cout) in enumerate(((512, 256), (256, 128), (128, 64))):
        nodes.append(helper.make_node("Resize", [x, "", "twice"], [f"up{step}"], mode="nearest"))
        x = conv(f"up{step}", cin, cout, 3)
    x = conv(x, 64, 3, 7, relu=False)
    nodes.append(helper.make_node("Sigmoid", [x], ["output"]))
    graph = helper.make_graph(
        nodes,
        "lama_shaped",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 4, "height", "width"])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 3, "height", "width"])],
        initializer=weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path


def run_case(name: str, width: int, height: int, hole: int) -> dict:
    from imageforge.contract import Device
    from imageforge.contract.catalog import Family, ModelEntry, ModelFile
    from imageforge.server.inference import ModelManager
    from imageforge.server.job_steps import hole_fill
    from imageforge.server.models.lama import LamaAdapter

    whole, size = CASES[name]
    pixels = np.random.default_rng(1).random((height, width, 3), dtype=np.float32)
    weight = np.zeros((height, width), np.float32)
    top, left = (height - hole) // 2, (width - hole) // 2
    weight[top : top + hole, left : left + hole] = 1.0
    with tempfile.TemporaryDirectory() as folder:
        storage = Path(folder)
        target = storage / "models" / "lama" / "lama.onnx"
        target.parent.mkdir(parents=True)
        target.symlink_to(MODEL)
        entry = ModelEntry("LAMA", Family("inpaint"), "lama", "LaMa-shaped", "MIT", "bench/lama", "lama", True,
                           (ModelFile("lama.onnx"),))  # fmt: skip
        manager = ModelManager(storage)
        adapter = LamaAdapter(entry, manager.acquire(entry, Device.CPU))
        if whole:  # what the job would do without the crop: the whole photo is the region analysed
            hole_fill.hole_crop = lambda _weight: hole_fill.Region.whole((width, height))
        messages: list[str] = []
        started = time.perf_counter()
        hole_fill.inpaint_pixels(adapter, pixels, weight, size, log=messages.append)
        wall = time.perf_counter() - started
        manager.close()
    return {
        "case": name,
        "analysed": messages[0].split("analysed at ")[1],
        "wall_s": round(wall, 2),
        "model_s": round(adapter.model_seconds, 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="6000x4000")
    parser.add_argument("--hole", type=int, default=300)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args()
    width, height = (int(value) for value in args.size.split("x"))
    if args.case:
        print(json.dumps(run_case(args.case, width, height, args.hole)))
        return
    if not MODEL.is_file():
        build_model(MODEL)
    rows = []
    for name in CASES:
        command = [sys.executable, __file__, "--case", name, "--size", args.size, "--hole", str(args.hole)]
        rows.append(json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout))
    crop = rows[0]
    print(f"{width}×{height} photo, {args.hole}² hole, LaMa-shaped stand-in on CPU")
    print(f"{'case':<12}{'analysed':>12}{'wall s':>9}{'model s':>9}{'peak MiB':>10}{'÷ crop':>8}")
    for row in rows:
        ratio = row["wall_s"] / crop["wall_s"]
        print(
            f"{row['case']:<12}{row['analysed']:>12}{row['wall_s']:>9}{row['model_s']:>9}"
            f"{row['peak_rss_mib']:>10}{ratio:>8.1f}"
        )
    results = ROOT / "bench" / "results"
    results.mkdir(exist_ok=True)
    (results / "inpaint_crop.json").write_text(json.dumps(rows, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
