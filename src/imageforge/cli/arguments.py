"""Turn `key=value` words into job parameters: values are JSON when they parse as JSON, else text."""

from __future__ import annotations

import json
from typing import Any

from ..contract import InputError


def parse_assignments(words: list[str]) -> dict[str, Any]:
    parameters: dict[str, Any] = {}
    for word in words:
        key, separator, value = word.partition("=")
        if not separator or not key:
            raise InputError(f"Expected key=value, got '{word}'.")
        try:
            parameters[key] = json.loads(value)
        except ValueError:
            parameters[key] = value
    return parameters
