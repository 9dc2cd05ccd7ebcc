"""Export architecture-faithful image models with random weights, for bench/image_jobs.py.

Runs once in a throwaway Python 3.11 environment (torch exists here only as a local CPU wheel for 3.11;
spandrel is installed without its torchvision dependency, which only its LaMa architecture imports):

    uv venv --seed --python 3.11 .venv-bench-image
    .venv-bench-image/bin/python -m pip install torch==2.13.0 onnx safetensors einops typing_extensions
    .venv-bench-image/bin/python -m pip install --no-deps spandrel
    .venv-bench-image/bin/python bench/export_image_models.py

Writes into bench/models/ (git-ignored):
- realesr-general-x4v3.onnx: spandrel's SRVGGNetCompact as configured for Real-ESRGAN general x4v3
  (64 features, 32 convolutions, PReLU, ×4: 1.21 M parameters), `input` [batch, 3, h, w] → `output`.
- realesrgan-x4plus.onnx: spandrel's RRDBNet as for RealESRGAN_x4plus (64 features, 23 RRDB blocks, ×4:
  16.7 M parameters), same signature.
- ben2-shaped.onnx: a network of our own with BEN2's signature (`input` float32 [1, 3, 1024, 1024] →
  `output` float16 [1, 1, 1024, 1024]) and the cost class of its Swin-B backbone: ConvNeXt-B stages
  (depths 3-3-27-3, widths 128-256-512-1024, ≈ Swin-B in parameters and FLOPs) and an FPN decoder
  with a sigmoid matte. BEN2's real decoder (MVANet) is not reproduced; the timing class is.
- ben2-shaped-fp16.onnx: the same network and weights in fp16 throughout (float32 input cast inside,
  fp16 output), the precision layout of the published `onnx/model_fp16.onnx`; bench/fp16_cpu.py compares
  it, its fp32 twin and the server's fp32 CPU copy of it. `--ben2-only` exports just these two,
  `--upscalers-only` the other two.
Weights are random: timings are real, outputs meaningless.
"""

from __future__ import annotations

import copy
import importlib.abc
import importlib.machinery
import sys
import types
from pathlib import Path

MODELS = Path(__file__).resolve().parent / "models"


class _TorchvisionStub(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """spandrel imports every architecture on import; only LaMa needs torchvision, which we never use."""

    def find_spec(self, name, path, target=None):
        if name == "torchvision" or name.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = _placeholder
        return module

    def exec_module(self, module):
        return None


def _placeholder(attribute: str) -> type:
    if attribute.startswith("__"):
        raise AttributeError(attribute)
    return type(attribute, (), {})


sys.meta_path.insert(0, _TorchvisionStub())

import torch  # noqa: E402
from torch import nn  # noqa: E402


def export_upscalers() -> None:
    from spandrel.architectures.Compact.__arch.SRVGG import SRVGGNetCompact
    from spandrel.architectures.ESRGAN.__arch.RRDB import RRDBNet

    models = {
        "realesr-general-x4v3.onnx": SRVGGNetCompact(
            num_in_ch=3, num_out_ch=3, num_feat=64, num_conv=32, upscale=4, act_type="prelu"
        ),
        "realesrgan-x4plus.onnx": RRDBNet(in_nc=3, out_nc=3, num_filters=64, num_blocks=23, scale=4),
    }
    for name, model in models.items():
        model.eval()
        dummy = torch.rand(1, 3, 64, 64)
        axes = {"input": {0: "batch", 2: "height", 3: "width"}, "output": {0: "batch", 2: "height", 3: "width"}}
        torch.onnx.export(
            model, dummy, str(MODELS / name), input_names=["input"], output_names=["output"],
            dynamic_axes=axes, opset_version=17, dynamo=False,
        )  # fmt: skip
        print(name, sum(parameter.numel() for parameter in model.parameters()), "parameters")


class Block(nn.Module):
    """ConvNeXt block: depthwise 7×7, channel norm, 4× MLP, residual."""

    def __init__(self, width: int):
        super().__init__()
        self.depthwise = nn.Conv2d(width, width, 7, padding=3, groups=width)
        self.norm = nn.GroupNorm(1, width)
        self.expand = nn.Conv2d(width, 4 * width, 1)
        self.project = nn.Conv2d(4 * width, width, 1)

    def forward(self, x):
        return x + self.project(nn.functional.gelu(self.expand(self.norm(self.depthwise(x)))))


class Ben2Shaped(nn.Module):
    def __init__(self, depths=(3, 3, 27, 3), widths=(128, 256, 512, 1024), decoder=128):
        super().__init__()
        self.stem = nn.Conv2d(3, widths[0], 4, stride=4)
        stages, downs = [], []
        for index, (depth, width) in enumerate(zip(depths, widths, strict=True)):
            if index:
                downs.append(nn.Conv2d(widths[index - 1], width, 2, stride=2))
            stages.append(nn.Sequential(*(Block(width) for _ in range(depth))))
        self.stages, self.downs = nn.ModuleList(stages), nn.ModuleList(downs)
        self.lateral = nn.ModuleList(nn.Conv2d(width, decoder, 1) for width in widths)
        self.refine = nn.Sequential(
            nn.Conv2d(decoder, decoder, 3, padding=1), nn.GELU(), nn.Conv2d(decoder, decoder, 3, padding=1), nn.GELU()
        )
        self.head = nn.Conv2d(decoder, 1, 3, padding=1)

    def forward(self, x):
        features = []
        y = self.stem(x)
        for index, stage in enumerate(self.stages):
            if index:
                y = self.downs[index - 1](y)
            y = stage(y)
            features.append(y)
        merged = self.lateral[-1](features[-1])
        for index in range(len(features) - 2, -1, -1):
            merged = nn.functional.interpolate(merged, scale_factor=2.0, mode="nearest") + self.lateral[index](
                features[index]
            )
        matte = self.head(self.refine(merged))
        matte = nn.functional.interpolate(matte, scale_factor=4.0, mode="bilinear", align_corners=False)
        return torch.sigmoid(matte).half()


class HalfPrecision(nn.Module):
    """The published BEN2 file's precision layout: float32 input, fp16 weights and arithmetic, fp16 output."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model.half()

    def forward(self, x):
        return self.model(x.half())


def export_ben2() -> None:
    """ben2-shaped.onnx (fp32 weights) and its fp16 twin ben2-shaped-fp16.onnx (the same weights, halved)."""
    model = Ben2Shaped().eval()
    twins = {"ben2-shaped.onnx": model, "ben2-shaped-fp16.onnx": HalfPrecision(copy.deepcopy(model)).eval()}
    for name, network in twins.items():
        torch.onnx.export(
            network, torch.rand(1, 3, 1024, 1024), str(MODELS / name), input_names=["input"],
            output_names=["output"], opset_version=17, dynamo=False,
        )  # fmt: skip
        print(name, sum(parameter.numel() for parameter in model.parameters()), "parameters")


if __name__ == "__main__":
    MODELS.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    with torch.no_grad():
        if "--ben2-only" not in sys.argv:
            export_upscalers()
        if "--upscalers-only" not in sys.argv:
            export_ben2()
