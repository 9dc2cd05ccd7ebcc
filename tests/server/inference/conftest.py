"""Fixtures for the inference-core tests: kit models placed where the store puts downloads, and runtimes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from imageforge.contract.catalog import Family, ModelEntry, ModelFile
from imageforge.contract.model_files import file_path
from imageforge.server.inference.devices import OrtRuntime, detect_runtime
from tests.kit.onnx_models import build_ben2, build_ben2_fp16, build_upscaler

from .fake_onnxruntime import FakeOrt


def make_entry(key: str, family: Family, path: str = "model.onnx") -> ModelEntry:
    return ModelEntry(
        key=key,
        family=family,
        adapter=family,
        label=key.replace("_", " ").title(),
        license="MIT",
        repository=f"kit/{key.lower()}",
        directory=key.lower(),
        default=False,
        files=(ModelFile(path),),
    )


@pytest.fixture
def upscaler(storage_root: Path) -> ModelEntry:
    """A Real-ESRGAN-shaped kit model (output = 4x nearest upscale), stored as a download would be."""
    entry = make_entry("KIT_UPSCALER", Family("upscale"))
    build_upscaler(file_path(storage_root, entry, entry.files[0]))
    return entry


@pytest.fixture
def upscaler_x2(storage_root: Path) -> ModelEntry:
    entry = make_entry("KIT_UPSCALER_X2", Family("upscale"))
    build_upscaler(file_path(storage_root, entry, entry.files[0]), scale=2)
    return entry


@pytest.fixture
def ben2(storage_root: Path) -> ModelEntry:
    entry = make_entry("KIT_BEN2", Family("background"), "onnx/model_fp16.onnx")
    build_ben2(file_path(storage_root, entry, entry.files[0]), size=32)
    return entry


@pytest.fixture
def ben2_fp16(storage_root: Path) -> ModelEntry:
    """A BEN2-shaped kit model with fp16 weights and arithmetic, stored as the published fp16 file would be."""
    entry = make_entry("KIT_BEN2_FP16", Family("background"), "onnx/model_fp16.onnx")
    build_ben2_fp16(file_path(storage_root, entry, entry.files[0]))
    return entry


@pytest.fixture
def fake_runtime() -> Callable[..., OrtRuntime]:
    """`fake_runtime(system, providers..., probe=...)` → an OrtRuntime over a fresh FakeOrt (as `.module`)."""

    def make(system: str = "Linux", *providers: str, machine: str = "x86_64", probe=None) -> OrtRuntime:
        fake = FakeOrt(available=(*providers, "CPUExecutionProvider"))
        return detect_runtime(fake, system=system, machine=machine, probe=probe or (lambda runtime, device: None))

    return make
