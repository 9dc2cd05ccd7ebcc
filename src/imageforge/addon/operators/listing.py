"""Where each tool appears: what an operator class declares, and what the menus, the Tools panel and the selection
drawer read.

An operator lists itself with two plain class attributes (not annotations: Blender reads every annotation of an
operator as a property):

    listings = (Listing(Surface.TOOLS_MENU, 10, "IMAGE_RGB_ALPHA"), Listing(Surface.TOOLS_PANEL, 10, ...))
    selection_action = SelectionAction("REFINE", "Refine Selection", 10)   # runs on a drawn box or lasso

operators/__init__.py imports every operator module and hands their classes to `collect` once; the menus
(addon/menus.py), the Tools panel (panels/tools.py) and Draw Selection's `action` (draw_selection.py) read
`listed` and `selection_actions`. A new tool is therefore its operator module: no menu, panel or enum to edit.
No bpy here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Surface(StrEnum):
    TOOLS_MENU = "tools_menu"  # the ImageForge submenu: Image Editor's Image menu, 3D Viewport's object context menu
    STRIP_MENU = "strip_menu"  # the Video Sequencer's strip context menu
    TOOLS_PANEL = "tools_panel"  # the sidebar's Tools panel, above its batch and video tools


@dataclass(frozen=True)
class Listing:
    """One place an operator appears: `order` ranks it among the surface's entries (ascending), `separated`
    draws a separator before it."""

    surface: Surface
    order: int
    icon: str
    separated: bool = False


@dataclass(frozen=True)
class SelectionRow:
    """One row of the Tools panel's selection tools: its title and the Draw Selection options it sets."""

    title: str
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SelectionAction:
    """A tool that runs on a drawn box or lasso: Draw Selection's `action` item `key` (kept: REFINE, CUTOUT,
    PARALLAX), its label, its rank, the Draw Selection properties passed on to the tool (`forwards`), and the
    Tools panel's rows for it (default: one row titled `label`)."""

    key: str
    label: str
    order: int
    forwards: tuple[str, ...] = ()
    rows: tuple[SelectionRow, ...] = ()

    @property
    def panel_rows(self) -> tuple[SelectionRow, ...]:
        return self.rows or (SelectionRow(self.label),)


@dataclass(frozen=True)
class ListedTool:
    idname: str  # the operator's bl_idname, e.g. imageforge.remove_background
    listing: Listing
    operator: type


@dataclass(frozen=True)
class SelectionTool:
    idname: str
    action: SelectionAction


_classes: list[type] = []


def collect(classes: Iterable[type]) -> None:
    """Remember the operator classes whose listings the surfaces read (called once, by operators/__init__.py)."""
    _classes[:] = list(classes)
    keys = [tool.action.key for tool in selection_actions()]
    if len(keys) != len(set(keys)):
        raise TypeError(f"two tools declare the same selection action: {sorted(keys)}")


def listed(surface: Surface) -> list[ListedTool]:
    """The tools listed on `surface`, in their order."""
    found = [
        ListedTool(getattr(cls, "bl_idname"), listing, cls)  # noqa: B009  # an operator class (bpy is untyped)
        for cls in _classes
        for listing in getattr(cls, "listings", ())
        if listing.surface is surface
    ]
    return sorted(found, key=lambda tool: tool.listing.order)


def selection_actions() -> list[SelectionTool]:
    """The tools that run on a drawn selection, in their order (the first is Draw Selection's default)."""
    found = [
        SelectionTool(getattr(cls, "bl_idname"), action)  # noqa: B009  # an operator class (bpy is untyped)
        for cls in _classes
        if (action := getattr(cls, "selection_action", None)) is not None
    ]
    return sorted(found, key=lambda tool: tool.action.order)


def selection_action(key: str) -> SelectionTool:
    for tool in selection_actions():
        if tool.action.key == key:
            return tool
    raise KeyError(f"no tool runs the selection action {key!r}")
