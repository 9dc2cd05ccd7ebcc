"""Models a user converts on their own machine (DA3 with its camera decoder): what, from where, with what.

The data is `conversions.json`, the one home of the converter environment's exact pins (every package
installed without dependencies, so no resolver can pull another torch) and of each conversion's source
(the official Apache-2.0 weights on Hugging Face) and result (the catalog entry registered in the storage
root's local overlay, catalog.py). DA3 Large and Giant are CC BY-NC: never offered. openspec/0023.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .catalog import Family, ModelEntry, ModelFile
from .errors import InputError

CONVERSIONS_FILE = Path(__file__).with_name("conversions.json")
WHEELHOUSE_VARIABLE = "IMAGEFORGE_CONVERTER_WHEELS"  # local wheel folders (os.pathsep): offline builds
CONVERTED_FROM = "converted_from"  # the option a converted catalog entry carries: its conversion's key


@dataclass(frozen=True)
class ConverterEnvironment:
    python: str
    torch: str  # "torch==X": from `torch_index` (CPU builds) unless a wheelhouse is given
    torch_index: str
    packages: tuple[str, ...]  # everything else its import path needs, exact pins
    approximate_bytes: int

    @property
    def digest(self) -> str:
        """Names the environment on disk: a change of any pin builds a new one."""
        pins = json.dumps([self.python, self.torch, *self.packages], separators=(",", ":"))
        return hashlib.sha256(pins.encode()).hexdigest()[:16]

    def wheelhouse(self) -> list[Path]:
        """The local wheel folders of $IMAGEFORGE_CONVERTER_WHEELS; empty: PyPI and the PyTorch CPU index."""
        configured = os.environ.get(WHEELHOUSE_VARIABLE, "")
        return [Path(part).expanduser() for part in configured.split(os.pathsep) if part.strip()]


@dataclass(frozen=True)
class ConversionResult:
    key: str
    label: str
    directory: str
    path: str
    attention_heads: int


@dataclass(frozen=True)
class Conversion:
    key: str
    label: str
    license: str
    repository: str
    directory: str
    files: tuple[ModelFile, ...]
    approximate_download_bytes: int
    approximate_minutes: int
    exporter: str  # the exporter's --model
    result: ConversionResult

    @property
    def source(self) -> ModelEntry:
        """The official weights as a catalog-like entry, so the verified, resumable download code fetches them
        into `<storage>/models/<directory>/` (a hub file without a declared hash is checked against the hub's
        LFS SHA-256, which is then remembered)."""
        return ModelEntry(
            key=self.key,
            family=Family("multiview"),
            adapter="",
            label=f"{self.label} weights",
            license=self.license,
            repository=self.repository,
            directory=self.directory,
            default=False,
            files=self.files,
        )

    def catalog_record(self, size: int, sha256: str) -> dict[str, Any]:
        """The local overlay's entry for the converted file (the catalog's JSON schema, docs/models.md)."""
        return {
            "key": self.result.key,
            "family": Family("multiview"),
            "adapter": "da3",
            "label": self.result.label,
            "license": self.license,
            "repository": self.repository,
            "directory": self.result.directory,
            "default": True,
            "attention_heads": self.result.attention_heads,
            CONVERTED_FROM: self.key,
            "files": [{"path": self.result.path, "size": size, "sha256": sha256}],
        }


@dataclass(frozen=True)
class Conversions:
    environment: ConverterEnvironment
    conversions: tuple[Conversion, ...]

    def get(self, key: str) -> Conversion:
        for conversion in self.conversions:
            if conversion.key == key:
                return conversion
        valid = ", ".join(conversion.key for conversion in self.conversions)
        raise InputError(f"'{key}' cannot be converted; convertible models are: {valid}.")


def load_conversions(path: Path = CONVERSIONS_FILE) -> Conversions:
    data = json.loads(path.read_text(encoding="utf-8"))
    env = data["environment"]
    pins = [env["torch"], *env["packages"]]
    unpinned = [pin for pin in pins if "==" not in pin or any(mark in pin for mark in "<>~!,;*")]
    if unpinned:
        raise ValueError(f"{path}: converter packages must be exact pins, not {unpinned[0]!r}")
    environment = ConverterEnvironment(
        python=str(env["python"]),
        torch=str(env["torch"]),
        torch_index=str(env["torch_index"]),
        packages=tuple(str(pin) for pin in env["packages"]),
        approximate_bytes=int(env["approximate_bytes"]),
    )
    conversions = tuple(
        Conversion(
            key=str(raw["key"]),
            label=str(raw["label"]),
            license=str(raw["license"]),
            repository=str(raw["repository"]),
            directory=str(raw["directory"]),
            files=tuple(ModelFile(str(item["path"]), item.get("size"), item.get("sha256")) for item in raw["files"]),
            approximate_download_bytes=int(raw["approximate_download_bytes"]),
            approximate_minutes=int(raw["approximate_minutes"]),
            exporter=str(raw["exporter"]),
            result=ConversionResult(**raw["result"]),
        )
        for raw in data["conversions"]
    )
    return Conversions(environment, conversions)
