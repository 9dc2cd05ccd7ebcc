"""ImageForge's operators: BlendJob job operators for each tool, the selection drawer, model management, job files.

Every module of this package that defines `CLASSES` contributes its operators, so a new tool is a new module:
no list to extend here. The classes' `listings` and `selection_action` (listing.py) say where each appears;
the menus, the Tools panel and Draw Selection's actions are derived from them.
"""

from __future__ import annotations

import importlib
import pkgutil

from . import click_select, draw_selection, listing

CLASSES: tuple[type, ...] = tuple(
    cls
    for module in pkgutil.iter_modules(__path__)
    for cls in getattr(importlib.import_module(f"{__name__}.{module.name}"), "CLASSES", ())
)
listing.collect(CLASSES)
draw_selection.declare_actions()
click_select.declare_actions()
