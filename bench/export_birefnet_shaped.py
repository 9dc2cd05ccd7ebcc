"""Export BiRefNet-shaped networks with random weights: the published files' signature and the real backbones' cost.

For bench/birefnet_cost.py (one run of each against the BEN2-shaped network) and bench/memory_at_limit.py
(`--model-file`). Runs in the throwaway torch environment of bench/parity/README.md (Python 3.11, the local CPU
torch wheel; timm installed with --no-deps, torchvision stubbed as bench/parity/official.py does):

    /work/venvs/parity/bin/python bench/export_birefnet_shaped.py --out /tmp/birefnet-shaped            # all
    /work/venvs/parity/bin/python bench/export_birefnet_shaped.py --out /tmp/birefnet-shaped --only lite

Writes, outside the repository (the files are 0.2-1.1 GB):
- birefnet-lite-shaped.onnx: Swin-T backbone (embed 96, depths 2-2-6-2, heads 3-6-12-24, window 7), 1024²;
- birefnet-general-shaped.onnx: Swin-L backbone (embed 192, depths 2-2-18-2, heads 6-12-24-48, window 12), 1024²;
- birefnet-hr-shaped.onnx: the same Swin-L network at 2048² (BiRefNet HR and HR-matting are one architecture,
  the published files differ by 86 bytes; one export stands for both).
Each: `input_image` float32 [1, 3, S, S] → `output_image` float32 [1, 1, S, S], logits (no sigmoid), static shapes,
opset 17, the published files' signature (bench/parity/official.py exports the same names).

What follows BiRefNet (ZhengPeng7/BiRefNet, models/birefnet.py and config.py; facts read, code our own):
- `mul_scl_ipt = 'cat'`: the backbone runs twice, on the image and on the image at half size, and each of the four
  feature maps is concatenated with the half-size pass's, upsampled (so the decoder's lateral widths are doubled);
- `cxt_num = 3`: the three shallower maps, resized to the deepest, are concatenated to it;
- the squeeze block (`BasicDecBlk_x1`) on that concatenation; the decoder's four BasicDecBlk (3×3 conv to 64
  channels, the ASPP block, 3×3 conv out, batch norms), 1×1 lateral blocks, the gradient-attention convolutions
  that run at inference (`out_ref`), and `dec_ipt` with `dec_ipt_split`: the image cut into patches the size of
  each decoder level, stacked as channels, through two 3×3 convolutions (SimpleConvs) and concatenated;
  a 1×1 convolution to one logits map at full size.
What does not: the ASPP's convolutions are deformable in BiRefNet (torchvision's deform_conv2d, which has no
ONNX Runtime CPU kernel in the opset the files use and no torchvision here): ours compute the same offset and
modulator convolutions and the same regular convolution, but sample on the regular grid (the bilinear gathers
of a deformable convolution are not reproduced; at the decoder's 64-channel ASPP input they are a small share).
The backbone is timm's Swin v1 (padding to whole windows, shifted-window masks computed from the shape), not
BiRefNet's copy of the original Swin code; same layers and sizes. Weights are random: timings are real,
outputs meaningless.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional  # noqa: E402

# name → (timm architecture, Swin settings, lateral widths of its four stages, input side)
SWIN_T = {"embed_dim": 96, "depths": (2, 2, 6, 2), "num_heads": (3, 6, 12, 24), "window_size": 7}
SWIN_L = {"embed_dim": 192, "depths": (2, 2, 18, 2), "num_heads": (6, 12, 24, 48), "window_size": 12}
MODELS = {
    "lite": ("birefnet-lite-shaped.onnx", SWIN_T, 1024),
    "general": ("birefnet-general-shaped.onnx", SWIN_L, 1024),
    "hr": ("birefnet-hr-shaped.onnx", SWIN_L, 2048),
}
ASPP_CHANNELS = 256  # BiRefNet's ASPP branch width
INTER_CHANNELS = 64  # dec_channels_inter = 'fixed'


def upsample(x: torch.Tensor, size) -> torch.Tensor:
    return functional.interpolate(x, size=size, mode="bilinear", align_corners=True)


class ModulatedConv(nn.Module):
    """The arithmetic of a modulated deformable convolution on the regular grid: the offset (2k²) and modulator (k²)
    convolutions are computed and feed the result, the k×k convolution itself samples without offsets."""

    def __init__(self, in_channels: int, out_channels: int, kernel: int):
        super().__init__()
        padding = kernel // 2
        self.offset = nn.Conv2d(in_channels, 2 * kernel * kernel, kernel, padding=padding)
        self.modulator = nn.Conv2d(in_channels, kernel * kernel, kernel, padding=padding)
        self.regular = nn.Conv2d(in_channels, out_channels, kernel, padding=padding, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate = 2.0 * torch.sigmoid(self.modulator(x)).mean(dim=1, keepdim=True)
        return self.regular(x) * gate + self.offset(x).mean(dim=1, keepdim=True)


class Aspp(nn.Module):
    """A 1×1 branch, three branches of kernels 1, 3 and 7, the pooled image, joined and projected back."""

    def __init__(self, channels: int):
        super().__init__()
        self.branches = nn.ModuleList(
            nn.Sequential(ModulatedConv(channels, ASPP_CHANNELS, k), nn.BatchNorm2d(ASPP_CHANNELS), nn.ReLU())
            for k in (1, 1, 3, 7)
        )
        self.pooled = nn.Sequential(
            nn.AdaptiveAvgPool2d(1), nn.Conv2d(channels, ASPP_CHANNELS, 1, bias=False), nn.BatchNorm2d(ASPP_CHANNELS),
            nn.ReLU(),
        )  # fmt: skip
        self.project = nn.Sequential(
            nn.Conv2d(ASPP_CHANNELS * 5, channels, 1, bias=False), nn.BatchNorm2d(channels), nn.ReLU()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outputs = [branch(x) for branch in self.branches]
        outputs.append(upsample(self.pooled(x), x.shape[-2:]))
        return self.project(torch.cat(outputs, dim=1))


class DecoderBlock(nn.Module):
    """3×3 conv to 64 channels, batch norm, ReLU, the ASPP block, 3×3 conv out, batch norm."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.inner = nn.Sequential(
            nn.Conv2d(in_channels, INTER_CHANNELS, 3, padding=1), nn.BatchNorm2d(INTER_CHANNELS), nn.ReLU(),
            Aspp(INTER_CHANNELS), nn.Conv2d(INTER_CHANNELS, out_channels, 3, padding=1), nn.BatchNorm2d(out_channels),
        )  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x)


class ImagePatches(nn.Module):
    """The image cut into patches the size of a decoder level, stacked as channels, then two 3×3 convolutions."""

    def __init__(self, patches: int, out_channels: int):
        super().__init__()
        self.convs = nn.Sequential(
            nn.Conv2d(3 * patches, INTER_CHANNELS, 3, padding=1), nn.Conv2d(INTER_CHANNELS, out_channels, 3, padding=1)
        )

    def forward(self, image: torch.Tensor, size) -> torch.Tensor:
        batch, channels, height, width = image.shape
        rows, columns = height // size[0], width // size[1]
        stacked = image.reshape(batch, channels, rows, size[0], columns, size[1]).permute(0, 4, 2, 1, 3, 5)
        return self.convs(stacked.reshape(batch, columns * rows * channels, size[0], size[1]))


class BiRefNetShaped(nn.Module):
    def __init__(self, swin: dict, side: int):
        super().__init__()
        import timm

        self.backbone = timm.create_model(
            "swin_base_patch4_window7_224", pretrained=False, features_only=True, img_size=(side, side),
            strict_img_size=False, **swin,
        )  # fmt: skip
        widths = [2 * width for width in self.backbone.feature_info.channels()[::-1]]  # deepest first, doubled
        context = sum(widths[1:])
        self.squeeze = DecoderBlock(widths[0] + context, widths[0])
        self.patches = nn.ModuleList(
            [
                ImagePatches(2**10, widths[0] // 8),
                ImagePatches(2**8, widths[0] // 8),
                ImagePatches(2**6, widths[1] // 8),
                ImagePatches(2**4, widths[2] // 8),
                ImagePatches(1, widths[3] // 8),
            ]
        )
        self.blocks = nn.ModuleList(
            [
                DecoderBlock(widths[0] + widths[0] // 8, widths[1]),
                DecoderBlock(widths[1] + widths[0] // 8, widths[2]),
                DecoderBlock(widths[2] + widths[1] // 8, widths[3]),
                DecoderBlock(widths[3] + widths[2] // 8, widths[3] // 2),
            ]
        )
        self.laterals = nn.ModuleList(nn.Conv2d(width, width, 1) for width in widths[1:])
        self.gradient = nn.ModuleList(
            nn.Sequential(nn.Conv2d(width, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.Conv2d(16, 1, 1))
            for width in (widths[1], widths[2], widths[3])
        )
        self.out = nn.Conv2d(widths[3] // 2 + widths[3] // 8, 1, 1)

    def encode(self, x: torch.Tensor) -> list[torch.Tensor]:
        full = [feature.permute(0, 3, 1, 2) for feature in self.backbone(x)]  # timm's Swin gives NHWC
        half_input = upsample(x, (x.shape[-2] // 2, x.shape[-1] // 2))
        half = [feature.permute(0, 3, 1, 2) for feature in self.backbone(half_input)]
        maps = [torch.cat([f, upsample(h, f.shape[-2:])], dim=1) for f, h in zip(full, half, strict=True)]
        deepest = maps[3]
        maps[3] = torch.cat([*(upsample(m, deepest.shape[-2:]) for m in maps[:3]), deepest], dim=1)
        return maps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x1, x2, x3, x4 = self.encode(x)
        x4 = self.squeeze(x4)
        p = torch.cat([x4, self.patches[0](x, x4.shape[-2:])], dim=1)
        for level, (skip, lateral) in enumerate(zip((x3, x2, x1), self.laterals, strict=True)):
            p = self.blocks[level](p)
            p = p * torch.sigmoid(self.gradient[level](p))
            p = upsample(p, skip.shape[-2:]) + lateral(skip)
            p = torch.cat([p, self.patches[level + 1](x, skip.shape[-2:])], dim=1)
        p = upsample(self.blocks[3](p), x.shape[-2:])
        p = torch.cat([p, self.patches[4](x, x.shape[-2:])], dim=1)
        return self.out(p)


def export(name: str, out: Path) -> None:
    from parity.official import _stub_torchvision

    _stub_torchvision()
    filename, swin, side = MODELS[name]
    torch.manual_seed(0)
    model = BiRefNetShaped(swin, side).eval()
    parameters = sum(parameter.numel() for parameter in model.parameters())
    backbone = sum(parameter.numel() for parameter in model.backbone.parameters())
    started = time.perf_counter()
    with torch.no_grad():
        torch.onnx.export(
            model, torch.rand(1, 3, side, side), str(out / filename), input_names=["input_image"],
            output_names=["output_image"], opset_version=17, dynamo=False,
        )  # fmt: skip
    size = (out / filename).stat().st_size
    print(
        f"{filename}: {parameters / 1e6:.1f} M parameters ({backbone / 1e6:.1f} M backbone), {size / 1e6:.0f} MB, "
        f"exported in {time.perf_counter() - started:.0f} s",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the .onnx files (outside the repo)")
    parser.add_argument("--only", default="", help="comma-separated names: " + ", ".join(MODELS))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    names = [name for name in args.only.split(",") if name] or list(MODELS)
    for name in names:
        export(name, args.out)


if __name__ == "__main__":
    main()
