"""What a user gives Segment Anything: clicks (positive and negative points) and an optional box, in image pixels.

Coordinates are the jobs' pixels: x to the right, y down, (0, 0) the image's top-left corner, (width, height) its
bottom-right one. The same checks run in the add-on before a click is sent and on the server before the decoder
runs (`prompt_problem`): every point on the image, at least one positive point or a box, a box that meets the
image. `MultimaskMode.AUTO` asks for the three candidate masks (and picks the best-scored) exactly when the
prompt is ambiguous, a single point and no box, as SAM 2's predictor recommends; otherwise one mask.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from .errors import InputError

MAX_POINTS = 64  # far beyond what anyone clicks on one object
POSITIVE, NEGATIVE = 1, 0


class MultimaskMode(StrEnum):
    AUTO = "auto"  # three candidates for a single point without a box, else one mask
    ON = "on"
    OFF = "off"


@dataclass(frozen=True)
class Click:
    x: float
    y: float
    positive: bool

    def to_list(self) -> list[float | int]:
        return [self.x, self.y, POSITIVE if self.positive else NEGATIVE]


@dataclass(frozen=True)
class Clicks:
    """Points `[[x, y, label], ...]`, label 1 for the object and 0 for what is not the object."""

    points: tuple[Click, ...] = ()

    @property
    def positives(self) -> int:
        return sum(click.positive for click in self.points)

    def to_list(self) -> list[list[float | int]]:
        return [click.to_list() for click in self.points]

    @classmethod
    def parse(cls, name: str, raw: Any) -> Clicks:
        shape = f"'{name}' must be a list of [x, y, label] with label 1 (object) or 0 (not the object)"
        if not isinstance(raw, list) or len(raw) > MAX_POINTS:
            raise InputError(f"{shape}, at most {MAX_POINTS} points.")
        points = []
        for item in raw:
            if not isinstance(item, list) or len(item) != 3 or item[2] not in (0, 1) or isinstance(item[2], float):
                raise InputError(f"{shape}.")
            x, y = (_finite(name, value) for value in item[:2])
            points.append(Click(x, y, item[2] == POSITIVE))
        return cls(tuple(points))


@dataclass(frozen=True)
class PromptBox:
    """A box prompt `[x0, y0, x1, y1]` around the object."""

    x0: float
    y0: float
    x1: float
    y1: float

    def to_list(self) -> list[float]:
        return [self.x0, self.y0, self.x1, self.y1]

    @classmethod
    def parse(cls, name: str, raw: Any) -> PromptBox:
        if not isinstance(raw, list) or len(raw) != 4:
            raise InputError(f"'{name}' must be four numbers [x0, y0, x1, y1].")
        x0, y0, x1, y1 = (_finite(name, value) for value in raw)
        if x1 <= x0 or y1 <= y0:
            raise InputError(f"'{name}' is empty: x1 must exceed x0 and y1 must exceed y0.")
        return cls(x0, y0, x1, y1)


def prompt_problem(points: Clicks, box: PromptBox | None, width: int, height: int) -> str | None:
    """The one sentence saying why these prompts cannot segment a `width` × `height` image, or None."""
    for click in points.points:
        if not (0.0 <= click.x <= width and 0.0 <= click.y <= height):
            return (
                f"The point ({click.x:g}, {click.y:g}) lies outside the image ({width}×{height} pixels); "
                "click on the image."
            )
    if box is not None and (box.x1 <= 0 or box.y1 <= 0 or box.x0 >= width or box.y0 >= height):
        return f"The box lies outside the image ({width}×{height} pixels); drag it over the image."
    if points.positives == 0 and box is None:
        return "Click at least once on the object (a positive point) or drag a box around it."
    return None


def wants_multimask(mode: MultimaskMode, points: Clicks, box: PromptBox | None) -> bool:
    if mode is MultimaskMode.AUTO:
        return box is None and len(points.points) == 1
    return mode is MultimaskMode.ON


def _finite(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"'{name}' coordinates must be finite numbers.")
    return float(value)
