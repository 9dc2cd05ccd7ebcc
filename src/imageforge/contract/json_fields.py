"""Reading one JSON object of a versioned document, field by field, each problem one InputError sentence.

The documents a job writes for the other side (contract/depth_metadata.py, contract/cameras.py) are frozen
dataclasses whose `from_json` reads through `JsonFields`, so a wrong or missing field reads the same way in
every document: "The depth metadata: fx must be a positive number (found 0)."
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from .errors import InputError

UNVERSIONED = 1  # documents written before they carried `version` have the layout of version 1


def read_json_file(path: Path, what: str) -> object:
    """The JSON value a document file holds; an unreadable or non-JSON file is one InputError naming `what`."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError(f"Cannot read {what} {Path(path).name}: {error}") from error


class JsonFields:
    """The fields of `raw`, a JSON object, for the document (or part of one) a reader calls `what`."""

    def __init__(self, raw: object, what: str) -> None:
        if not isinstance(raw, dict):
            raise InputError(f"{what} is not a JSON object.")
        self.raw: dict[str, Any] = raw
        self.what = what

    def version(self, newest: int) -> int:
        """The document's layout version; none is version 1, a newer one than this reader knows is refused."""
        value = self.raw.get("version", UNVERSIONED)
        if not _is_int(value) or value < 1:
            raise self._wrong("version", "a whole number from 1", value)
        if value > newest:
            raise InputError(
                f"{self.what} has layout version {value}, newer than this ImageForge reads ({newest}); "
                "update the add-on."
            )
        return int(value)

    def integer(self, name: str, *, minimum: int = 0) -> int:
        value = self._get(name)
        if not _is_int(value) or value < minimum:
            raise self._wrong(name, f"a whole number from {minimum}", value)
        return int(value)

    def number(self, name: str, *, positive: bool = False, default: float | None = None) -> float:
        """A finite number; `default` when the field is absent (a field added after version 1 was fixed)."""
        if default is not None and name not in self.raw:
            return default
        value = self._get(name)
        if not _is_number(value) or (positive and value <= 0):
            raise self._wrong(name, "a positive number" if positive else "a finite number", value)
        return float(value)

    def text(self, name: str) -> str:
        value = self._get(name)
        if not isinstance(value, str):
            raise self._wrong(name, "a string", value)
        return value

    def size(self, name: str) -> tuple[int, int]:
        """[width, height] in pixels, both positive."""
        value = self._get(name)
        if not (isinstance(value, list) and len(value) == 2 and all(_is_int(v) and v > 0 for v in value)):
            raise self._wrong(name, "[width, height] in pixels", value)
        return int(value[0]), int(value[1])

    def array(self, name: str, *, non_empty: bool = False) -> list[Any]:
        value = self._get(name)
        if not isinstance(value, list) or (non_empty and not value):
            raise self._wrong(name, "a non-empty list" if non_empty else "a list", value)
        return value

    def matrix(self, name: str, rows: int, columns: int) -> tuple[tuple[float, ...], ...]:
        """A `rows` × `columns` list of lists of finite numbers."""
        value = self._get(name)
        if not (
            isinstance(value, list)
            and len(value) == rows
            and all(isinstance(row, list) and len(row) == columns and all(map(_is_number, row)) for row in value)
        ):
            raise self._wrong(name, f"a {rows}×{columns} matrix of finite numbers", value)
        return tuple(tuple(float(item) for item in row) for row in value)

    def flag(self, name: str) -> bool:
        value = self._get(name)
        if not isinstance(value, bool):
            raise self._wrong(name, "true or false", value)
        return value

    def optional_text(self, name: str) -> str | None:
        """A string or null."""
        return None if self._get(name) is None else self.text(name)

    def optional_number(self, name: str) -> float | None:
        """A finite number or null."""
        return None if self._get(name) is None else self.number(name)

    def texts(self, name: str, *, default: tuple[str, ...] | None = None) -> tuple[str, ...]:
        """A list of strings; `default` when the field is absent (a field added after version 1 was fixed)."""
        if default is not None and name not in self.raw:
            return default
        value = self.array(name)
        if not all(isinstance(item, str) for item in value):
            raise self._wrong(name, "a list of strings", value)
        return tuple(value)

    def text_map(self, name: str) -> dict[str, str]:
        """An object of strings."""
        value = self._get(name)
        if not (isinstance(value, dict) and all(isinstance(item, str) for item in value.values())):
            raise self._wrong(name, "an object of strings", value)
        return dict(value)

    def objects(self, name: str) -> list[JsonFields]:
        """A list of objects, each read on its own ("The models snapshot, loaded #2: ...")."""
        return [JsonFields(item, f"{self.what}, {name} #{index + 1}") for index, item in enumerate(self.array(name))]

    def child(self, name: str) -> JsonFields:
        """A nested object, its problems named after the path to it ("The camera path, frame 3, intrinsics")."""
        return JsonFields(self._get(name), f"{self.what}, {name}")

    def problem(self, text: str) -> InputError:
        return InputError(f"{self.what}: {text}.")

    def _get(self, name: str) -> Any:
        if name not in self.raw:
            raise InputError(f"{self.what}: {name} is missing.")
        return self.raw[name]

    def _wrong(self, name: str, kind: str, value: object) -> InputError:
        shown = repr(value)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        return InputError(f"{self.what}: {name} must be {kind} (found {shown}).")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
