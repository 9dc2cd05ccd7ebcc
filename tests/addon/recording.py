"""A stand-in for bpy.types.UILayout that records what a panel draws (a real one exists only in a UI redraw)."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any


@dataclass
class Item:
    kind: str  # operator, label, prop, progress, menu, separator
    node: RecordingLayout
    text: str = ""
    idname: str = ""
    icon: str = "NONE"
    properties: SimpleNamespace = field(default_factory=SimpleNamespace)
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def enabled(self) -> bool:
        return self.node.effective_enabled()

    @property
    def alert(self) -> bool:
        return self.node.effective("alert")


class RecordingLayout:
    def __init__(self, items: list[Item] | None = None, parent: RecordingLayout | None = None) -> None:
        self.items = items if items is not None else []
        self.parent = parent
        self.enabled = True
        self.active = True
        self.alert = False
        self.operator_context = "INVOKE_DEFAULT"

    def effective_enabled(self) -> bool:
        node = self
        while node is not None:
            if not node.enabled:
                return False
            node = node.parent
        return True

    def effective(self, name: str) -> bool:
        node = self
        while node is not None:
            if getattr(node, name):
                return True
            node = node.parent
        return False

    def _child(self, *_args: Any, **_options: Any) -> RecordingLayout:
        return RecordingLayout(self.items, self)

    row = column = box = split = grid_flow = _child

    def operator(self, idname: str, text: str | None = None, icon: str = "NONE", **options: Any) -> SimpleNamespace:
        item = Item("operator", self, text=text if text is not None else "", idname=idname, icon=icon, options=options)
        self.items.append(item)
        return item.properties

    def label(self, text: str = "", icon: str = "NONE", **options: Any) -> None:
        self.items.append(Item("label", self, text=text, icon=icon, options=options))

    def prop(self, data: Any, name: str, text: str | None = None, **options: Any) -> None:
        self.items.append(Item("prop", self, text=text or "", idname=name, options={"data": data, **options}))

    def progress(self, factor: float = 0.0, type: str = "BAR", text: str = "") -> None:
        self.items.append(Item("progress", self, text=text, options={"factor": factor, "type": type}))

    def menu(self, idname: str, text: str = "", icon: str = "NONE") -> None:
        self.items.append(Item("menu", self, text=text, idname=idname, icon=icon))

    def separator(self, **_options: Any) -> None:
        self.items.append(Item("separator", self))

    # -- queries for assertions -------------------------------------------------------------------------------

    def operators(self) -> list[Item]:
        return [item for item in self.items if item.kind == "operator"]

    def operator_ids(self) -> list[str]:
        return [item.idname for item in self.operators()]

    def texts(self, kind: str = "label") -> list[str]:
        return [item.text for item in self.items if item.kind == kind]

    def find(self, idname: str, **properties: Any) -> Item:
        for item in self.operators():
            if item.idname == idname and all(getattr(item.properties, k, None) == v for k, v in properties.items()):
                return item
        raise AssertionError(f"{idname} {properties} not drawn; drawn: {self.operator_ids()}")


def draw(panel_mixin: type, context: Any) -> RecordingLayout:
    """Run a panel's draw() (defined on its mixin) against a recording layout."""
    panel = type("RecordedPanel", (panel_mixin,), {})()
    panel.layout = RecordingLayout()
    panel.draw(context)
    return panel.layout
