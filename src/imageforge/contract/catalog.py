"""The model catalog: frozen records loaded from JSON data (built in, or IMAGEFORGE_MODEL_CATALOG), with the
storage root's local overlay (`models/local-catalog.json`: models converted on this machine) merged over it.

The families are data too: the built-in catalog's `families` list names each family and the labels its
preferences show (addon/preferences.py makes one model preference per family from it), and a catalog file may
declare more. A new family is therefore a catalog entry and an adapter (server/models/), nothing else.

Schema and optional fields: docs/models.md.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any, NewType

from .errors import InputError, ModelUnavailableError

BUILTIN_CATALOG = Path(__file__).with_name("models.json")
CATALOG_ENVIRONMENT_VARIABLE = "IMAGEFORGE_MODEL_CATALOG"
LOCAL_OVERLAY = ("models", "local-catalog.json")  # under the storage root; written by the convert-model job


Family = NewType("Family", str)  # a family's key, as the catalog's `families` list declares it


@dataclass(frozen=True)
class ModelFamily:
    """One family of the catalog: its key, the label of its model preference ("Background Removal") and the
    short label its hidden stored preference carries ("Stored Background Model")."""

    key: Family
    label: str
    short_label: str


_GIB = 1024**3
# The most one downloaded file of a family may have when the catalog declares no size (a hub's or mirror's
# announced size is believed only up to this). About twice the largest file any known model of the family has
# (BEN2 fp16 219 MB, BiRefNet fp32 ~1 GB; MoGe-2 ViT-L ~1.3 GB; Real-ESRGAN x4plus 67 MB; DA3 Large 1.35 GB;
# LaMa 209 MB), so a lying or broken source cannot fill the disk. An entry may set its own `max_file_size`.
MAX_FILE_BYTES: dict[Family, int] = {
    Family("background"): 2 * _GIB,
    Family("geometry"): 3 * _GIB,
    Family("upscale"): 1 * _GIB,
    Family("multiview"): 3 * _GIB,
    Family("inpaint"): 1 * _GIB,
}
DEFAULT_MAX_FILE_BYTES = 4 * _GIB  # a family not listed above (a new family needs no entry here)


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
    def max_file_size(self) -> int:
        """The most bytes one of this entry's files may have when its size is not declared."""
        own = self.options.get("max_file_size")
        return own if isinstance(own, int) else MAX_FILE_BYTES.get(self.family, DEFAULT_MAX_FILE_BYTES)

    @property
    def openvino_auto(self) -> bool:
        """Whether the Automatic device takes OpenVINO for this model: only where it measured faster than the
        CPU provider (openspec/0034); an explicit OpenVINO choice runs any model there."""
        return self.options.get("openvino_auto") is True

    @property
    def declared_size(self) -> int | None:
        sizes = [item.size for item in self.files if item.size is not None]
        return sum(sizes) if len(sizes) == len(self.files) else None  # None when any file's size is undeclared


@dataclass(frozen=True)
class Catalog:
    models: tuple[ModelEntry, ...]
    source: Path
    families: tuple[ModelFamily, ...] = ()

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
        raise ModelUnavailableError(f"The model catalog has no {family} model.")

    def has_family(self, family: Family) -> bool:
        return any(entry.family == family for entry in self.models)

    def resolve(self, key: str | None, family: Family) -> ModelEntry:
        """The entry for `key` (which must belong to `family`), or the family's default."""
        if key is None:
            return self.default_for(family)
        entry = self.get(key)
        if entry.family != family:
            raise InputError(f"Model '{key}' is a {entry.family} model, not a {family} model.")
        return entry

    @property
    def defaults(self) -> tuple[ModelEntry, ...]:
        return tuple(entry for entry in self.models if entry.default)


_REQUIRED = ("key", "family", "adapter", "label", "license", "repository", "directory", "files")


def parse_catalog(data: Any, source: Path, families: tuple[ModelFamily, ...] | None = None) -> Catalog:
    """Every refusal is one sentence naming the catalog, the entry and the reason. The catalog's families are
    `families` (default: the built-in catalog's) and those it declares."""
    if not isinstance(data, dict) or not isinstance(data.get("models"), list):
        raise ModelUnavailableError(f"Model catalog {source} must be an object with a 'models' list.")
    declared = _families(data, source, builtin_families() if families is None else families)
    known = tuple(item.key for item in declared)
    entries: list[ModelEntry] = []
    for raw in data["models"]:
        missing = [name for name in _REQUIRED if not isinstance(raw, dict) or name not in raw]
        if missing:
            raise ModelUnavailableError(f"Model catalog {source}: an entry lacks '{missing[0]}'.")
        try:
            if any(entry.key == str(raw["key"]) for entry in entries):
                raise ValueError(f"the key {raw['key']!r} appears twice")
            entries.append(_entry(raw, known))
        except ValueError as error:
            raise ModelUnavailableError(
                f"Model catalog {source}: entry {raw['key']!r} is invalid ({error})."
            ) from error
    return Catalog(tuple(entries), source, declared)


def _families(data: dict[str, Any], source: Path, inherited: tuple[ModelFamily, ...]) -> tuple[ModelFamily, ...]:
    """`inherited`, then the families `data` declares (a key declared again takes the new labels)."""
    raw_families = data.get("families", [])
    if not isinstance(raw_families, list):
        raise ModelUnavailableError(f"Model catalog {source}: 'families' must be a list.")
    found = {item.key: item for item in inherited}
    for raw in raw_families:
        if not isinstance(raw, dict) or not all(isinstance(raw.get(name), str) for name in _FAMILY_FIELDS):
            raise ModelUnavailableError(f"Model catalog {source}: each family needs {', '.join(_FAMILY_FIELDS)}.")
        if not re.fullmatch(r"[a-z][a-z0-9_]*", raw["key"]):  # it becomes a preference's name (model_<key>)
            raise ModelUnavailableError(f"Model catalog {source}: family key {raw['key']!r} is invalid.")
        found[Family(raw["key"])] = ModelFamily(Family(raw["key"]), raw["label"], raw["short_label"])
    return tuple(found.values())


_FAMILY_FIELDS = ("key", "label", "short_label")


@cache
def builtin_families() -> tuple[ModelFamily, ...]:
    """The families the built-in catalog declares: every family this version has adapters and preferences for."""
    return _families(_read(BUILTIN_CATALOG), BUILTIN_CATALOG, ())


def _entry(raw: dict[str, Any], families: tuple[Family, ...]) -> ModelEntry:
    """One entry's record (of one of `families`); a ValueError says what is wrong with it."""
    if raw["family"] not in families:
        raise ValueError(f"family {raw['family']!r} is not one of {', '.join(families)}")
    if not isinstance(raw["files"], list) or not raw["files"]:
        raise ValueError("'files' must be a non-empty list of {path, size?, sha256?} objects")
    files = tuple(_model_file(item) for item in raw["files"])
    _check_max_file_size(raw.get("max_file_size"))
    for kind, relative in [("directory", str(raw["directory"]))] + [("file path", item.path) for item in files]:
        if _unsafe(relative):
            raise ValueError(f"{kind} {relative!r} could leave the models folder (empty, absolute, a drive, or '..')")
    return ModelEntry(
        key=str(raw["key"]),
        family=Family(str(raw["family"])),
        adapter=str(raw["adapter"]),
        label=str(raw["label"]),
        license=str(raw["license"]),
        repository=str(raw["repository"]),
        directory=str(raw["directory"]),
        default=bool(raw.get("default", False)),
        files=files,
        options={name: value for name, value in raw.items() if name not in (*_REQUIRED, "default")},
    )


def _model_file(item: Any) -> ModelFile:
    """A declared size must be a byte count and a declared SHA-256 64 hex digits: a typo here would otherwise
    only show up as every user's download failing verification."""
    if not isinstance(item, dict) or not isinstance(item.get("path"), str):
        raise ValueError("each of 'files' must be an object with a 'path' string")
    size, sha256 = item.get("size"), item.get("sha256")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 0):
        raise ValueError(f"size of {item['path']!r} must be a byte count")
    if sha256 is not None and not (isinstance(sha256, str) and re.fullmatch(r"[0-9a-fA-F]{64}", sha256)):
        raise ValueError(f"sha256 of {item['path']!r} must be 64 hex digits")
    return ModelFile(item["path"], size, sha256.lower() if sha256 else None)


def _check_max_file_size(value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
        raise ValueError("max_file_size must be a positive byte count")


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
    return merge_catalogs(base, parse_catalog(_read(overlay), overlay, base.families))


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
    return Catalog(tuple(merged), base.source, overlay.families)


def _read(source: Path) -> Any:
    try:
        return json.loads(source.read_text(encoding="utf-8"))
    except RecursionError as error:  # json's decoder recurses once per nesting level
        raise ModelUnavailableError(
            f"Cannot read the model catalog {source}: its JSON is nested too deeply to be a catalog."
        ) from error
    except (OSError, ValueError) as error:
        raise ModelUnavailableError(f"Cannot read the model catalog {source}: {error}.") from error
