"""Parse a job's plain-dict parameters into its frozen dataclass, validating every field.

A parameter class is a frozen dataclass whose fields carry a `param(...)` spec. Supported field types:
`str`, `int`, `float`, `bool`, a `StrEnum`, `list[str]`, `Selection`, a frozen dataclass with a classmethod
`parse(name, raw)` (segment-image's `Clicks` and `PromptBox`), and any of these `| None`.
Errors are `InputError`s with one sentence naming the parameter.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar, overload

from .errors import InputError
from .selection_geometry import MaskRuns, even_odd_area

T = TypeVar("T")
_MISSING = dataclasses.MISSING


@overload
def param(
    default: T,
    *,
    doc: str,
    minimum: float | None = None,
    maximum: float | None = None,
    choices: tuple[Any, ...] | None = None,
    max_length: int = 4096,
    path: bool = False,
    setting: str | None = None,
    family: str | None = None,
) -> T: ...


@overload
def param(
    *,
    doc: str,
    minimum: float | None = None,
    maximum: float | None = None,
    choices: tuple[Any, ...] | None = None,
    max_length: int = 4096,
    path: bool = False,
    setting: str | None = None,
    family: str | None = None,
) -> Any: ...


def param(
    default: Any = _MISSING,
    *,
    doc: str,
    minimum: float | None = None,
    maximum: float | None = None,
    choices: tuple[Any, ...] | None = None,
    max_length: int = 4096,
    path: bool = False,
    setting: str | None = None,
    family: str | None = None,
) -> Any:
    """Declare one job parameter: its default (omit for required), documentation and limits.

    `path=True` marks a file-system path: the server opens it as given, so a client resolves relative paths
    against its own working folder before submitting (the server runs in the storage root).
    `setting` names the user setting a client fills the field from when it has one (`device`, `max_input_size`,
    `resolution_level`: the add-on's preferences of those names); `family` marks a catalog key of a model of that
    family, which a client fills from its choice for the family (the add-on's `model_<family>` preference).
    """
    metadata = {
        "path": path,
        "setting": setting,
        "family": family,
        "doc": doc,
        "minimum": minimum,
        "maximum": maximum,
        "choices": choices,
        "max_length": max_length,
    }
    if isinstance(default, list):
        frozen = tuple(default)
        return dataclasses.field(default_factory=lambda: list(frozen), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


LASSO_COORDINATE_LIMIT = 1e7  # pixels: far beyond any image, close enough for exact float arithmetic


MASK_RUNS_LIMIT = 1 << 22  # run lengths in one mask selection: far beyond any mask a click or a brush makes
SELECTION_KINDS = (
    '{"box": [x0, y0, x1, y1]}, {"lasso": [[x, y], ...]}, {"mask": {"width": W, "height": H, "runs": [...]}} '
    'or {"mask_file": "mask.png"} ("@mask.png" for short)'
)


@dataclasses.dataclass(frozen=True)
class Selection:
    """A region of an image in pixels: exactly one of a box `[x0, y0, x1, y1]`, a lasso polygon `[[x, y], ...]`,
    a run-length mask of the image's size (contract/selection_geometry.py `MaskRuns`), or the path of a grey or
    alpha mask image of the image's size (read by the server; grey levels between black and white are a soft
    edge)."""

    box: tuple[float, float, float, float] | None = None
    lasso: tuple[tuple[float, float], ...] | None = None
    mask: MaskRuns | None = None
    mask_file: str | None = None

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        """The selection's bounds in pixels; a mask file's are known only once the server has read it."""
        if self.box is not None:
            return self.box
        if self.mask is not None:
            bounds = self.mask.bounds
            assert bounds is not None  # parse() refuses an empty mask
            return bounds
        if self.lasso is None:
            raise ValueError("the bounds of a mask file are known once the file is read")
        xs = [x for x, _ in self.lasso]
        ys = [y for _, y in self.lasso]
        return (min(xs), min(ys), max(xs), max(ys))

    def overlaps(self, width: int, height: int) -> bool:
        """Whether the selection's bounds meet an image of `width` × `height` pixels at all (a mask must be of the
        image's size: `size_mismatch`; a mask file is checked when the server reads it)."""
        if self.mask_file is not None:
            return True
        left, top, right, bottom = self.bounds
        return right > 0 and bottom > 0 and left < width and top < height

    def size_mismatch(self, width: int, height: int) -> str | None:
        """The one sentence for a run-length mask of another size than the image's, else None."""
        if self.mask is None or (self.mask.width, self.mask.height) == (width, height):
            return None
        return (
            f"The mask selection is {self.mask.width}×{self.mask.height} pixels but the image is {width}×{height}; "
            "make the selection on this image again."
        )

    def to_dict(self) -> dict[str, Any]:
        if self.box is not None:
            return {"box": list(self.box)}
        if self.mask is not None:
            return {"mask": {"width": self.mask.width, "height": self.mask.height, "runs": list(self.mask.runs)}}
        if self.mask_file is not None:
            return {"mask_file": self.mask_file}
        return {"lasso": [list(point) for point in self.lasso or ()]}

    @classmethod
    def parse(cls, name: str, raw: Any) -> Selection:
        if isinstance(raw, str) and raw.startswith("@"):  # the command line's spelling of a mask file
            raw = {"mask_file": raw[1:]}
        kinds = {"box", "lasso", "mask", "mask_file"}
        if not isinstance(raw, dict) or len(raw) != 1 or not (kinds & raw.keys()):
            raise InputError(f"'{name}' must be {SELECTION_KINDS}.")
        if "mask" in raw:
            return cls(mask=_mask_runs(name, raw["mask"]))
        if "mask_file" in raw:
            path = raw["mask_file"]
            if not isinstance(path, str) or not path or len(path) > 4096 or "\x00" in path:
                raise InputError(f"'{name}' mask_file must be the path of a mask image.")
            return cls(mask_file=path)
        if "box" in raw:
            box = raw["box"]
            if not isinstance(box, list) or len(box) != 4:
                raise InputError(f"'{name}' box must be four numbers [x0, y0, x1, y1].")
            x0, y0, x1, y1 = (_finite_number(f"{name}.box", value) for value in box)
            if x1 <= x0 or y1 <= y0:
                raise InputError(f"'{name}' box is empty: x1 must exceed x0 and y1 must exceed y0.")
            return cls(box=(x0, y0, x1, y1))
        points = raw["lasso"]
        if not isinstance(points, list) or len(points) > 100_000:
            raise InputError(f"'{name}' lasso must be a list of at most 100000 [x, y] points.")
        parsed = []
        for point in points:
            if not isinstance(point, list) or len(point) != 2:
                raise InputError(f"'{name}' lasso points must each be [x, y].")
            parsed.append((_finite_number(f"{name}.lasso", point[0]), _finite_number(f"{name}.lasso", point[1])))
        if any(abs(value) > LASSO_COORDINATE_LIMIT for point in parsed for value in point):
            raise InputError(
                f"'{name}' lasso points must lie within ±{LASSO_COORDINATE_LIMIT:.0f} pixels; draw it over the image."
            )
        if len(set(parsed)) < 3 or even_odd_area(parsed, stop_above=0.5) <= 0.5:  # a figure-eight counts both loops
            raise InputError(f"'{name}' lasso needs at least three points enclosing an area.")
        return cls(lasso=tuple(parsed))


def _mask_runs(name: str, raw: Any) -> MaskRuns:
    shape = '{"width": W, "height": H, "runs": [outside, inside, outside, ...]}'
    if not isinstance(raw, dict) or set(raw) != {"width", "height", "runs"}:
        raise InputError(f"'{name}' mask must be {shape}.")
    width, height, runs = raw["width"], raw["height"], raw["runs"]
    whole = (width, height, *runs) if isinstance(runs, list) and len(runs) <= MASK_RUNS_LIMIT else None
    if whole is None or not all(isinstance(value, int) and not isinstance(value, bool) for value in whole):
        raise InputError(f"'{name}' mask must be {shape} with whole numbers (at most {MASK_RUNS_LIMIT} runs).")
    try:
        mask = MaskRuns(width, height, tuple(runs))
    except ValueError as error:
        raise InputError(f"'{name}' mask is invalid: {error}.") from None
    if mask.area == 0:
        raise InputError(f"'{name}' mask selects no pixel; click on the object to select it.")
    return mask


def _finite_number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"'{name}' must be a number, not {type(value).__name__}.")
    if not math.isfinite(value):
        raise InputError(f"'{name}' must be a finite number.")
    return float(value)


def to_plain(parameters: object) -> dict[str, Any]:
    """A parameter dataclass as the plain dict a job is submitted with (enums by value, selections as their
    JSON shape); `parse_parameters` reads it back to an equal value."""
    plain: dict[str, Any] = {}
    for field in dataclasses.fields(parameters):  # type: ignore[arg-type]  # a parameter dataclass (module doc)
        plain[field.name] = _plain_value(getattr(parameters, field.name))
    return plain


def _plain_value(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Selection):
        return value.to_dict()
    plain = getattr(value, "to_list", None)  # a typed value that parses itself (segment-image's Clicks, PromptBox)
    if dataclasses.is_dataclass(value) and callable(plain):
        return plain()
    if isinstance(value, (list, tuple)):
        return [_plain_value(item) for item in value]
    return value


def setting_parameters(cls: type) -> dict[str, str]:
    """{field name: the user setting it is filled from} (`param(setting=...)`)."""
    return {field.name: field.metadata["setting"] for field in dataclasses.fields(cls) if field.metadata.get("setting")}


def model_parameters(cls: type) -> dict[str, str]:
    """{field name: the model family whose catalog key it holds} (`param(family=...)`)."""
    return {field.name: field.metadata["family"] for field in dataclasses.fields(cls) if field.metadata.get("family")}


def path_parameters(cls: type) -> tuple[str, ...]:
    """Names of the parameters that hold file-system paths."""
    return tuple(field.name for field in dataclasses.fields(cls) if field.metadata.get("path"))


def with_absolute_paths(parameters: T, absolute: Callable[[str], str]) -> T:
    """`parameters` with every path made `absolute`: the path fields (`param(path=True)`) and the mask file of every
    selection. The server opens them as given, from the storage root, so a client resolves them against its own
    working folder first."""
    changes: dict[str, Any] = {}
    for field in dataclasses.fields(parameters):  # type: ignore[arg-type]  # a parameter dataclass (module doc)
        value = getattr(parameters, field.name)
        if field.metadata.get("path") and isinstance(value, str) and value:
            changes[field.name] = absolute(value)
        elif isinstance(value, Selection) and value.mask_file:
            changes[field.name] = dataclasses.replace(value, mask_file=absolute(value.mask_file))
    return dataclasses.replace(parameters, **changes)  # type: ignore[type-var]  # a parameter dataclass


def field_docs(cls: type) -> list[dict[str, Any]]:
    """Describe a parameter class (for docs and `--help`): name, type, default, limits, doc."""
    hints = typing.get_type_hints(cls)
    described = []
    for field in dataclasses.fields(cls):
        if field.default is not _MISSING:
            default = field.default
        elif field.default_factory is not _MISSING:
            default = field.default_factory()
        else:
            default = _MISSING
        described.append(
            {
                "name": field.name,
                "type": _type_name(hints[field.name]),
                "required": default is _MISSING,
                "default": None if default is _MISSING else _plain(default),
                **{key: field.metadata.get(key) for key in ("doc", "minimum", "maximum", "choices")},
            }
        )
    return described


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value


def _type_name(annotation: Any) -> str:
    base, optional = _unwrap_optional(annotation)
    if isinstance(base, type) and issubclass(base, enum.Enum):
        name = "enum(" + "|".join(str(member.value) for member in base) + ")"
    elif typing.get_origin(base) is list:
        name = "list[str]"
    else:
        name = getattr(base, "__name__", str(base))
    return f"{name} | null" if optional else name


def _unwrap_optional(annotation: Any) -> tuple[Any, bool]:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [member for member in typing.get_args(annotation) if member is not type(None)]
        if len(members) == 1:
            return members[0], True
    return annotation, False


def parse_parameters(cls: type[T], raw: Any) -> T:
    """Validate a plain dict against a parameter dataclass and return the typed, frozen value."""
    if not isinstance(raw, dict):
        raise InputError("Job parameters must be a JSON object.")
    # `cls` is a parameter dataclass (module docstring); a TypeVar bound to a dataclass needs typeshed's private
    # DataclassInstance protocol, so the checker is told here instead.
    fields = {field.name: field for field in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(raw) - set(fields))
    if unknown:
        raise InputError(f"Unknown parameter '{unknown[0]}'; valid parameters are: {', '.join(sorted(fields))}.")
    hints = typing.get_type_hints(cls)
    values = {}
    for name, field in fields.items():
        if name not in raw:
            if field.default is _MISSING and field.default_factory is _MISSING:
                raise InputError(f"Missing required parameter '{name}'.")
            continue
        values[name] = _convert(name, raw[name], hints[name], field.metadata)
    return cls(**values)


def _convert(name: str, value: Any, annotation: Any, spec: Any) -> Any:
    base, optional = _unwrap_optional(annotation)
    if value is None:
        if optional:
            return None
        raise InputError(f"'{name}' must not be null.")
    if base is bool:
        if not isinstance(value, bool):
            raise InputError(f"'{name}' must be true or false, not {type(value).__name__}.")
        return value
    if base is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise InputError(f"'{name}' must be a whole number, not {value!r}.")
        return _in_range(name, value, spec)
    if base is float:
        return _in_range(name, _finite_number(name, value), spec)
    if base is str:
        if not isinstance(value, str):
            raise InputError(f"'{name}' must be text, not {type(value).__name__}.")
        if len(value) > spec.get("max_length", 4096) or "\x00" in value:
            raise InputError(f"'{name}' is too long or contains a NUL character.")
        return _in_choices(name, value, spec)
    if isinstance(base, type) and issubclass(base, enum.Enum):
        valid = [str(member.value) for member in base]
        if not isinstance(value, str) or value.lower() not in valid:
            raise InputError(f"'{name}' must be one of {', '.join(valid)}; got {value!r}.")
        return base(value.lower())
    if typing.get_origin(base) is list:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise InputError(f"'{name}' must be a list of text values.")
        if len(value) > 256:
            raise InputError(f"'{name}' has too many entries (at most 256).")
        return list(value)
    parse = getattr(base, "parse", None) if isinstance(base, type) and dataclasses.is_dataclass(base) else None
    if isinstance(parse, types.MethodType):  # a typed value that parses itself: a selection, segment-image's prompts
        return parse(name, value)
    raise TypeError(f"Unsupported parameter type for {name}: {annotation!r}")  # a contract bug


def _in_range(name: str, value: float, spec: Any) -> Any:
    minimum, maximum = spec.get("minimum"), spec.get("maximum")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise InputError(f"'{name}' must be between {minimum} and {maximum}; got {value}.")
    return _in_choices(name, value, spec)


def _in_choices(name: str, value: Any, spec: Any) -> Any:
    choices = spec.get("choices")
    if choices is not None and value not in choices:
        raise InputError(f"'{name}' must be one of {', '.join(map(str, choices))}; got {value!r}.")
    return value
