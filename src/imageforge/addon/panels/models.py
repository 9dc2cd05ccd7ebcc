"""The Models panel: every catalog model with size, licence, ready state and a Download button."""

from __future__ import annotations

import bpy

from ..choices import catalog
from ..preferences import storage_root
from .model_rows import ModelRow, model_rows
from .sidebar import in_both_sidebars


class ModelsPanel:
    bl_label = "Models"
    bl_order = 2
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, _context: bpy.types.Context) -> None:
        source = catalog()
        if source is None:
            self.layout.label(text="The model catalog cannot be read", icon="ERROR")
            return
        family = None
        box = self.layout
        for row in model_rows(source, storage_root()):
            if row.family != family:
                family = row.family
                box = self.layout.box()
                box.label(text=family.value.title())
            self.draw_model(box, row)

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
