"""SAM 2.1 (Hiera Tiny or Small) to two ONNX files: the image encoder and the prompt encoder + mask decoder.

Runs only in a torch environment with the official `sam2` package (the converter environment, or bench/parity's);
never imported by the server or the add-on. Built from the official configuration and an official checkpoint
(`--weights`, a `{"model": state_dict}` file as Meta publishes them) or, for tests and parity, from seeded
random weights written as such a checkpoint first (`--random-weights SEED`).

Why our own export (openspec/0024): the public exports (onnx-community, samexporter, darktable-ai) all cut the
decoder to the three multimask outputs, so the single-mask path `SAM2ImagePredictor.predict(multimask_output=
False)` takes (mask token 0 with its stability fallback) cannot be reproduced from them, and none can be checked
against the official predictor on random weights. This export keeps everything the predictor computes:

- `encoder.onnx`: `image` float32 [1, 3, 1024, 1024] (ImageNet-normalised RGB, the predictor's transforms) →
  `high_res_feats_0` [1, 32, 256, 256], `high_res_feats_1` [1, 64, 128, 128], `image_embed` [1, 256, 64, 64]
  (the predictor's `set_image`: backbone, the decoder's conv_s0/conv_s1, `no_mem_embed` added).
- `decoder.onnx`: the three features, `point_coords` float32 [1, N, 2] in the 1024 × 1024 input's pixels (box
  corners first, as the predictor concatenates them), `point_labels` float32 [1, N] (1 positive, 0 negative,
  2/3 box corners) → `masks` [1, 4, 256, 256] low-resolution logits of all four mask tokens, `iou_predictions`
  [1, 4], `object_score_logits` [1, 1]. The padding point the prompt encoder adds is inside the graph; choosing
  masks 1–3 (multimask) or token 0 with its stability fallback is the adapter's (server/models/sam2.py), with
  the delta and threshold written in the report.

With `--progress`, JSON lines {"progress": f, "message": m} come first; last comes the report, as the
server's convert-model job reads it (server/conversion/exporter.py): `files` [{path, bytes, sha256}] inside
`--output`, `check_max_abs` and `check_relative_error` (ONNX Runtime against torch on a random image and three
prompt sizes, the decoder fed ONNX Runtime's encoder output: {encoder, decoder}, the error relative to the
largest torch value), and `options` for the catalog entry (the stability delta and threshold). The graphs are
written into `<output>.part/` and moved into `--output` only once the relative error is within `--tolerance`;
when it is not, nothing is kept and the last words are "disagrees with torch by X (limit Y)".
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

CONFIGS = {"tiny": "configs/sam2.1/sam2.1_hiera_t.yaml", "small": "configs/sam2.1/sam2.1_hiera_s.yaml"}
FEATURE_SIZES = ((256, 256), (128, 128), (64, 64))
INPUT_SIZE = 1024
OPSET = 17
GRAPHS = ("encoder.onnx", "decoder.onnx")
REPORTING = {"progress": False}  # main's --progress


class ImageEncoder(nn.Module):
    """What `SAM2ImagePredictor.set_image` computes from the transformed image."""

    def __init__(self, model: Any):
        super().__init__()
        self.model = model

    def forward(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        backbone = self.model.forward_image(image)
        _, features, _, _ = self.model._prepare_backbone_features(backbone)
        if self.model.directly_add_no_mem_embed:
            features[-1] = features[-1] + self.model.no_mem_embed
        maps = [
            feature.permute(1, 2, 0).reshape(1, -1, *size)
            for feature, size in zip(features[::-1], FEATURE_SIZES[::-1], strict=True)
        ][::-1]
        return maps[0], maps[1], maps[2]


class PromptDecoder(nn.Module):
    """What `SAM2ImagePredictor._predict` computes from points (no mask input), before choosing masks."""

    def __init__(self, model: Any):
        super().__init__()
        self.model = model

    def forward(
        self,
        image_embed: torch.Tensor,
        high_res_feats_0: torch.Tensor,
        high_res_feats_1: torch.Tensor,
        point_coords: torch.Tensor,
        point_labels: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        prompts = self.model.sam_prompt_encoder
        sparse, dense = prompts(points=(point_coords, point_labels), boxes=None, masks=None)
        masks, iou, _tokens, objects = self.model.sam_mask_decoder.predict_masks(
            image_embeddings=image_embed,
            image_pe=prompts.get_dense_pe(),
            sparse_prompt_embeddings=sparse,
            dense_prompt_embeddings=dense,
            repeat_image=False,
            high_res_features=[high_res_feats_0, high_res_feats_1],
        )
        return masks, iou, objects


def build_model(variant: str, weights: Path) -> Any:
    """The official network from the package's configuration, with `weights` (refused in one sentence when they
    are not a SAM 2.1 checkpoint of this size)."""
    from sam2.build_sam import build_sam2

    try:
        return build_sam2(CONFIGS[variant], str(weights), device="cpu", mode="eval")
    except (RuntimeError, KeyError, TypeError, ValueError, EOFError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else "missing or unexpected parameters"
        raise SystemExit(f"The weights do not fit SAM 2.1 {variant}: {reason}.") from None


def random_checkpoint(variant: str, seed: int, output: Path) -> Path:
    """A checkpoint of the real architecture with every parameter and buffer filled with seeded random values.

    Scales keep the network in a working range: weights ~ N(0, 1/fan_in) (so 12 Hiera blocks neither fade nor
    saturate), norms' weights near 1, biases and embeddings small, position embeddings ~ N(0, 0.02).
    """
    from sam2.build_sam import build_sam2

    model = build_sam2(CONFIGS[variant], None, device="cpu", mode="eval")
    generator = torch.Generator().manual_seed(seed)
    state = model.state_dict()
    filled = {}
    for name, tensor in state.items():
        if not tensor.is_floating_point():
            filled[name] = tensor
            continue
        noise = torch.randn(tensor.shape, generator=generator, dtype=torch.float32)
        if tensor.dim() >= 2 and "pos_embed" not in name and "embed" not in name.split(".")[-1]:
            fan_in = tensor[0].numel()
            filled[name] = noise / fan_in**0.5
        elif "norm" in name and name.endswith("weight"):
            filled[name] = 1.0 + 0.1 * noise
        else:
            filled[name] = 0.02 * noise
    output.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"model": filled}, output)
    return output


def export(model: Any, directory: Path) -> tuple[Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    encoder_path, decoder_path = (directory / name for name in GRAPHS)
    encoder, decoder = ImageEncoder(model).eval(), PromptDecoder(model).eval()
    image = torch.randn(1, 3, INPUT_SIZE, INPUT_SIZE)
    with torch.no_grad():
        features = encoder(image)
        torch.onnx.export(
            encoder, (image,), str(encoder_path), opset_version=OPSET, dynamo=False,
            input_names=["image"], output_names=["high_res_feats_0", "high_res_feats_1", "image_embed"],
        )  # fmt: skip
        say(0.6, "Exporting the prompt encoder and mask decoder to ONNX")
        coords = torch.tensor([[[500.0, 375.0], [100.0, 900.0]]])
        labels = torch.tensor([[1.0, 0.0]])
        torch.onnx.export(
            decoder, (features[2], features[0], features[1], coords, labels), str(decoder_path),
            opset_version=OPSET, dynamo=False,
            input_names=["image_embed", "high_res_feats_0", "high_res_feats_1", "point_coords", "point_labels"],
            output_names=["masks", "iou_predictions", "object_score_logits"],
            dynamic_axes={"point_coords": {1: "points"}, "point_labels": {1: "points"}},
        )  # fmt: skip
    say(0.7, "Exported both graphs")
    return encoder_path, decoder_path


def verify(model: Any, encoder_path: Path, decoder_path: Path) -> dict[str, float]:
    """Largest absolute differences of ONNX Runtime against torch on a random image and three prompt sizes, and
    the same relative to the largest torch value of each output (`*_relative`)."""
    import numpy as np
    import onnxruntime

    generator = torch.Generator().manual_seed(7)
    image = torch.randn(1, 3, INPUT_SIZE, INPUT_SIZE, generator=generator)
    encoder = onnxruntime.InferenceSession(str(encoder_path), providers=["CPUExecutionProvider"])
    decoder = onnxruntime.InferenceSession(str(decoder_path), providers=["CPUExecutionProvider"])
    with torch.no_grad():
        expected = ImageEncoder(model)(image)
    got = encoder.run(None, {"image": image.numpy()})
    figures = {"encoder_max_abs": 0.0, "encoder_relative": 0.0, "decoder_max_abs": 0.0, "decoder_relative": 0.0}

    def compare(graph: str, ours: list[Any], theirs: Any) -> None:
        for have, want in zip(ours, theirs, strict=True):
            error = float(np.abs(have - want.numpy()).max())
            figures[f"{graph}_max_abs"] = max(figures[f"{graph}_max_abs"], error)
            relative = error / max(float(want.abs().max()), 1e-12)
            figures[f"{graph}_relative"] = max(figures[f"{graph}_relative"], relative)

    compare("encoder", got, expected)
    for count in (1, 3, 6):
        coords = torch.rand(1, count, 2, generator=generator) * INPUT_SIZE
        labels = torch.randint(0, 4, (1, count), generator=generator).float()
        with torch.no_grad():
            reference = PromptDecoder(model)(expected[2], expected[0], expected[1], coords, labels)
        feeds = {
            "image_embed": got[2], "high_res_feats_0": got[0], "high_res_feats_1": got[1],
            "point_coords": coords.numpy(), "point_labels": labels.numpy(),
        }  # fmt: skip
        compare("decoder", decoder.run(None, feeds), reference)
    return figures


def say(fraction: float, message: str) -> None:
    """A progress line for whoever runs the exporter (only with --progress)."""
    if REPORTING["progress"]:
        print(json.dumps({"progress": fraction, "message": message}), flush=True)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(CONFIGS), default="tiny")
    parser.add_argument("--weights", type=Path, help="an official checkpoint (.pt)")
    parser.add_argument("--random-weights", type=int, metavar="SEED", help="write and use a random checkpoint")
    parser.add_argument("--output", type=Path, required=True, help="folder for encoder.onnx and decoder.onnx")
    parser.add_argument("--tolerance", type=float, default=1e-3, help="largest relative error against torch")
    parser.add_argument("--progress", action="store_true", help="print JSON progress lines before the report")
    args = parser.parse_args(argv)
    if args.weights is None and args.random_weights is None:
        parser.error("give --weights or --random-weights")
    REPORTING["progress"] = args.progress
    started = time.perf_counter()
    torch.manual_seed(0)
    partial = args.output.with_name(args.output.name + ".part")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        weights = args.weights
        if args.random_weights is not None:
            weights = random_checkpoint(args.model, args.random_weights, partial / "random-weights.pt")
        say(0.0, f"Building SAM 2.1 {args.model} and loading the weights")
        model = build_model(args.model, weights)
        say(0.05, "Exporting the image encoder to ONNX")
        encoder_path, decoder_path = export(model, partial)
        say(0.75, "Checking the ONNX files against torch")
        figures = verify(model, encoder_path, decoder_path)
        worst = max(figures["encoder_relative"], figures["decoder_relative"])
        if worst > args.tolerance:
            raise SystemExit(f"The ONNX export disagrees with torch by {worst:.2g} (limit {args.tolerance}).")
        args.output.mkdir(parents=True, exist_ok=True)
        for name in GRAPHS:
            os.replace(partial / name, args.output / name)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    decoder = model.sam_mask_decoder
    report = {
        "model": args.model,
        "output": str(args.output),
        "files": [
            {"path": name, "bytes": (args.output / name).stat().st_size, "sha256": sha256(args.output / name)}
            for name in GRAPHS
        ],
        "check_max_abs": {graph: figures[f"{graph}_max_abs"] for graph in ("encoder", "decoder")},
        "check_relative_error": {graph: figures[f"{graph}_relative"] for graph in ("encoder", "decoder")},
        "options": {
            "stability_delta": float(decoder.dynamic_multimask_stability_delta),
            "stability_threshold": float(decoder.dynamic_multimask_stability_thresh),
        },
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
