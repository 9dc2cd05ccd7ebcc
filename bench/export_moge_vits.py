"""Export a MoGe-2 ViT-S-shaped ONNX model with random weights, for bench/geometry_jobs.py.

Runs in a throwaway Python 3.11 environment (torch exists here only as a local CPU wheel for 3.11):

    uv venv --seed --python 3.11 .venv-bench-build
    .venv-bench-build/bin/python -m pip install torch==2.13.0 onnx
    .venv-bench-build/bin/python -m pip install --no-deps dlr-moge dlr-utils3d
    .venv-bench-build/bin/python bench/export_moge_vits.py

The architecture is MoGe-2's own (dlr-moge's `MoGeModel` with its vendored DINOv2 ViT-S/14 encoder), configured
like the published ViT-S Normal checkpoint (the layer widths are chosen so the parameter count lands near the
real file's ~35 M floats); the weights are random, so timings are real and raw outputs meaningless. Random
heads give a mask below 0.5 everywhere and points without a camera, which the host would (rightly) refuse, so
the export adds a few element-wise operations at output resolution: points = a known tilted plane + 10⁻³ × the
network's points, mask = 0.98 + 0.01 × the network's mask. Every output still depends on the whole network;
the extra work is negligible next to it. The legacy exporter (`dynamo=False`) keeps `num_tokens` a dynamic
0-d int64 input, as in the published exports.
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


class WithValidGeometry(torch.nn.Module):
    """MoGe-2 whose points and mask are nudged onto a plane the host can recover a camera from."""

    def __init__(self, model: MoGeModel, focal: float = 1.2, shift: float = 0.5, tilt: float = 0.3):
        super().__init__()
        self.model, self.focal, self.shift, self.tilt = model, focal, shift, tilt

    def forward(self, image: torch.Tensor, num_tokens: torch.Tensor):
        out = self.model(image, num_tokens)
        points = out["points"]
        height, width = points.shape[1], points.shape[2]
        rows = (torch.arange(height, dtype=points.dtype) + 0.5) / height * 2 - 1
        columns = (torch.arange(width, dtype=points.dtype) + 0.5) / width * 2 - 1
        aspect = columns.new_tensor(1.0) * width / height
        diagonal = torch.sqrt(1 + aspect * aspect)
        v, u = torch.meshgrid(rows / diagonal, columns * aspect / diagonal, indexing="ij")
        depth = 2.0 / (1 - self.tilt * v / self.focal)
        plane = torch.stack([u / self.focal * depth, v / self.focal * depth, depth - self.shift], dim=-1)
        return plane[None] + 1e-3 * points, out["normal"], 0.98 + 0.01 * out["mask"], out["metric_scale"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()
    torch.manual_seed(0)
    network = MoGeModel(**CONFIG).eval()
    network.onnx_compatible_mode = True
    print(f"parameters: {sum(p.numel() for p in network.parameters()) / 1e6:.1f} M")
    model = WithValidGeometry(network).eval()
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
