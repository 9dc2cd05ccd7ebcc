"""YAML text for job templates, from plain dicts, lists, strings, numbers and booleans (no PyYAML in Blender).

Block style, keys in the order given (plain when they are plain names), every string value double-quoted the
way JSON quotes it (a subset of YAML's double-quoted scalars), so no value can turn into another type or break
the layout.
"""

from __future__ import annotations

import json
import re
from typing import Any

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def to_yaml(value: Any) -> str:
    return "\n".join(_lines(value, 0)) + "\n"


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    raise TypeError(f"to_yaml cannot write {type(value).__name__}")


def _lines(value: Any, indent: int) -> list[str]:
    pad = " " * indent
    if isinstance(value, dict):
        if not value:
            return [pad + "{}"]
        lines = []
        for key, item in value.items():
            name = (
                str(key)
                if _PLAIN_KEY.match(str(key)) and str(key) not in ("true", "false", "null")
                else _scalar(str(key))
            )
            if isinstance(item, dict | list) and item:
                lines.append(f"{pad}{name}:")
                lines += _lines(item, indent + 2)
            else:
                lines.append(f"{pad}{name}: {_inline(item)}")
        return lines
    if isinstance(value, list):
        if not value:
            return [pad + "[]"]
        lines = []
        for item in value:
            if isinstance(item, dict | list) and item:
                inner = _lines(item, indent + 2)
                lines.append(f"{pad}- {inner[0].lstrip()}")
                lines += inner[1:]
            else:
                lines.append(f"{pad}- {_inline(item)}")
        return lines
    return [pad + _scalar(value)]


def _inline(value: Any) -> str:
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return _scalar(value)


__all__ = ["to_yaml"]
