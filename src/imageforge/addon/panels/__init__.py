"""The sidebar panels (View3D and Image Editor, tab "ImageForge"): Server, Tools, Models; Scene (View3D, while a
reconstruction is active);
Frames in the Video Sequencer, Clip Editor and (for movies and sequences) Image Editor.

State logic lives in plain modules (server_view, model_rows, operators.availability) so tests can check every
state without a UI; the panel classes only draw what those return.
"""

from __future__ import annotations

from . import frames, models, scene, server, tools

CLASSES: tuple[type, ...] = (
    *server.CLASSES,
    *tools.CLASSES,
    *scene.CLASSES,
    *frames.CLASSES,
    *models.CLASSES,
)
