"""The model catalog: frozen records loaded from JSON data (built in, or IMAGEFORGE_MODEL_CATALOG), with the
storage root's local overlay (`models/local-catalog.json`: models converted on this machine) merged over it.

Schema and optional fields: docs/models.md.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from .errors import InputError, ModelUnavailableError

BUILTIN_CATALOG = Path(__file__).with_name("models.json")
CATALOG_ENVIRONMENT_VARIABLE = "IMAGEFORGE_MODEL_CATALOG"
LOCAL_OVERLAY = ("models", "local-catalog.json")  # under the storage root; written by the convert-model job


class Family(StrEnum):
    BACKGROUND = "background"
    GEOMETRY = "geometry"
    UPSCALE = "upscale"
    MULTIVIEW = "multiview"
    INPAINT = "inpaint"


@dataclass(frozen=True)
class ModelFile:
    path: str
    size: int | None = None
    sha256: str | None = None

    @property
    def streamable(self) -> bool:
        """Declared size and hash: fetched straight from the resolve URL and verified."""
        return self.size is not None and self.sha256 is not None


@dataclass(frozen=True)
class ModelEntry:
    key: str
    family: Family
    adapter: str
    label: str
    license: str
    repository: str
    directory: str
    default: bool
    files: tuple[ModelFile, ...]
    options: dict[str, Any] = field(default_factory=dict)  # the optional fields, e.g. normalization

    @property
    def declared_size(self) -> int | None:
        sizes = [item.size for item in self.files if item.size is not None]
        return sum(sizes) if len(sizes) == len(self.files) else None  # None when any file's size is undeclared


@dataclass(frozen=True)
class Catalog:
    models: tuple[ModelEntry, ...]
    source: Path

    def get(self, key: str) -> ModelEntry:
        for entry in self.models:
            if entry.key == key:
                return entry
        valid = ", ".join(entry.key for entry in self.models)
        raise ModelUnavailableError(f"Unknown model '{key}'; valid models are: {valid}.")

    def default_for(self, family: Family) -> ModelEntry:
        for entry in self.models:
            if entry.family == family and entry.default:
                return entry
        for entry in self.models:
            if entry.family == family:
                return entry
        raise ModelUnavailableError(f"The model catalog has no {family.value} model.")

    def resolve(self, key: str | None, family: Family) -> ModelEntry:
        """The entry for `key` (which must belong to `family`), or the family's default."""
        if key is None:
            return self.default_for(family)
        entry = self.get(key)
        if entry.family != family:
            raise InputError(f"Model '{key}' is a {entry.family.value} model, not a {family.value} model.")
        return entry

    @property
    def defaults(self) -> tuple[ModelEntry, ...]:
        return tuple(entry for entry in self.models if entry.default)


_REQUIRED = ("key", "family", "adapter", "label", "license", "repository", "directory", "files")


def parse_catalog(data: Any, source: Path) -> Catalog:
    if not isinstance(data, dict) or not isinstance(data.get("models"), list):
        raise ModelUnavailableError(f"Model catalog {source} must be an object with a 'models' list.")
    entries = []
    keys = set()
    for raw in data["models"]:
        missing = [name for name in _REQUIRED if not isinstance(raw, dict) or name not in raw]
        if missing:
            raise ModelUnavailableError(f"Model catalog {source}: an entry lacks '{missing[0]}'.")
        try:
            family = Family(raw["family"])
            files = tuple(_model_file(item) for item in raw["files"])
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise ModelUnavailableError(
                f"Model catalog {source}: entry {raw['key']!r} is invalid ({error})."
            ) from error
        if not files or raw["key"] in keys or any(_unsafe(item.path) for item in files) or _unsafe(raw["directory"]):
            raise ModelUnavailableError(f"Model catalog {source}: entry {raw['key']!r} is invalid.")
        keys.add(raw["key"])
        entries.append(
            ModelEntry(
                key=str(raw["key"]),
                family=family,
                adapter=str(raw["adapter"]),
                label=str(raw["label"]),
                license=str(raw["license"]),
                repository=str(raw["repository"]),
                directory=str(raw["directory"]),
                default=bool(raw.get("default", False)),
                files=files,
                options={name: value for name, value in raw.items() if name not in (*_REQUIRED, "default")},
            )
        )
    return Catalog(tuple(entries), source)


def _model_file(item: Any) -> ModelFile:
    """A declared size must be a byte count and a declared SHA-256 64 hex digits: a typo here would otherwise
    only show up as every user's download failing verification."""
    size, sha256 = item.get("size"), item.get("sha256")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 0):
        raise ValueError(f"size of {item['path']!r} must be a byte count")
    if sha256 is not None and not (isinstance(sha256, str) and re.fullmatch(r"[0-9a-fA-F]{64}", sha256)):
        raise ValueError(f"sha256 of {item['path']!r} must be 64 hex digits")
    return ModelFile(str(item["path"]), size, sha256.lower() if sha256 else None)


def _unsafe(relative: str) -> bool:
    """A path that could leave the models folder: absolute, drive-qualified, or with '..'."""
    parts = relative.replace("\\", "/").split("/")
    return not relative or relative.startswith(("/", "\\")) or ":" in relative or ".." in parts


def local_overlay_path(storage_root: str | os.PathLike[str]) -> Path:
    return Path(storage_root).joinpath(*LOCAL_OVERLAY)


def load_catalog(
    path: str | os.PathLike[str] | None = None, *, storage_root: str | os.PathLike[str] | None = None
) -> Catalog:
    """Load the catalog named by `path`, else $IMAGEFORGE_MODEL_CATALOG, else the built-in one; with a
    `storage_root`, that root's local overlay (models converted there) is merged over it (`merge_catalogs`)."""
    source = Path(path or os.environ.get(CATALOG_ENVIRONMENT_VARIABLE) or BUILTIN_CATALOG)
    base = parse_catalog(_read(source), source)
    if storage_root is None:
        return base
    overlay = local_overlay_path(storage_root)
    if not overlay.is_file():
        return base
    return merge_catalogs(base, parse_catalog(_read(overlay), overlay))


def merge_catalogs(base: Catalog, overlay: Catalog) -> Catalog:
    """`overlay`'s entries replace `base`'s of the same key and follow the others; a family with an overlay
    default takes it as its default (a model converted here is preferred over a built-in one)."""
    replacing = {entry.key: entry for entry in overlay.models}
    families = {entry.family for entry in overlay.models if entry.default}
    merged = [
        replacing[entry.key]
        if entry.key in replacing
        else (replace(entry, default=False) if entry.family in families else entry)
        for entry in base.models
    ]
    known = {entry.key for entry in base.models}
    merged.extend(entry for entry in overlay.models if entry.key not in known)
    return Catalog(tuple(merged), base.source)


def _read(source: Path) -> Any:
    try:
        return json.loads(source.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ModelUnavailableError(f"Cannot read the model catalog {source}: {error}.") from error
