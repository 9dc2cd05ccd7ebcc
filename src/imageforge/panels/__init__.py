"""The sidebar panels (View3D and Image Editor, tab "ImageForge"): Server, Tools, Models.

State logic lives in plain modules (server_view, model_rows, operators.availability) so tests can check every
state without a UI; the panel classes only draw what those return.
"""

from __future__ import annotations

from . import models, server, tools

CLASSES: tuple[type, ...] = (*server.CLASSES, *tools.CLASSES, *models.CLASSES)
