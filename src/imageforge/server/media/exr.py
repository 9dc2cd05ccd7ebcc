"""OpenEXR in and out through the OpenEXR package (maintained by the ASWF, wheels for all three platforms).

Reading picks the colour layer Blender users mean: plain R/G/B(/A), else a render layer's `<layer>.R/G/B`
(preferring `Combined`), else luminance `Y`. Half-float channels are widened to float32. Pixels outside
the data window (border renders) are transparent black inside the display window, which is the image
size Blender shows. EXR colour is premultiplied by alpha per the format's spec; the Image says so.

Writing stores float32 channels, ZIP-compressed (lossless, good on smooth depth data), under any names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import OpenEXR

from ...contract.errors import InputError
from .atomic import atomic_file
from .formats import check_dimensions, corrupt
from .image import AlphaMode, Image, SampleKind


@dataclass(frozen=True)
class ExrLayout:
    """Where the colour lives in an EXR file, read from its header alone."""

    width: int
    height: int
    part: int
    prefix: str
    channels: tuple[str, ...]  # the channel names read, e.g. ("R", "G", "B", "A") or ("Y",)

    @property
    def has_alpha(self) -> bool:
        return self.channels[-1].endswith("A")


def probe_exr(path: Path) -> ExrLayout:
    """Read the header only: size, and which channels hold the colour; errors name the file."""
    try:
        parts = OpenEXR.File(str(path), header_only=True).parts
    except RuntimeError as error:
        raise corrupt(path, "not a readable OpenEXR file") from error
    available: list[str] = []
    for index, part in enumerate(parts):
        names = [channel.name for channel in part.header["channels"]]
        available.extend(names)
        layout = _colour_channels(names)
        if layout is not None:
            prefix, channels = layout
            low, high = part.header["displayWindow"]
            width, height = int(high[0] - low[0] + 1), int(high[1] - low[1] + 1)
            check_dimensions(path, width, height)
            return ExrLayout(width, height, index, prefix, channels)
    shown = ", ".join(available[:8]) or "none"
    raise InputError(f"'{path.name}' has no colour channels (R, G, B or Y) to read; it contains: {shown}.")


def _colour_channels(names: list[str]) -> tuple[str, tuple[str, ...]] | None:
    present = set(names)
    prefixes = [""] + sorted({name.rsplit(".", 1)[0] + "." for name in names if "." in name})
    # Prefer the unprefixed layer, then Blender's Combined pass, then any other layer, in name order.
    prefixes.sort(key=lambda prefix: (prefix != "", not prefix.endswith("Combined."), prefix))
    for prefix in prefixes:
        colour: tuple[str, ...]
        if {prefix + "R", prefix + "G", prefix + "B"} <= present:
            colour = (prefix + "R", prefix + "G", prefix + "B")
        elif prefix + "Y" in present:
            colour = (prefix + "Y",)
        else:
            continue
        alpha = (prefix + "A",) if prefix + "A" in present else ()
        return prefix, tuple(name[len(prefix) :] for name in colour + alpha)
    return None


def read_exr(path: Path, layout: ExrLayout | None = None) -> Image:
    """Decode the colour layer as float32 RGB(A), premultiplied, at the display-window size."""
    layout = layout or probe_exr(path)
    try:
        parts = OpenEXR.File(str(path), separate_channels=True).parts
    except RuntimeError as error:
        raise corrupt(path, "its pixel data is truncated or corrupt") from error
    if len(parts) <= layout.part:  # OpenEXR 3.5 warns and returns no parts where 3.4 raised
        raise corrupt(path, "its pixel data is truncated or corrupt")
    part = parts[layout.part]
    planes = [np.asarray(part.channels[layout.prefix + name].pixels, dtype=np.float32) for name in layout.channels]
    if len(planes) in (1, 2):  # Y or YA: grey to RGB
        planes = [planes[0]] * 3 + planes[1:]
    data = np.stack(planes, axis=2)
    (data_low, _), (display_low, _) = part.header["dataWindow"], part.header["displayWindow"]
    pixels = _place_in_display_window(data, data_low - display_low, (layout.width, layout.height))
    mode = AlphaMode.PREMULTIPLIED if pixels.shape[2] == 4 else AlphaMode.STRAIGHT
    return Image(pixels, SampleKind.FLOAT, mode)


def _place_in_display_window(data: np.ndarray, offset: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    width, height = size
    x, y = int(offset[0]), int(offset[1])
    if (x, y) == (0, 0) and data.shape[:2] == (height, width):
        return np.ascontiguousarray(data)
    canvas = np.zeros((height, width, data.shape[2]), dtype=np.float32)
    top, left = max(y, 0), max(x, 0)
    bottom, right = min(y + data.shape[0], height), min(x + data.shape[1], width)
    if bottom > top and right > left:
        canvas[top:bottom, left:right] = data[top - y : bottom - y, left - x : right - x]
    return canvas


def write_exr(path: Path, channels: Mapping[str, np.ndarray]) -> Path:
    """Atomically write float32 (H, W) channels under the given names, ZIP-compressed; returns `path`.

    E.g. {"R": x, "G": y, "B": z, "A": alpha} for depth points, or {"Y": matte} for a single matte.
    """
    if not channels:
        raise ValueError("write_exr needs at least one channel")
    shapes = {np.shape(plane) for plane in channels.values()}
    if len(shapes) != 1 or len(next(iter(shapes))) != 2:
        raise ValueError(f"EXR channels must share one (H, W) shape, got {sorted(shapes)}")
    planes = {name: np.ascontiguousarray(plane, dtype=np.float32) for name, plane in channels.items()}
    header = {"compression": OpenEXR.ZIP_COMPRESSION, "type": OpenEXR.scanlineimage}
    with atomic_file(Path(path)) as temporary:
        OpenEXR.File(header, planes).write(str(temporary))
    return Path(path)
