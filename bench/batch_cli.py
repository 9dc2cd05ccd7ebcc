"""`imageforge batch` against one `imageforge run` per input: the ratio, and throughput, in one command.

    uv run python bench/batch_cli.py [N] [--model kit|ben2] [--runs R] [--model-file ben2-shaped.onnx]

Both sides remove the background of the same N small stills (256², written once) with the same model and
storage root: A is one `imageforge batch` (one server start, one model load), B is a shell loop of N
`imageforge run` calls (N starts, N loads). farm-bench times the whole processes, pair by pair, and prints
the median ratio A/B. `--model kit` uses the tiny kit BEN2 (the ratio is then start-up and load cost only);
`--model ben2` the architecture-faithful BEN2 export (bench/models/ben2-shaped.onnx, 88 M parameters, see
bench/README.md), where each image costs a full BEN2 run. Throughput (images per second in the batch) is
printed from A's median. Results: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
WORK = BENCH / "results" / "batch_cli"
sys.path.insert(0, str(ROOT))

from tests.kit.onnx_models import build_ben2  # noqa: E402
from tests.kit.server_env import install_server_environment  # noqa: E402


def prepare(count: int, model: str, model_file: Path) -> tuple[Path, Path, list[Path]]:
    """Storage with the server environment and the model, a catalog naming it, and `count` stills."""
    storage = WORK / "storage"
    if not (storage / ".venv").exists():
        install_server_environment(storage)
    target = storage / "models" / f"bench_{model}" / "model.onnx"
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists():
        if model == "kit":
            build_ben2(target, size=64)
        else:
            if not model_file.is_file():
                raise SystemExit(f"{model_file} is missing: bench/export_image_models.py writes it")
            target.symlink_to(model_file.resolve())
    entry = {
        "key": "BENCH_BEN2", "family": "background", "adapter": "ben2", "label": f"BEN2 ({model})",
        "license": "MIT", "repository": f"bench/{model}", "directory": f"bench_{model}", "default": True,
        "files": [{"path": "model.onnx"}], "normalization": "none" if model == "kit" else "imagenet",
    }  # fmt: skip
    catalog = WORK / f"catalog-{model}.json"
    catalog.write_text(json.dumps({"models": [entry]}), encoding="utf-8")
    stills = []
    rng = np.random.default_rng(5)
    for index in range(count):
        path = WORK / "inputs" / f"still_{index:02d}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            Image.fromarray(rng.integers(0, 255, (256, 256, 3), dtype=np.uint8)).save(path)
        stills.append(path)
    return storage, catalog, stills


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("count", type=int, nargs="?", default=8)
    parser.add_argument("--model", choices=("kit", "ben2"), default="kit")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--model-file", type=Path, default=BENCH / "models" / "ben2-shaped.onnx")
    args = parser.parse_args()
    storage, catalog, stills = prepare(args.count, args.model, args.model_file)
    python = shlex.quote(sys.executable)
    cli = f"{python} -m imageforge.cli.main --storage-root {shlex.quote(str(storage))}"
    out = shlex.quote(str(WORK / "out"))
    inputs = " ".join(shlex.quote(str(path)) for path in stills)
    batch = f"{cli} batch remove-background {inputs} --output {out}"
    loop = f"for i in {inputs}; do {cli} run remove-background input=$i --output {out} || exit 1; done"
    environment = {**os.environ, "IMAGEFORGE_MODEL_CATALOG": str(catalog), "HF_ENDPOINT": "http://127.0.0.1:9"}
    print(f"{args.count} stills 256², model {args.model}: A = one batch, B = {args.count} run calls", flush=True)
    subprocess.run(
        ["farm-bench", "-n", str(args.runs), "--warmup", "1", "--timeout", "3000",
         "--vs", f"sh -c {shlex.quote(loop)}", "--", "sh", "-c", batch],
        env=environment, check=True,
    )  # fmt: skip


if __name__ == "__main__":
    main()
