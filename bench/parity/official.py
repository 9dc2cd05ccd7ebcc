"""The official side of the parity suite: build each family's real architecture with seeded random weights, export
the ONNX file our job will run, and run the official inference pipeline on the same image files.

Runs in a throwaway Python 3.11 environment with torch (never the project's); bench/parity/README.md has the set-up.
Called by bench/parity/run.py as `official.py FAMILY WORK_DIR IMAGE...`; writes WORK_DIR/model.onnx and
WORK_DIR/official.npz (everything the official pipeline returned).

Every parameter of every network is filled with random values (`fill_every_parameter`): initialisation leaves
biases, norm scales, PReLU slopes and position embeddings constant, where no parity could see a mistake.
Where an official pipeline cannot be imported whole, this file says which documented steps it reproduces:
- MoGe-2: dlr-moge's `MoGeModel.infer` itself (fp32), on the ViT-S configuration of bench/export_moge_vits.py.
- Depth Anything 3: depth-anything-3's own `InputProcessor` (upper_bound_resize) and `DepthAnything3Net` (DA3-Small
  configuration, every parameter filled with random values: `fill_every_parameter`), exported by the converter's own
  src/imageforge/converter/da3_export.py (dynamic views, height and width); the high-level `DepthAnything3.inference`
  wrapper is not imported (its export helpers pull in video and 3-D packages), its three steps are called directly:
  preprocess, forward, and reading depth, confidence, extrinsics and intrinsics off the output. torchvision (only its
  ToTensor/Normalize transforms are used) is replaced by a few lines computing the same thing.
- Real-ESRGAN: spandrel's SRVGGNetCompact (general x4v3 configuration) and RealESRGANer.enhance's documented
  processing: whole image (tile=0, its default), RGB in [0, 1] (÷ 65535 for 16-bit), output clamped, alpha run
  through the model as a grey RGB image and turned back into one channel with cv2's BGR2GRAY weights.
- SAM 2.1: the official `sam2` package's `SAM2ImagePredictor` itself on the Hiera Tiny configuration, every
  parameter random; the ONNX pair is the converter's own export (src/imageforge/converter/sam2_export.py).
- BEN2: BEN2.py (PramaLLC/BEN2) is not on PyPI and cannot be fetched here; its documented processing is
  reproduced around a small sigmoid-ended network with BEN2's signature: PIL Lanczos resize to 1024², ToTensor,
  ImageNet mean/std, forward, `postprocess_image` (F.interpolate bilinear to the source size, then min–max,
  × 255 to uint8), `putalpha`. The raw sigmoid matte is saved too.
- BiRefNet: the official repository cannot be installed (no package; its decoder needs torchvision); its
  documented inference (model card + inference.py) is reproduced around `BiRefNetLike`: timm's Swin-T, BiRefNet
  Lite's backbone, with a small decoder, exported with the published names (`input_image` → `output_image`,
  logits), once square and once non-square (BIREFNET_SIZES), and run from that file on both sides.
"""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

import numpy as np

os.environ.setdefault("XFORMERS_DISABLED", "1")
BENCH = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BENCH))

import torch  # noqa: E402
from PIL import Image  # noqa: E402

SEED = 0
MOGE_RESOLUTION_LEVEL = 9  # what debug-moge runs (its arrays are compared)
DA3_PROCESS_RES = 504
BEN2_SIZE = 1024
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def fill_every_parameter(module: torch.nn.Module, seed: int = SEED, floor: float = 0.02) -> torch.nn.Module:
    """Add seeded noise to every parameter, so none keeps a constant initial value (zeros, ones).

    Random initialisation leaves some parameters constant (DA3's position embedding is all zeros, norms are all
    ones, biases zero): a processing step that only touches them is invisible to a random-weight parity. The
    noise's spread is the parameter's own, at least `floor`, so the network's value ranges stay those of its
    initialisation."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in module.parameters():
            spread = max(float(parameter.std()) if parameter.numel() > 1 else 0.0, floor)
            parameter.add_(torch.randn(parameter.shape, generator=generator) * spread)
    return module


def read_rgb(path: Path) -> tuple[np.ndarray, np.ndarray | None]:
    """Float RGB in [0, 1] and alpha (or None) of an 8- or 16-bit PNG, decoded without colour changes."""
    import cv2

    pixels = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    scale = 65535.0 if pixels.dtype == np.uint16 else 255.0
    pixels = pixels.astype(np.float64) / scale
    rgb = pixels[..., 2::-1] if pixels.shape[2] >= 3 else np.repeat(pixels, 3, axis=2)
    alpha = pixels[..., 3] if pixels.shape[2] == 4 else None
    return np.ascontiguousarray(rgb), alpha


# --------------------------------------------------------------------------------------------- MoGe-2


def moge(work: Path, images: list[Path]) -> dict[str, np.ndarray]:
    if "huggingface_hub" not in sys.modules:  # imported at module level only for from_pretrained()
        stub = types.ModuleType("huggingface_hub")
        stub.hf_hub_download = None  # type: ignore[attr-defined]
        sys.modules["huggingface_hub"] = stub
    from export_moge_vits import CONFIG
    from moge.model.v2 import MoGeModel

    class Nudged(MoGeModel):
        """MoGe-2 with a recoverable camera: a tilted plane plus 2 % of the network's points, and a mask that
        is invalid on the left eighth (random heads alone give no valid pixel). Every output still depends on
        the whole network, so focal/shift sampling, masking and normals are exercised on non-planar data."""

        def forward(self, image, num_tokens):
            out = super().forward(image, num_tokens)
            points = out["points"]
            height, width = points.shape[1], points.shape[2]
            rows = (torch.arange(height, dtype=points.dtype) + 0.5) / height * 2 - 1
            columns = (torch.arange(width, dtype=points.dtype) + 0.5) / width * 2 - 1
            aspect = columns.new_tensor(1.0) * width / height
            diagonal = torch.sqrt(1 + aspect * aspect)
            v, u = torch.meshgrid(rows / diagonal, columns * aspect / diagonal, indexing="ij")
            depth = 2.0 / (1 - 0.3 * v / 1.2)
            plane = torch.stack([u / 1.2 * depth, v / 1.2 * depth, depth - 0.5], dim=-1)[None]
            u_full = columns[None, None, :].expand(points.shape[0], height, width)
            mask = torch.where(u_full < -0.75, 0.02, 0.98) + 0.01 * out["mask"]
            return {
                "points": plane + 0.02 * torch.tanh(points),
                "normal": out["normal"],
                "mask": mask,
                "metric_scale": out["metric_scale"],
            }

    torch.manual_seed(SEED)
    model = fill_every_parameter(Nudged(**CONFIG).eval())
    model.onnx_compatible_mode = True
    image = torch.rand(1, 3, 252, 378)
    tokens = torch.tensor(1800, dtype=torch.int64)
    axes = {"image": {0: "batch", 2: "height", 3: "width"}}
    for name in ("points", "normal", "mask"):
        axes[name] = {0: "batch", 1: "height", 2: "width"}
    with torch.no_grad():
        torch.onnx.export(
            model, (image, tokens), str(work / "model.onnx"), input_names=["image", "num_tokens"],
            output_names=["points", "normal", "mask", "metric_scale"], dynamic_axes=axes, opset_version=14,
            dynamo=False,
        )  # fmt: skip
    results: dict[str, np.ndarray] = {}
    # The export alone (the ONNX file against the torch network on one input, level 9's 3600 tokens): the floor
    # under every figure of the whole pipeline, since both sides' processing sits on these two.
    import onnxruntime

    session = onnxruntime.InferenceSession(str(work / "model.onnx"), providers=["CPUExecutionProvider"])
    probe = torch.rand(1, 3, 252, 378, generator=torch.Generator().manual_seed(SEED + 1))
    with torch.no_grad():
        expected = model(probe, torch.tensor(3600, dtype=torch.int64))
    outputs = session.run(None, {"image": probe.numpy(), "num_tokens": np.array(3600, np.int64)})
    exported = dict(zip(("points", "normal", "mask", "metric_scale"), outputs, strict=True))
    results["export_points"], results["export_points_torch"] = exported["points"], expected["points"].numpy()
    results["export_normal"], results["export_normal_torch"] = exported["normal"], expected["normal"].numpy()
    model.onnx_compatible_mode = False
    for index, path in enumerate(images):
        rgb, _ = read_rgb(path)
        tensor = torch.from_numpy(rgb.transpose(2, 0, 1).astype(np.float32))
        out = model.infer(tensor, resolution_level=MOGE_RESOLUTION_LEVEL, use_fp16=False)
        for name, value in out.items():
            results[f"{index}_{name}"] = value.detach().cpu().numpy()
    return results


# ---------------------------------------------------------------------------------------- Real-ESRGAN


def upscale(work: Path, images: list[Path]) -> dict[str, np.ndarray]:
    _stub_torchvision()
    from spandrel.architectures.Compact.__arch.SRVGG import SRVGGNetCompact

    torch.manual_seed(SEED)
    model = SRVGGNetCompact(num_in_ch=3, num_out_ch=3, num_feat=64, num_conv=32, upscale=4, act_type="prelu").eval()
    fill_every_parameter(model)  # PReLU slopes (0.25 each) and biases are constant before this
    with torch.no_grad():
        # Default init fades over 32 layers (residual std 0.03, 3 px reach). Filled and ×1.5: residual std 0.16 and
        # a 17 px reach to 1e-4, as a trained network has (filled and ×1.6 already grows: residual std 0.94, output
        # −2.6…3.6; unfilled and ×2, the earlier network: 0.11 and 15 px).
        for parameter in model.parameters():
            parameter.mul_(1.5)
        axes = {"input": {0: "batch", 2: "height", 3: "width"}, "output": {0: "batch", 2: "height", 3: "width"}}
        torch.onnx.export(
            model, torch.rand(1, 3, 64, 64), str(work / "model.onnx"), input_names=["input"], output_names=["output"],
            dynamic_axes=axes, opset_version=17, dynamo=False,
        )  # fmt: skip

    def enhance(rgb: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            tensor = torch.from_numpy(rgb.transpose(2, 0, 1)[None].astype(np.float32))
            return model(tensor)[0].clamp(0, 1).numpy().transpose(1, 2, 0).astype(np.float64)

    results: dict[str, np.ndarray] = {}
    for index, path in enumerate(images):
        rgb, alpha = read_rgb(path)
        results[f"{index}_rgb"] = enhance(rgb)
        if alpha is not None:
            grey = enhance(np.repeat(alpha[..., None], 3, axis=2))
            results[f"{index}_alpha"] = grey @ np.array([0.299, 0.587, 0.114])  # cv2 BGR2GRAY of the BGR output
            results[f"{index}_alpha_rgb_mean"] = grey.mean(axis=2)  # what a plain channel mean would give
    return results


# --------------------------------------------------------------------------------------------------- BEN2


class Ben2Like(torch.nn.Module):
    """BEN2's signature ([1, 3, 1024, 1024] → sigmoid matte [1, 1, 1024, 1024]) on a small conv encoder-decoder:
    the parity is about the pipeline around the network, which both sides run from the same ONNX file."""

    def __init__(self, width: int = 24):
        super().__init__()
        conv = torch.nn.Conv2d
        self.down = torch.nn.Sequential(
            conv(3, width, 4, stride=4), torch.nn.GELU(), conv(width, width, 3, padding=1), torch.nn.GELU(),
            conv(width, width, 2, stride=2), torch.nn.GELU(), conv(width, width, 3, padding=1), torch.nn.GELU(),
        )  # fmt: skip
        self.head = conv(width, 1, 3, padding=1)
        self.skip = conv(3, 1, 3, padding=1)

    def forward(self, x):
        coarse = torch.nn.functional.interpolate(self.head(self.down(x)), scale_factor=8.0, mode="bilinear")
        return torch.sigmoid(4 * coarse + 2 * self.skip(x))


def ben2(work: Path, images: list[Path]) -> dict[str, np.ndarray]:
    torch.manual_seed(SEED)
    model = fill_every_parameter(Ben2Like().eval())
    with torch.no_grad():
        torch.onnx.export(
            model, torch.rand(1, 3, BEN2_SIZE, BEN2_SIZE), str(work / "model.onnx"), input_names=["input"],
            output_names=["output"], opset_version=17, dynamo=False,
        )  # fmt: skip
    mean = torch.tensor(IMAGENET_MEAN)[:, None, None]
    std = torch.tensor(IMAGENET_STD)[:, None, None]
    results: dict[str, np.ndarray] = {}
    for index, path in enumerate(images):
        original = Image.open(path).convert("RGB")
        resized = original.resize((BEN2_SIZE, BEN2_SIZE), resample=Image.LANCZOS)
        tensor = torch.from_numpy(np.asarray(resized, np.float32).transpose(2, 0, 1) / 255.0)
        with torch.no_grad():
            matte = model(((tensor - mean) / std)[None])
        results[f"{index}_input"] = ((tensor - mean) / std).numpy()
        width, height = original.size
        stretched = torch.nn.functional.interpolate(matte, size=[height, width], mode="bilinear")[0, 0]
        stretched = (stretched - stretched.min()) / (stretched.max() - stretched.min())
        results[f"{index}_raw"] = matte[0, 0].numpy().astype(np.float64)
        results[f"{index}_alpha_float"] = stretched.numpy().astype(np.float64)
        results[f"{index}_alpha_uint8"] = (stretched * 255).numpy().astype(np.uint8)  # BEN2.py's PNG values
    return results


# ----------------------------------------------------------------------------------------------- BiRefNet

BIREFNET_SIZES = ((512, 512), (512, 256))  # (height, width) of the two exports: square and non-square inputs


class BiRefNetLike(torch.nn.Module):
    """BiRefNet's signature on BiRefNet Lite's real backbone: timm's Swin-T (Swin v1 tiny, random weights, window 8
    so both export sizes tile) and a small FPN decoder with a full-resolution skip, returning a list of logits maps
    whose last is the matte, as `BiRefNet.forward` does (no sigmoid inside). The bilateral-reference decoder itself
    needs torchvision's deformable convolution, which cannot be installed here; the parity is about the processing
    around the network, which both sides run on the same weights."""

    def __init__(self, height: int, width: int, channels: int = 64):
        super().__init__()
        import timm

        self.encoder = timm.create_model(
            "swin_tiny_patch4_window7_224", pretrained=False, features_only=True, img_size=(height, width),
            window_size=8,
        )  # fmt: skip
        conv = torch.nn.Conv2d
        self.lateral = torch.nn.ModuleList(conv(c, channels, 1) for c in self.encoder.feature_info.channels())
        self.smooth = conv(channels, channels, 3, padding=1)
        self.head = conv(channels, 1, 3, padding=1)
        self.skip = conv(3, 1, 3, padding=1)

    def forward(self, x):
        interpolate = torch.nn.functional.interpolate
        features = [feature.permute(0, 3, 1, 2) for feature in self.encoder(x)]  # timm's Swin gives NHWC
        y = self.lateral[-1](features[-1])
        for index in range(len(features) - 2, -1, -1):
            y = interpolate(y, size=features[index].shape[-2:], mode="bilinear") + self.lateral[index](features[index])
        coarse = interpolate(self.head(torch.nn.functional.gelu(self.smooth(y))), size=x.shape[-2:], mode="bilinear")
        return [coarse, 4 * coarse + 2 * self.skip(x)]


class LastMap(torch.nn.Module):
    """What the published ONNX files contain: the network's last map only, `input_image` → `output_image`."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)[-1]


def birefnet(work: Path, images: list[Path]) -> dict[str, np.ndarray]:
    """The official inference around the network: the model card's `transforms.Resize((h, w))` (PIL bilinear on the
    8-bit image; torchvision's Resize calls exactly that for a PIL image), ToTensor, ImageNet Normalize,
    `model(x)[-1].sigmoid()`, and inference.py's `F.interpolate(..., mode="bilinear", align_corners=True)` to the
    image size, kept in float."""
    _stub_torchvision()
    mean = torch.tensor(IMAGENET_MEAN)[:, None, None]
    std = torch.tensor(IMAGENET_STD)[:, None, None]
    results: dict[str, np.ndarray] = {}
    for model_index, (height, width) in enumerate(BIREFNET_SIZES):
        torch.manual_seed(SEED)
        model = fill_every_parameter(BiRefNetLike(height, width).eval())
        with torch.no_grad():
            torch.onnx.export(
                LastMap(model), torch.rand(1, 3, height, width), str(work / f"model_{model_index}.onnx"),
                input_names=["input_image"], output_names=["output_image"], opset_version=17, dynamo=False,
            )  # fmt: skip
        # The network both sides run is the exported file: timm's Swin does not trace to an input-independent graph
        # with the legacy exporter (torch vs ONNX: 3e-6 on the traced input, up to 0.49 on another), so the torch
        # module is not the reference; the official processing around the network is.
        import onnxruntime

        session = onnxruntime.InferenceSession(
            str(work / f"model_{model_index}.onnx"), providers=["CPUExecutionProvider"]
        )
        for index, path in enumerate(images):
            original = Image.open(path).convert("RGB")
            resized = original.resize((width, height), resample=Image.BILINEAR)
            tensor = (torch.from_numpy(np.asarray(resized, np.float32).transpose(2, 0, 1) / 255.0) - mean) / std
            logits = session.run(None, {"input_image": tensor[None].numpy()})[0]
            matte = torch.from_numpy(logits).sigmoid()  # model(x)[-1].sigmoid(), [-1] being the file's output
            source_width, source_height = original.size
            alpha = torch.nn.functional.interpolate(
                matte, size=[source_height, source_width], mode="bilinear", align_corners=True
            )[0, 0]
            results[f"{model_index}_{index}_input"] = tensor.numpy()
            results[f"{model_index}_{index}_alpha"] = alpha.numpy().astype(np.float64)
    return results


# ----------------------------------------------------------------------------------- foreground colour


def foreground(work: Path, images: list[Path]) -> dict[str, np.ndarray]:
    """pymatting 1.1.16's `estimate_foreground_ml` with its defaults on each composite (an .npz of `image` and
    `alpha` written by run.py): the reference for our matting/foreground.py."""
    from pymatting import estimate_foreground_ml

    results: dict[str, np.ndarray] = {}
    for index, path in enumerate(images):
        with np.load(path) as composite:
            results[f"{index}_foreground"] = estimate_foreground_ml(composite["image"], composite["alpha"])
    return results


# --------------------------------------------------------------------------------------- Depth Anything 3


def _stub_torchvision() -> None:
    """torchvision is not installable next to the local CPU torch wheel. The code paths used need only ToTensor
    and Normalize (DA3's InputProcessor); spandrel merely imports it for LaMa. Every torchvision module is
    therefore a placeholder whose names are unusable classes, except those two transforms."""
    import importlib.abc
    import importlib.machinery

    if any(isinstance(finder, type) and finder.__name__ == "TorchvisionStub" for finder in sys.meta_path):
        return

    class ToTensor:
        def __call__(self, image):
            return torch.from_numpy(np.asarray(image, dtype=np.float32).transpose(2, 0, 1) / 255.0)

    class Normalize:
        def __init__(self, mean, std):
            self.mean, self.std = torch.tensor(mean)[:, None, None], torch.tensor(std)[:, None, None]

        def __call__(self, tensor):
            return (tensor - self.mean) / self.std

    class Anything(type):  # a placeholder's attributes are placeholders too (timm reads InterpolationMode.NEAREST)
        def __getattr__(cls, name: str):
            return placeholder(name)

    def placeholder(name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return Anything(name, (), {})

    class TorchvisionStub(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        @classmethod
        def find_spec(cls, name, path=None, target=None):
            if name == "torchvision" or name.startswith("torchvision."):
                return importlib.machinery.ModuleSpec(name, cls, is_package=True)
            return None

        @staticmethod
        def create_module(spec):
            module = types.ModuleType(spec.name)
            module.__path__ = []  # type: ignore[attr-defined]
            module.__getattr__ = placeholder  # type: ignore[method-assign]
            if spec.name == "torchvision.transforms":
                module.ToTensor, module.Normalize = ToTensor, Normalize  # type: ignore[attr-defined]
            return module

        @staticmethod
        def exec_module(module):
            return None

    sys.meta_path.insert(0, TorchvisionStub)


def da3_network(name: str = "da3-small") -> torch.nn.Module:
    _stub_torchvision()
    from depth_anything_3.cfg import create_object, load_config
    from depth_anything_3.registry import MODEL_REGISTRY

    torch.manual_seed(SEED)
    net = fill_every_parameter(create_object(load_config(MODEL_REGISTRY[name])).eval())
    with torch.no_grad():  # a random camera decoder gives ~0 field of view; centre it on 60° and no rotation
        net.cam_dec.fc_fov[0].weight.mul_(0.01)
        net.cam_dec.fc_fov[0].bias.fill_(1.05)
        net.cam_dec.fc_qvec.weight.mul_(0.05)
        net.cam_dec.fc_qvec.bias.copy_(torch.tensor([0.0, 0.0, 0.0, 1.0]))
    return net


def da3(work: Path, images: list[Path]) -> dict[str, np.ndarray]:
    net = da3_network()
    sys.path.insert(0, str(BENCH.parent / "src" / "imageforge" / "converter"))
    import da3_export  # the converter's own exporter: dynamic views, height and width

    da3_export.export(net, work / "model.onnx")
    from depth_anything_3.utils.io.input_processor import InputProcessor

    results: dict[str, np.ndarray] = {}
    groups: dict[Path, list[Path]] = {}
    for path in images:  # one clip per folder
        groups.setdefault(path.parent, []).append(path)
    for index, paths in enumerate(groups.values()):
        size = Image.open(paths[0]).size
        batch, _, _ = InputProcessor()([str(path) for path in paths], None, None, DA3_PROCESS_RES, "upper_bound_resize")
        with torch.no_grad():  # the official network, not the export's traceable swaps
            out = net(batch[None].float(), None, None, [], False, False, "saddle_balanced")
        results[f"{index}_source_size"] = np.array(size)
        results[f"{index}_input"] = batch.numpy()
        results[f"{index}_depth"] = out.depth[0].numpy()
        results[f"{index}_depth_conf"] = out.depth_conf[0].numpy()
        results[f"{index}_extrinsics"] = out.extrinsics[0][:, :3, :4].numpy().astype(np.float64)
        results[f"{index}_intrinsics"] = out.intrinsics[0].numpy().astype(np.float64)
    return results


def _sam2_transforms() -> None:
    """torchvision's wheel cannot load next to the local torch (its C operators do not register), and sam2 imports
    it only for `ToTensor`, `Resize` and `Normalize` (sam2/utils/transforms.py, scripted with torch.jit). They are
    given here as what torchvision computes on a float tensor: ToTensor = HWC uint8 to CHW float ÷ 255; Resize =
    `F.interpolate(bilinear, align_corners=False, antialias=True)` (torchvision's `resize` for tensors);
    Normalize = (x − mean) / std."""
    import torch.nn.functional as functional
    from torch import nn

    class ToTensor:
        def __call__(self, image):
            return torch.from_numpy(np.ascontiguousarray(np.asarray(image).transpose(2, 0, 1))).float() / 255.0

    class Resize(nn.Module):
        def __init__(self, size: tuple[int, int]):
            super().__init__()
            self.size = [int(size[0]), int(size[1])]

        def forward(self, image: torch.Tensor) -> torch.Tensor:
            resized = functional.interpolate(
                image[None], size=self.size, mode="bilinear", align_corners=False, antialias=True
            )
            return resized[0]

    class Normalize(nn.Module):
        def __init__(self, mean, std):
            super().__init__()
            self.register_buffer("mean", torch.tensor(mean)[:, None, None])
            self.register_buffer("std", torch.tensor(std)[:, None, None])

        def forward(self, image: torch.Tensor) -> torch.Tensor:
            return (image - self.mean) / self.std

    transforms = types.ModuleType("torchvision.transforms")
    transforms.ToTensor, transforms.Resize, transforms.Normalize = ToTensor, Resize, Normalize
    package = types.ModuleType("torchvision")
    package.transforms = transforms
    sys.modules["torchvision"], sys.modules["torchvision.transforms"] = package, transforms


def sam2(work: Path, images: list[Path]) -> dict[str, np.ndarray]:
    """SAM 2.1 Hiera Tiny with every parameter and buffer random (the converter's `random_checkpoint`), exported by
    the converter's own src/imageforge/converter/sam2_export.py, and `SAM2ImagePredictor` itself (set_image, then
    predict per prompt of WORK/prompts.json: points, labels, box, multimask_output)."""
    import json

    sys.path.insert(0, str(BENCH.parent / "src"))
    _sam2_transforms()
    from sam2.sam2_image_predictor import SAM2ImagePredictor

    from imageforge.converter import sam2_export

    checkpoint = sam2_export.random_checkpoint("tiny", SEED + 3, work / "random-weights.pt")
    model = sam2_export.build_model("tiny", checkpoint)
    encoder, decoder = sam2_export.export(model, work)
    check = sam2_export.verify(model, encoder, decoder)
    print(f"  export check against torch: {check}")
    predictor = SAM2ImagePredictor(model)
    prompts = json.loads((work / "prompts.json").read_text())
    results: dict[str, np.ndarray] = {}
    for index, image in enumerate(images):
        predictor.set_image(np.asarray(Image.open(image).convert("RGB")))
        for number, prompt in enumerate(prompts):
            points = np.asarray([point[:2] for point in prompt["points"]], np.float32).reshape(-1, 2)
            labels = np.asarray([point[2] for point in prompt["points"]], np.int32)
            box = None if prompt.get("box") is None else np.asarray(prompt["box"], np.float32)
            masks, scores, _ = predictor.predict(
                point_coords=points if len(points) else None,
                point_labels=labels if len(points) else None,
                box=box,
                multimask_output=prompt["multimask"],
            )
            results[f"{index}_{number}_masks"] = masks.astype(bool)
            results[f"{index}_{number}_scores"] = scores.astype(np.float32)
    return results


FAMILIES = {
    "moge": moge,
    "upscale": upscale,
    "ben2": ben2,
    "birefnet": birefnet,
    "foreground": foreground,
    "da3": da3,
    "sam2": sam2,
}


def main() -> None:
    family, work, *images = sys.argv[1:]
    work_dir = Path(work)
    work_dir.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    results = FAMILIES[family](work_dir, [Path(image) for image in images])
    np.savez(work_dir / "official.npz", **results)
    print(f"{family}: official pipeline done ({len(results)} arrays)")


if __name__ == "__main__":
    main()
