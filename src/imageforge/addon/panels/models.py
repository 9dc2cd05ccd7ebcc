"""The Models panel: every catalog model with size, licence, ready state and a Download button, and under the
multi-view models the button that makes the Depth Anything 3 camera model on this machine (convert-model)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import bpy

from ...contract.catalog import Family
from ..preferences import model_catalog, storage_root
from .model_rows import ModelRow, model_rows
from .sidebar import in_both_sidebars


class ModelsPanel:
    if TYPE_CHECKING:  # what bpy.types.Panel gives the panel class this mixin becomes
        layout: Any

    bl_label = "Models"
    bl_order = 2
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, _context: bpy.types.Context) -> None:
        source = model_catalog()
        if source is None:
            self.layout.label(text="The model catalog cannot be read", icon="ERROR")
            return
        boxes: dict[Family, bpy.types.UILayout] = {}
        for row in model_rows(source, storage_root()):
            if row.family not in boxes:
                boxes[row.family] = self.layout.box()
                boxes[row.family].label(text=row.family.title())
            self.draw_model(boxes[row.family], row)
        cameras = boxes.get(Family("multiview")) or self.layout.box()
        cameras.operator("imageforge.prepare_camera_model", text="Prepare DA3 camera model…", icon="CAMERA_DATA")
        segment = boxes.get(Family("segment")) or self.layout.box()
        segment.operator(
            "imageforge.prepare_click_select_model", text="Prepare Click Select model…", icon="RESTRICT_SELECT_OFF"
        )

    @staticmethod
    def draw_model(layout: bpy.types.UILayout, row: ModelRow) -> None:
        line = layout.row(align=True)
        title = f"{row.label} (default)" if row.default else row.label
        line.label(text=title, icon="CHECKMARK" if row.ready else "DOT")
        if row.ready:
            line.label(text="Ready")
        else:
            line.operator("imageforge.download_model", text="Download", icon="IMPORT").model = row.key
        layout.label(text=f"{row.size} · {row.license}")


CLASSES = in_both_sidebars(ModelsPanel, "models")
