"""Export a MoGe-2 ViT-S-shaped ONNX model with random weights, for bench/geometry_jobs.py.

Runs in a throwaway Python 3.11 environment (torch exists here only as a local CPU wheel for 3.11):

    uv venv --seed --python 3.11 .venv-bench-build
    .venv-bench-build/bin/python -m pip install torch==2.13.0 onnx
    .venv-bench-build/bin/python -m pip install --no-deps dlr-moge dlr-utils3d
    .venv-bench-build/bin/python bench/export_moge_vits.py

The architecture is MoGe-2's own (dlr-moge's `MoGeModel` with its vendored DINOv2 ViT-S/14 encoder), configured
like the published ViT-S Normal checkpoint (the layer widths are chosen so the parameter count lands near the
real file's ~35 M floats); the weights are random, so timings are real and outputs meaningless. The legacy
exporter (`dynamo=False`) keeps `num_tokens` a dynamic 0-d int64 input, as in the published exports.
"""

from __future__ import annotations

import argparse
import os
import sys
import types
from pathlib import Path

os.environ.setdefault("XFORMERS_DISABLED", "1")

# dlr-moge imports huggingface_hub at module level only for from_pretrained(); the bench never downloads.
if "huggingface_hub" not in sys.modules:
    stub = types.ModuleType("huggingface_hub")
    stub.hf_hub_download = None  # type: ignore[attr-defined]
    sys.modules["huggingface_hub"] = stub

import torch  # noqa: E402
from moge.model.v2 import MoGeModel  # noqa: E402

OUTPUT = Path(__file__).resolve().parent / "models" / "moge2-vits-random.onnx"
WIDTHS = [384, 256, 128, 64, 32]
RESAMPLERS = ["conv_transpose", "conv_transpose", "conv_transpose", "bilinear"]


def head(out: int) -> dict:
    return {
        "dim_in": WIDTHS,
        "dim_out": [None, None, None, None, out],
        "dim_res_blocks": WIDTHS,
        "num_res_blocks": [0, 1, 1, 1, 0],
        "res_block_in_norm": "none",
        "res_block_hidden_norm": "none",
        "resamplers": RESAMPLERS,
    }


CONFIG = {
    "encoder": {"backbone": "dinov2_vits14", "intermediate_layers": [2, 5, 8, 11], "dim_out": 384},
    "neck": {
        "dim_in": [386, 2, 2, 2, 2],
        "dim_out": None,
        "dim_res_blocks": WIDTHS,
        "num_res_blocks": [0, 2, 2, 2, 0],
        "res_block_in_norm": "none",
        "res_block_hidden_norm": "none",
        "resamplers": RESAMPLERS,
    },
    "points_head": head(3),
    "normal_head": head(3),
    "mask_head": head(1),
    "scale_head": {"dims": [384, 384, 384, 1]},
    "remap_output": "exp",
    "num_tokens_range": [1200, 3600],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = MoGeModel(**CONFIG).eval()
    model.onnx_compatible_mode = True
    print(f"parameters: {sum(p.numel() for p in model.parameters()) / 1e6:.1f} M")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    image = torch.rand(1, 3, 518, 518)
    tokens = torch.tensor(1800, dtype=torch.int64)
    with torch.no_grad():
        torch.onnx.export(
            model,
            (image, tokens),
            str(args.output),
            input_names=["image", "num_tokens"],
            output_names=["points", "normal", "mask", "metric_scale"],
            dynamic_axes={
                "image": {0: "batch", 2: "height", 3: "width"},
                "points": {0: "batch", 1: "height", 2: "width"},
                "normal": {0: "batch", 1: "height", 2: "width"},
                "mask": {0: "batch", 1: "height", 2: "width"},
                "metric_scale": {0: "batch"},
            },
            opset_version=14,
            dynamo=False,
        )
    print(f"wrote {args.output} ({args.output.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
