"""The Upscale tools' 2× / 4× choice and the size it makes, for the image, frame and texture upscalers."""

from __future__ import annotations

from typing import Any

import bpy

from ...contract.sizes import fit_long_edge_size
from .. import preferences


def scale_property(default: str) -> Any:
    """The Upscale tools' 2× / 4× choice, declared once for every upscale operator."""
    return bpy.props.EnumProperty(
        name="Scale",
        items=(("2", "2×", "Twice the width and height"), ("4", "4×", "Four times the width and height")),
        default=default,
    )


def upscale_target(width: int, height: int, scale: int, max_input_size: int) -> tuple[int, int]:
    """The result's size, as the server computes it: the source limited to Maximum AI Input Size along its
    longer side (fit_long_edge_size), then multiplied by the scale."""
    limited_width, limited_height = fit_long_edge_size((width, height), max_input_size)
    return (limited_width * scale, limited_height * scale)


def target_size(image: bpy.types.Image, scale: int) -> tuple[int, int]:
    size = preferences.job_max_input_size(preferences.get_preferences())
    return upscale_target(image.size[0], image.size[1], scale, size)
