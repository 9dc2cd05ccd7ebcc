"""provenance.json, the one record of what really ran in a job: the server writes it, the CLI and the add-on read it.

Users complain most about silent CPU fallback, so every inference job's result names this file: each model the job
ran, the device asked for and the device that really ran it, and the device warnings the job raised (an accelerator
that is not available or failed while running), and the input warnings (a model given another picture than it was
made for, such as a fixed-size export letterboxing a frame). The job's progress message shows a warning only until
the next step replaces it; this file is where the CLI's stderr line and Blender's WARNING report come from.

Reading is defensive (a server of another version may write less): missing or mistyped fields read as empty.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .results import ResultName

FILE = "provenance.json"
RESULT_KEY = ResultName.PROVENANCE


@dataclass(frozen=True)
class ModelRun:
    """One model a job loaded: the device asked for, and the device and ONNX Runtime provider that ran it."""

    model: str
    label: str
    requested_device: str
    device: str
    provider: str
    providers: tuple[str, ...] = ()
    intra_op_threads: int = 0  # what the session was created with: every physical core unless Blender is attached
    runs: int = 0
    model_seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "label": self.label,
            "requested_device": self.requested_device,
            "device": self.device,
            "provider": self.provider,
            "providers": list(self.providers),
            "intra_op_threads": self.intra_op_threads,
            "runs": self.runs,
            "model_seconds": round(self.model_seconds, 6),
        }

    @classmethod
    def from_json(cls, raw: Any) -> ModelRun | None:
        raw = raw if isinstance(raw, Mapping) else {}
        if not isinstance(raw.get("model"), str):
            return None
        providers = raw.get("providers")
        return cls(
            model=raw["model"],
            label=_text(raw.get("label")) or raw["model"],
            requested_device=_text(raw.get("requested_device")),
            device=_text(raw.get("device")),
            provider=_text(raw.get("provider")),
            providers=tuple(str(item) for item in providers) if isinstance(providers, list) else (),
            intra_op_threads=raw.get("intra_op_threads") if isinstance(raw.get("intra_op_threads"), int) else 0,
            runs=raw.get("runs") if isinstance(raw.get("runs"), int) else 0,
            model_seconds=float(raw["model_seconds"]) if isinstance(raw.get("model_seconds"), (int, float)) else 0.0,
        )


@dataclass(frozen=True)
class Provenance:
    models: tuple[ModelRun, ...] = ()
    warnings: tuple[str, ...] = ()  # device warnings, each one sentence, in the order the job raised them
    # what a model was given differs from what it was made for (a fixed-size export letterboxing frames), each
    # one sentence saying what to use instead
    input_warnings: tuple[str, ...] = ()

    @property
    def devices(self) -> dict[str, str]:
        """{model key: the device that really ran it}."""
        return {run.model: run.device for run in self.models}

    def to_json(self) -> dict[str, Any]:
        return {
            "models": [run.to_json() for run in self.models],
            "warnings": list(self.warnings),
            "input_warnings": list(self.input_warnings),
        }

    @classmethod
    def from_json(cls, raw: Any) -> Provenance:
        raw = raw if isinstance(raw, Mapping) else {}
        models = raw.get("models") if isinstance(raw.get("models"), list) else []
        runs = (ModelRun.from_json(item) for item in models)
        return cls(
            tuple(run for run in runs if run is not None),
            _sentences(raw, "warnings"),
            _sentences(raw, "input_warnings"),
        )

    @classmethod
    def of_result(cls, result: Any) -> Provenance:
        """The provenance a finished job's result names (a BlendJob JobResult: `value`, `file(name)`), if any."""
        value = getattr(result, "value", None)
        if not isinstance(value, Mapping) or RESULT_KEY not in value:
            return cls()
        return cls.read(result.file(RESULT_KEY))

    @classmethod
    def read(cls, path: Path) -> Provenance:
        """The provenance in `path`; an unreadable or malformed file reads as "nothing recorded"."""
        try:
            return cls.from_json(json.loads(Path(path).read_text(encoding="utf-8")))
        except (OSError, ValueError):
            return cls()


def _sentences(raw: Mapping[str, Any], key: str) -> tuple[str, ...]:
    values = raw.get(key)
    return tuple(str(item) for item in values if item) if isinstance(values, list) else ()


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
