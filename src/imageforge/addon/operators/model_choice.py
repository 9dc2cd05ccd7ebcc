"""A tool's own choice of background model: "Preferences" (the background model chosen in the extension's
preferences, the default) or any background model of the catalog (BEN2, the BiRefNet entries), per operator.

The choice is an operator property, so it can be set from a script or F3 (`bpy.ops.imageforge.remove_background(
background_model="BIREFNET_LITE")`) and Blender remembers the last one used; the job gets it as its model field
and its provenance names what ran.
"""

from __future__ import annotations

from typing import Any

import bpy

from ...contract.catalog import Family
from .. import choices
from ..preferences import model_catalog

PREFERENCES = "PREFERENCES"
BACKGROUND = Family("background")
_items: list[tuple[str, str, str, int]] = []  # Blender needs Python to keep the strings of dynamic enum items


def _background_items(_self: Any, _context: Any) -> list[tuple[str, str, str, int]]:
    found = choices.model_choices(BACKGROUND, model_catalog())
    _items[:] = [(PREFERENCES, "Preferences", "The background model chosen in the extension's preferences", 0)]
    _items.extend(
        (choice.key, choice.label, f"{choice.label} ({choice.key})", index + 1) for index, choice in enumerate(found)
    )
    return _items


def background_model_property() -> Any:
    return bpy.props.EnumProperty(
        name="Model",
        description="Background model for this tool; Preferences uses the one chosen in the extension's preferences",
        items=_background_items,
    )


def chosen_background_model(choice: str, field: str = "model") -> dict[str, str]:
    """The job field for the operator's choice: nothing for Preferences (job_parameters fills it), else the key."""
    return {} if choice in (PREFERENCES, "") else {field: choice}
