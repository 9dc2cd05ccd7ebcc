"""Register a model converted on this machine in the storage root's local catalog overlay.

The overlay (`<storage>/models/local-catalog.json`) has the catalog's own schema; `contract.catalog.load_catalog`
merges it over the built-in (or $IMAGEFORGE_MODEL_CATALOG) catalog wherever a storage root is known: the server's
jobs, the CLI, the add-on's menus. An entry registered here is its family's default; the overlay's other
entries of that family stop being defaults. Written atomically, so a reader never sees half a file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...contract.catalog import local_overlay_path, parse_catalog
from ..media import write_json


def register(storage_root: Path, record: dict[str, Any]) -> Path:
    """Add or replace `record` (a catalog entry as JSON) in the overlay; returns the overlay's path."""
    path = local_overlay_path(storage_root)
    models: list[dict[str, Any]] = []
    if path.is_file():
        models = list(json.loads(path.read_text(encoding="utf-8")).get("models", []))
    kept = [
        {**entry, "default": False} if entry.get("family") == record["family"] and record.get("default") else entry
        for entry in models
        if entry.get("key") != record["key"]
    ]
    document = {"models": [*kept, record]}
    parse_catalog(document, path)  # refuse to write what the loader would refuse to read
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_json(path, document)
