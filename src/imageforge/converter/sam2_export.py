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

Prints JSON lines: {"progress": f, "message": m} while working, then the report (files, sizes, SHA-256, the
largest difference against torch on a random input).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import torch
from torch import nn

CONFIGS = {"tiny": "configs/sam2.1/sam2.1_hiera_t.yaml", "small": "configs/sam2.1/sam2.1_hiera_s.yaml"}
FEATURE_SIZES = ((256, 256), (128, 128), (64, 64))
INPUT_SIZE = 1024
OPSET = 17


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
    from sam2.build_sam import build_sam2

    return build_sam2(CONFIGS[variant], str(weights), device="cpu", mode="eval")


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
    encoder_path, decoder_path = directory / "encoder.onnx", directory / "decoder.onnx"
    encoder, decoder = ImageEncoder(model).eval(), PromptDecoder(model).eval()
    image = torch.randn(1, 3, INPUT_SIZE, INPUT_SIZE)
    with torch.no_grad():
        features = encoder(image)
        torch.onnx.export(
            encoder, (image,), str(encoder_path), opset_version=OPSET, dynamo=False,
            input_names=["image"], output_names=["high_res_feats_0", "high_res_feats_1", "image_embed"],
        )  # fmt: skip
        say(0.6, "Exported the image encoder")
        coords = torch.tensor([[[500.0, 375.0], [100.0, 900.0]]])
        labels = torch.tensor([[1.0, 0.0]])
        torch.onnx.export(
            decoder, (features[2], features[0], features[1], coords, labels), str(decoder_path),
            opset_version=OPSET, dynamo=False,
            input_names=["image_embed", "high_res_feats_0", "high_res_feats_1", "point_coords", "point_labels"],
            output_names=["masks", "iou_predictions", "object_score_logits"],
            dynamic_axes={"point_coords": {1: "points"}, "point_labels": {1: "points"}},
        )  # fmt: skip
    say(0.7, "Exported the prompt encoder and mask decoder")
    return encoder_path, decoder_path


def verify(model: Any, encoder_path: Path, decoder_path: Path) -> dict[str, float]:
    """Largest absolute differences of ONNX Runtime against torch on a random image and three prompt sizes."""
    import numpy as np
    import onnxruntime

    generator = torch.Generator().manual_seed(7)
    image = torch.randn(1, 3, INPUT_SIZE, INPUT_SIZE, generator=generator)
    encoder = onnxruntime.InferenceSession(str(encoder_path), providers=["CPUExecutionProvider"])
    decoder = onnxruntime.InferenceSession(str(decoder_path), providers=["CPUExecutionProvider"])
    with torch.no_grad():
        expected = ImageEncoder(model)(image)
    got = encoder.run(None, {"image": image.numpy()})
    figures = {"encoder_max_abs": max(float(np.abs(a - b.numpy()).max()) for a, b in zip(got, expected, strict=True))}
    worst = 0.0
    for count in (1, 3, 6):
        coords = torch.rand(1, count, 2, generator=generator) * INPUT_SIZE
        labels = torch.randint(0, 4, (1, count), generator=generator).float()
        with torch.no_grad():
            reference = PromptDecoder(model)(expected[2], expected[0], expected[1], coords, labels)
        feeds = {
            "image_embed": got[2], "high_res_feats_0": got[0], "high_res_feats_1": got[1],
            "point_coords": coords.numpy(), "point_labels": labels.numpy(),
        }  # fmt: skip
        outputs = decoder.run(None, feeds)
        worst = max(worst, *(float(np.abs(a - b.numpy()).max()) for a, b in zip(outputs, reference, strict=True)))
    figures["decoder_max_abs"] = worst
    return figures


def say(fraction: float, message: str) -> None:
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
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    weights = args.weights
    if args.random_weights is not None:
        weights = random_checkpoint(args.model, args.random_weights, args.output / "random-weights.pt")
    if weights is None:
        parser.error("give --weights or --random-weights")
    say(0.05, f"Building SAM 2.1 {args.model}")
    model = build_model(args.model, weights)
    encoder_path, decoder_path = export(model, args.output)
    say(0.75, "Checking the export against torch")
    check = verify(model, encoder_path, decoder_path)
    decoder = model.sam_mask_decoder
    report = {
        "model": args.model,
        "files": [
            {"path": path.name, "size": path.stat().st_size, "sha256": sha256(path)}
            for path in (encoder_path, decoder_path)
        ],
        "stability_delta": float(decoder.dynamic_multimask_stability_delta),
        "stability_threshold": float(decoder.dynamic_multimask_stability_thresh),
        "check": check,
    }
    print(json.dumps({"report": report}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
