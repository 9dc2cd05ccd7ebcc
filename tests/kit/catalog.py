"""A model catalog of kit models served by the loopback hub: what a test needs to run any job for real.

    catalog = publish_kit_catalog(hub, tmp_path)        # builds the tiny models, serves them, writes JSON
    monkeypatch.setenv("IMAGEFORGE_MODEL_CATALOG", str(catalog.path))
    monkeypatch.setenv("HF_ENDPOINT", hub.url)          # before the server process starts

Keys: KIT_BEN2 (background, 64² input, fp16 output, luma matte), KIT_UPSCALE (upscale, box blur radius 2
then 4× nearest), KIT_MOGE2 (geometry, the known tilted plane), KIT_DA3 (multiview with cameras, S=28),
KIT_LAMA (inpaint, fills the hole with the constant LAMA_FILL colour), KIT_MOGE2_STEP (geometry, not a default:
the kit plane with a card at half its distance over the middle of the image, KIT_STEP), KIT_BEN2_FP16_LARGE
(background, not a default: the fp16 BEN2 layout, over 9 MB, so the server writes its fp32 CPU copy in a child),
and KIT_SAM2 (segment, two graphs `encoder.onnx` + `decoder.onnx`: colour similarity around the first click; not a
default, since SAM 2.1 is converted, never part of setup's downloads, but the only segment model, so jobs without
`model` use it), and KIT_BIREFNET (background, not a default: the published BiRefNet signature, logits, 64² input;
published only where a test names it).
The others are their family's default, so jobs without `model` use them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from .hub import LoopbackHub
from .onnx_models import (
    build_ben2,
    build_ben2_fp16,
    build_birefnet,
    build_da3,
    build_lama,
    build_moge2,
    build_sam2,
    build_upscaler,
)

LARGE_FP16_BYTES = 9 * 1024 * 1024  # KIT_BEN2_FP16_LARGE: above the size the server rewrites in its own process

KIT_STEP = (0.25, 0.25, 0.75, 0.75, 0.5)  # KIT_MOGE2_STEP: the middle quarter of the image half as far away
KIT_MODELS = {
    "KIT_BEN2": ("background", "ben2", lambda path: build_ben2(path, size=64), {"normalization": "none"}),
    "KIT_UPSCALE": ("upscale", "upscale", lambda path: build_upscaler(path, receptive_radius=2), {}),
    "KIT_MOGE2": ("geometry", "moge2", lambda path: build_moge2(path), {}),
    "KIT_DA3": ("multiview", "da3", lambda path: build_da3(path, size=28), {"attention_heads": 6}),
    "KIT_LAMA": ("inpaint", "lama", build_lama, {}),
    "KIT_MOGE2_STEP": ("geometry", "moge2", lambda path: build_moge2(path, step=KIT_STEP), {"default": False}),
    "KIT_BEN2_FP16_LARGE": (
        "background",
        "ben2",
        lambda path: build_ben2_fp16(path, size=64, ballast_bytes=LARGE_FP16_BYTES),
        {"normalization": "none", "default": False},
    ),
    "KIT_BIREFNET": (
        "background", "birefnet", lambda path: build_birefnet(path, size=64),
        {"normalization": "imagenet", "final_activation": "none", "default": False},
    ),
    "KIT_SAM2": (
        "segment", "sam2", lambda path: build_sam2(path.with_suffix("")),
        {"default": False, "encoder": "encoder.onnx", "decoder": "decoder.onnx"},
    ),
}  # fmt: skip


@dataclass(frozen=True)
class KitCatalog:
    path: Path
    files: dict[str, bytes]  # key -> the model file's bytes


# the default `keys`: what jobs use (BiRefNet only where a test chooses it)
EVERY_JOB = tuple(key for key in KIT_MODELS if key not in ("KIT_BEN2_FP16_LARGE", "KIT_BIREFNET"))


def publish_kit_catalog(hub: LoopbackHub, folder: Path, keys: tuple[str, ...] = EVERY_JOB) -> KitCatalog:
    folder.mkdir(parents=True, exist_ok=True)
    models, files = [], {}
    for key in keys:
        family, adapter, build, options = KIT_MODELS[key]
        built = build(folder / f"{key.lower()}.onnx")
        graphs = {path.name: path.read_bytes() for path in built} if isinstance(built, tuple) else None
        content = next(iter(graphs.values())) if graphs else built.read_bytes()
        repository = f"kit/{key.lower().replace('_', '-')}"
        for name, data in (graphs or {"model.onnx": content}).items():
            hub.add_hub_file(repository, name, data)
        files[key] = content  # a model of several graphs: its first graph
        models.append(
            {
                "key": key,
                "family": family,
                "adapter": adapter,
                "label": key.replace("_", " ").title(),
                "license": "MIT",
                "repository": repository,
                "directory": key.lower(),
                "default": True,
                "files": [
                    {"path": name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
                    for name, data in (graphs or {"model.onnx": content}).items()
                ],
                **options,
            }
        )
    path = folder / "catalog.json"
    path.write_text(json.dumps({"models": models}, indent=2), encoding="utf-8")
    return KitCatalog(path, files)


def catalog_entry(
    key: str,
    files: dict[str, bytes],
    *,
    directory: str | None = None,
    default: bool = False,
    declare: str = "both",
) -> dict:
    """One raw catalog entry (a background model in repository `kit/<directory>`) for `files`, path -> content.

    `declare` says what the catalog states about each file: "both" (size and SHA-256: streamed), "sha256"
    (hash only) or "none" (neither: fetched with huggingface_hub).
    """
    directory = directory or key.lower()
    declared = []
    for path, content in files.items():
        item: dict = {"path": path}
        if declare in ("both", "sha256"):
            item["sha256"] = hashlib.sha256(content).hexdigest()
        if declare == "both":
            item["size"] = len(content)
        declared.append(item)
    return {
        "key": key,
        "family": "background",
        "adapter": "ben2",
        "label": key.replace("_", " ").title(),
        "license": "MIT",
        "repository": f"kit/{directory}",
        "directory": directory,
        "default": default,
        "files": declared,
    }


def write_catalog(path: Path, entries: list[dict]) -> Path:
    path.write_text(json.dumps({"models": entries}, indent=2), encoding="utf-8")
    return path
