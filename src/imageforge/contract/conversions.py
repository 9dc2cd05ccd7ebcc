"""Models a user converts on their own machine (DA3 with its camera decoder, SAM 2.1 as two ONNX graphs): what,
from where, with what.

The data is `conversions.json`, the one home of the converter environment's exact pins (every package
installed without dependencies, so no resolver can pull another torch; the few published only as source,
`source_packages`, are built without build isolation against what is already installed) and of each
conversion's source (the official Apache-2.0 weights on Hugging Face), exporter (a script of
src/imageforge/converter/, its `--model`, and whether `--output` names a file or a folder) and result (the
catalog entry registered in the storage root's local overlay, catalog.py: family, adapter, its files, options).
DA3 Large and Giant are CC BY-NC: never offered. openspec/0023.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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
    packages: tuple[str, ...]  # everything else its import path needs, exact pins (wheels)
    approximate_bytes: int
    source_packages: tuple[str, ...] = ()  # exact pins published only as sdists: built after `packages`
    build_environment: dict[str, str] = field(default_factory=dict)  # variables for building them

    @property
    def pins(self) -> list[str]:
        return [self.torch, *self.packages, *self.source_packages]

    @property
    def digest(self) -> str:
        """Names the environment on disk: a change of any pin (or build variable) builds a new one."""
        build = [f"{name}={value}" for name, value in sorted(self.build_environment.items())]
        pins = json.dumps([self.python, *self.pins, *build], separators=(",", ":"))
        return hashlib.sha256(pins.encode()).hexdigest()[:16]

    def wheelhouse(self) -> list[Path]:
        """The local wheel folders of $IMAGEFORGE_CONVERTER_WHEELS; empty: PyPI and the PyTorch CPU index."""
        configured = os.environ.get(WHEELHOUSE_VARIABLE, "")
        return [Path(part).expanduser() for part in configured.split(os.pathsep) if part.strip()]


@dataclass(frozen=True)
class Exporter:
    script: str  # a file of src/imageforge/converter/
    model: str  # its --model
    output: str  # "file": --output is the result's one file; "folder": the folder its files are written into


@dataclass(frozen=True)
class ConversionResult:
    key: str
    label: str
    family: str
    adapter: str
    directory: str
    files: tuple[str, ...]  # the exported files, inside `directory`
    options: dict[str, Any]  # the catalog entry's options (the exporter's report may add more)
    purpose: str  # what it is once registered, for the CLI's last sentence


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
    exporter: Exporter
    result: ConversionResult

    @property
    def source(self) -> ModelEntry:
        """The official weights as a catalog-like entry, so the verified, resumable download code fetches them
        into `<storage>/models/<directory>/` (a hub file without a declared hash is checked against the hub's
        LFS SHA-256, which is then remembered)."""
        return ModelEntry(
            key=self.key,
            family=Family(self.result.family),
            adapter="",
            label=f"{self.label} weights",
            license=self.license,
            repository=self.repository,
            directory=self.directory,
            default=False,
            files=self.files,
        )

    def catalog_record(self, files: Sequence[ModelFile], options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The local overlay's entry for the converted files (the catalog's JSON schema, docs/models.md), with the
        exporter's reported `options` (e.g. SAM 2.1's stability delta) over the conversion's own."""
        return {
            "key": self.result.key,
            "family": Family(self.result.family),
            "adapter": self.result.adapter,
            "label": self.result.label,
            "license": self.license,
            "repository": self.repository,
            "directory": self.result.directory,
            "default": True,
            **self.result.options,
            **(options or {}),
            CONVERTED_FROM: self.key,
            "files": [{"path": item.path, "size": item.size, "sha256": item.sha256} for item in files],
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
    pins = [env["torch"], *env["packages"], *env.get("source_packages", [])]
    unpinned = [pin for pin in pins if "==" not in pin or any(mark in pin for mark in "<>~!,;*")]
    if unpinned:
        raise ValueError(f"{path}: converter packages must be exact pins, not {unpinned[0]!r}")
    environment = ConverterEnvironment(
        python=str(env["python"]),
        torch=str(env["torch"]),
        torch_index=str(env["torch_index"]),
        packages=tuple(str(pin) for pin in env["packages"]),
        approximate_bytes=int(env["approximate_bytes"]),
        source_packages=tuple(str(pin) for pin in env.get("source_packages", [])),
        build_environment={str(name): str(value) for name, value in env.get("build_environment", {}).items()},
    )
    conversions = tuple(
        _checked(path, conversion)
        for conversion in (
            Conversion(
                key=str(raw["key"]),
                label=str(raw["label"]),
                license=str(raw["license"]),
                repository=str(raw["repository"]),
                directory=str(raw["directory"]),
                files=tuple(
                    ModelFile(str(item["path"]), item.get("size"), item.get("sha256")) for item in raw["files"]
                ),
                approximate_download_bytes=int(raw["approximate_download_bytes"]),
                approximate_minutes=int(raw["approximate_minutes"]),
                exporter=_exporter(path, raw["exporter"]),
                result=_result(raw["result"]),
            )
            for raw in data["conversions"]
        )
    )
    return Conversions(environment, conversions)


def _checked(path: Path, conversion: Conversion) -> Conversion:
    if conversion.exporter.output == "file" and len(conversion.result.files) != 1:
        raise ValueError(
            f"{path}: {conversion.key}'s exporter writes one file, its result names {conversion.result.files}"
        )
    return conversion


def _exporter(path: Path, raw: dict[str, Any]) -> Exporter:
    exporter = Exporter(script=str(raw["script"]), model=str(raw["model"]), output=str(raw["output"]))
    if exporter.output not in ("file", "folder") or "/" in exporter.script or "\\" in exporter.script:
        raise ValueError(f"{path}: exporter {raw!r} must name a converter script and an output of file or folder")
    return exporter


def _result(raw: dict[str, Any]) -> ConversionResult:
    return ConversionResult(
        key=str(raw["key"]),
        label=str(raw["label"]),
        family=str(raw["family"]),
        adapter=str(raw["adapter"]),
        directory=str(raw["directory"]),
        files=tuple(str(name) for name in raw["files"]),
        options=dict(raw.get("options", {})),
        purpose=str(raw["purpose"]),
    )
