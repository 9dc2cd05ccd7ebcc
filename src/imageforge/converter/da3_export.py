"""Export Depth Anything 3 (Small/Base) with its camera decoder to ONNX: dynamic views, height and width.

Runs only inside a throwaway converter environment (Python 3.11 with torch CPU, depth-anything-3, safetensors);
the server and the add-on never import it. Usage:

    python da3_export.py --model da3-small --weights model.safetensors --output da3_small_cameras.onnx

prints one JSON line: the output's SHA-256 and size, and the ONNX-versus-torch check on sizes other than the
traced one. With `--progress`, JSON lines `{"progress": fraction, "message": text}` come before it (the server's
convert-model job streams them into its progress). The output appears only once it passed the check: the
export is written to `<output>.part`, renamed when the check passes and deleted when it fails.

The ONNX file: input `image` float32 [1, views, 3, height, width] (ImageNet-normalised, sides multiples of 14,
longest side at most the traced 504) → `depth`, `depth_conf` [1, views, height, width], `extrinsics`
[1, views, 3, 4] (world → camera, OpenCV axes), `intrinsics` [1, views, 3, 3] in the input's pixels.

DA3's code turns image sizes into Python numbers in a few places, which a trace freezes; `traceable()` swaps
those for the same arithmetic on traced sizes while exporting:
- the rotary position grid (torch.cartesian_prod, which also has no ONNX export) → a meshgrid;
- the UV grid of the DPT head's positional embedding (linspace between Python floats) → arange arithmetic;
- `int()` of sizes in the head's upsampling → kept as tensors;
- the intrinsics, computed from H and W as Python numbers → from the input's shape.

Two swaps keep the official behaviour that a trace would otherwise freeze:
- the position-embedding interpolation. DA3 (as DINOv2) resizes its 37 × 37 table bicubically by the scale
  factor (patches + 0.1) / 37, a Python float a trace freezes. Interpolating by output size instead (what
  MoGe-2's `onnx_compatible_mode` does) samples other positions; the swap computes the official samples as two
  interpolation matrices built from the traced size (PyTorch's cubic kernel, A = −0.75, borders clamped), so
  the table the network sees is the official one at every size.
- the reference-view selection. DA3 picks a reference view and moves it first only for three or more views
  (`THRESH_FOR_REF_SELECTION`); a trace (made with three views) keeps the selection for every view count. The
  swap makes the selected index 0 (no reordering) below three views, inside the graph, so two-view runs are
  the official ones.

The file's metadata says so (`imageforge.da3_export`: EXPORT_REVISION): the server's adapter refuses two-view
runs through a camera export without it (an earlier conversion reorders them).
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import hashlib
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import torch

MODELS = {"da3-small", "da3-base"}
EXPORT_REVISION = "2"  # 2: reference view gated below three views, official position-embedding samples
REVISION_KEY = "imageforge.da3_export"
REFERENCE_VIEWS = 3  # DA3's THRESH_FOR_REF_SELECTION: fewer views are never reordered
CUBIC_A = -0.75  # PyTorch's bicubic kernel
TRACE_VIEWS = 3
TRACE_SIZE = (280, 504)  # (height, width): the official 16:9 size; the rotary table then spans 36 patches
OUTPUTS = ("depth", "depth_conf", "extrinsics", "intrinsics")


def _keep_tensor_int(value):
    """`int()` that leaves a traced size a tensor (rounded towards zero like int), so the trace stays dynamic."""
    if isinstance(value, torch.Tensor):
        return value.to(torch.int64)
    return builtins.int(value)


def _uv_grid(width, height, aspect_ratio=None, dtype=None, device=None):
    """DA3's create_uv_grid (pixel-centre UVs spanning ±aspect/diagonal, ±1/diagonal) on traced sizes."""
    width_t = torch.as_tensor(width, dtype=torch.float32)
    height_t = torch.as_tensor(height, dtype=torch.float32)
    aspect = width_t / height_t if aspect_ratio is None else torch.as_tensor(aspect_ratio, dtype=torch.float32)
    diagonal = torch.sqrt(aspect * aspect + 1.0)
    columns = torch.arange(width, dtype=torch.float32, device=device)
    rows = torch.arange(height, dtype=torch.float32, device=device)
    x = aspect / diagonal * ((2 * columns + 1) / width_t - 1)
    y = 1.0 / diagonal * ((2 * rows + 1) / height_t - 1)
    u, v = torch.meshgrid(x, y, indexing="xy")
    return torch.stack((u, v), dim=-1).to(dtype or torch.float32)


def _positions(self, batch_size, height, width, device):
    rows, columns = torch.arange(height, device=device), torch.arange(width, device=device)
    grid = torch.stack(torch.meshgrid(rows, columns, indexing="ij"), dim=-1).reshape(1, -1, 2)
    return grid.expand(batch_size, -1, -1).clone()


def _cubic_matrix(out_size, in_size: int, scale):
    """[out, in] weights of PyTorch's bicubic resize (align_corners False) by `scale` (output / input), borders
    clamped, on a traced output size: output i samples input (i + 0.5) / scale − 0.5, as upsample_bicubic2d."""
    position = (torch.arange(out_size, dtype=torch.float32) + 0.5) / scale - 0.5
    floor = torch.floor(position)
    t = position - floor
    a = CUBIC_A

    def near(x):  # |x| ≤ 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    weights = torch.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], dim=-1)  # [out, 4]
    taps = floor.to(torch.int64)[:, None] + torch.arange(-1, 3)[None, :]
    taps = torch.clamp(taps, 0, in_size - 1)
    columns = torch.arange(in_size)[None, None, :]
    return ((taps[..., None] == columns).to(torch.float32) * weights[..., None]).sum(dim=1)  # [out, in]


def _interpolate_pos_encoding(self, x, w, h):
    """The backbone's position-embedding resize by DA3's own scale factor ((patches + offset) / side), on traced
    sizes (DA3 names the height `w` here)."""
    previous_dtype = x.dtype
    count = self.pos_embed.shape[1] - 1
    side = builtins.int(count**0.5)
    pos_embed = self.pos_embed.float()
    patches = pos_embed[0, 1:].reshape(side, side, -1)  # [rows, columns, channels]
    rows_out = torch.as_tensor(w, dtype=torch.int64) // self.patch_size
    columns_out = torch.as_tensor(h, dtype=torch.int64) // self.patch_size
    offset = self.interpolate_offset
    rows = _cubic_matrix(rows_out, side, (rows_out.to(torch.float32) + offset) / side)
    columns = _cubic_matrix(columns_out, side, (columns_out.to(torch.float32) + offset) / side)
    resized = torch.einsum("ri,ijc,sj->rsc", rows, patches, columns).reshape(1, -1, pos_embed.shape[-1])
    return torch.cat((pos_embed[:, :1], resized), dim=1).to(previous_dtype)


def _gated_reference_view(select):
    """DA3's reference-view selection, answering view 0 (no reordering) below REFERENCE_VIEWS views in the graph."""

    def select_reference_view(x, strategy="saddle_balanced"):
        chosen = select(x, strategy=strategy)
        views = torch._shape_as_tensor(x)[1]
        return torch.where(views >= REFERENCE_VIEWS, chosen, torch.zeros_like(chosen))

    return select_reference_view


@contextlib.contextmanager
def traceable() -> Iterator[None]:
    """Swap DA3's size-freezing spots for traceable ones while exporting; restores them afterwards."""
    from depth_anything_3.model import dualdpt
    from depth_anything_3.model.dinov2 import vision_transformer
    from depth_anything_3.model.dinov2.layers import rope
    from depth_anything_3.model.utils import head_utils

    swaps = [
        (vision_transformer, "select_reference_view", _gated_reference_view(vision_transformer.select_reference_view)),
        (rope.PositionGetter, "__call__", _positions),
        (vision_transformer.DinoVisionTransformer, "interpolate_pos_encoding", _interpolate_pos_encoding),
        (head_utils, "create_uv_grid", _uv_grid),
        (dualdpt, "create_uv_grid", _uv_grid),
        (head_utils, "int", _keep_tensor_int),
        (dualdpt, "int", _keep_tensor_int),
    ]
    saved = [(owner, name, owner.__dict__.get(name, None)) for owner, name, _ in swaps]
    try:
        for owner, name, replacement in swaps:
            setattr(owner, name, replacement)
        yield
    finally:
        for owner, name, original in saved:
            if original is None:
                delattr(owner, name)
            else:
                setattr(owner, name, original)


class CameraExport(torch.nn.Module):
    """DA3's network with its camera decoder as one module: image → depth, confidence, extrinsics, intrinsics."""

    def __init__(self, net: torch.nn.Module):
        super().__init__()
        self.net = net

    def forward(self, image: torch.Tensor):
        from depth_anything_3.model.utils.transform import quat_to_mat

        feats, _ = self.net.backbone(image, cam_token=None, export_feat_layers=[], ref_view_strategy="saddle_balanced")
        height, width = image.shape[-2], image.shape[-1]
        out = self.net.head(feats, height, width, patch_start_idx=0)
        pose = self.net.cam_dec(feats[-1][1])  # [1, N, 9]: translation, quaternion (xyzw), field of view (h, w)
        rotation = quat_to_mat(pose[..., 3:7]).transpose(-1, -2)  # camera → world [R | t] inverted: [Rᵀ | −Rᵀt]
        translation = -(rotation @ pose[..., :3, None])
        size = torch._shape_as_tensor(image)[-2:].to(pose.dtype)
        fy = size[0] / 2 / torch.clamp(torch.tan(pose[..., 7] / 2), min=1e-6)
        fx = size[1] / 2 / torch.clamp(torch.tan(pose[..., 8] / 2), min=1e-6)
        zero, one = torch.zeros_like(fx), torch.ones_like(fx)
        matrix = torch.stack([fx, zero, zero + size[1] / 2, zero, fy, zero + size[0] / 2, zero, zero, one], dim=-1)
        views = image.shape[1]
        return (
            out.depth.reshape(1, views, height, width),
            out.depth_conf.reshape(1, views, height, width),
            torch.cat([rotation, translation], dim=-1),
            matrix.reshape(1, views, 3, 3),
        )


def build_network(model: str, weights: Path | None = None) -> torch.nn.Module:
    """DA3's network from the package's own configuration, with the official weights when given."""
    from depth_anything_3.cfg import create_object, load_config
    from depth_anything_3.registry import MODEL_REGISTRY

    if model not in MODELS:
        raise SystemExit(f"{model} is not offered (Apache-2.0 models only: {', '.join(sorted(MODELS))}).")
    net = create_object(load_config(MODEL_REGISTRY[model])).eval()
    if weights is not None:
        from safetensors.torch import load_file

        state = load_file(str(weights))
        state = {key.removeprefix("model."): value for key, value in state.items()}  # the hub file wraps the net
        missing, unexpected = net.load_state_dict(state, strict=False)
        if missing or unexpected:
            raise SystemExit(f"The weights do not fit {model}: {len(missing)} missing, {len(unexpected)} unexpected.")
    return net


def mark_revision(path: Path) -> None:
    """Record EXPORT_REVISION in the ONNX file's metadata (what the server's adapter reads)."""
    import onnx

    model = onnx.load(str(path))
    kept = [entry for entry in model.metadata_props if entry.key != REVISION_KEY]
    del model.metadata_props[:]
    model.metadata_props.extend(kept)
    model.metadata_props.add(key=REVISION_KEY, value=EXPORT_REVISION)
    onnx.save(model, str(path))


def export(net: torch.nn.Module, output: Path) -> CameraExport:
    module = CameraExport(net).eval()
    axes = {"image": {1: "views", 3: "height", 4: "width"}}
    for name in ("depth", "depth_conf"):
        axes[name] = {1: "views", 2: "height", 3: "width"}
    for name in ("extrinsics", "intrinsics"):
        axes[name] = {1: "views"}
    sample = torch.randn(1, TRACE_VIEWS, 3, *TRACE_SIZE)
    with traceable(), torch.no_grad():
        torch.onnx.export(
            module, (sample,), str(output), input_names=["image"], output_names=list(OUTPUTS), dynamic_axes=axes,
            opset_version=17, dynamo=False,
        )  # fmt: skip
    mark_revision(output)
    return module


# None is the traced one. Two views are checked in both orders: DA3's reference-view rule would pick the same
# picture in both, so one of them shows a reordering the official code (no selection below three) never makes.
CHECK_SHAPES = [(1, 3, 3, 504, 504), (1, 4, 3, 280, 504), (1, 3, 3, 378, 504), (1, 2, 3, 280, 504)]


def say(fraction: float, message: str) -> None:
    """A progress line for whoever runs the exporter (only with --progress)."""
    print(json.dumps({"progress": round(fraction, 3), "message": message}), flush=True)


def verify(
    module: CameraExport,
    output: Path,
    shapes: Sequence[tuple[int, ...]],
    report: Callable[[int, str], None] | None = None,
) -> dict[str, float]:
    """Largest error of the ONNX file against torch (in traceable mode) per output, relative to its range."""
    import onnxruntime

    session = onnxruntime.InferenceSession(str(output), providers=["CPUExecutionProvider"])
    worst = dict.fromkeys(OUTPUTS, 0.0)
    generator = torch.Generator().manual_seed(0)
    for number, shape in enumerate(shapes, start=1):
        if report is not None:
            views, height, width = shape[1], shape[3], shape[4]
            report(number, f"Checking the ONNX file against torch ({number}/{len(shapes)}: {views} × {width}×{height})")
        image = torch.randn(*shape, generator=generator)
        orders = [image] if shape[1] >= REFERENCE_VIEWS else [image, image.flip(1)]
        for views in orders:
            with traceable(), torch.no_grad():
                expected = [value.numpy() for value in module(views)]
            got = session.run(list(OUTPUTS), {"image": views.numpy()})
            for name, want, have in zip(OUTPUTS, expected, got, strict=True):
                if want.shape != have.shape:
                    raise SystemExit(f"ONNX {name} has shape {have.shape} for input {shape}; torch gives {want.shape}.")
                error = float(np.abs(want - have).max() / max(float(np.abs(want).max()), 1e-12))
                worst[name] = max(worst[name], error)
    for shape in shapes:
        worst["position_table"] = max(worst.get("position_table", 0.0), position_table_error(module, *shape[3:]))
    return worst


def position_table_error(module: torch.nn.Module, height: int, width: int) -> float:
    """Largest error of the swapped position-embedding resize against DA3's own, relative to the table's range."""
    from depth_anything_3.model.dinov2 import vision_transformer

    backbone = next(m for m in module.modules() if isinstance(m, vision_transformer.DinoVisionTransformer))
    tokens = torch.zeros(1, (height // backbone.patch_size) * (width // backbone.patch_size) + 1, backbone.embed_dim)
    with torch.no_grad():
        official = vision_transformer.DinoVisionTransformer.interpolate_pos_encoding(backbone, tokens, height, width)
        ours = _interpolate_pos_encoding(backbone, tokens, height, width)
    return float((official - ours).abs().max() / max(float(official.abs().max()), 1e-12))


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, choices=sorted(MODELS))
    parser.add_argument("--weights", type=Path, help="the official model.safetensors (random weights without)")
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--tolerance", type=float, default=1e-3)
    parser.add_argument("--progress", action="store_true", help="print JSON progress lines before the result")
    args = parser.parse_args(argv)
    report = say if args.progress else lambda _fraction, _message: None
    started = time.perf_counter()
    torch.manual_seed(0)
    report(0.0, "Building the network and loading the weights")
    net = build_network(args.model, args.weights)
    partial = args.output.with_name(args.output.name + ".part")
    report(0.05, f"Exporting to ONNX (traced with {TRACE_VIEWS} views)")
    module = export(net, partial)
    try:
        checks = verify(
            module,
            partial,
            CHECK_SHAPES,
            lambda number, text: report(0.25 + 0.7 * (number - 1) / len(CHECK_SHAPES), text),
        )
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    if max(checks.values()) > args.tolerance:
        partial.unlink()
        worst = max(checks.values())
        raise SystemExit(f"The ONNX export disagrees with torch by {worst:.2g} (limit {args.tolerance}).")
    partial.replace(args.output)
    summary = {
        "model": args.model,
        "output": str(args.output),
        "bytes": args.output.stat().st_size,
        "sha256": sha256(args.output),
        "check_relative_error": checks,
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
