"""Menus, the Tools panel and Draw Selection's actions are derived from what each operator declares
(operators/listing.py): the same entries, in the same order, as before they were derived, and a new tool appears
everywhere it declares without any of them being edited."""

from __future__ import annotations

from types import SimpleNamespace

import bpy
import pytest
from recording import RecordingLayout, draw
from scenes import image_object

TOOLS_MENU = [
    ("imageforge.remove_background", "IMAGE_RGB_ALPHA"),
    ("imageforge.upscale_image", "FULLSCREEN_ENTER"),
    ("imageforge.refine_selection", "SELECT_SET"),
    ("imageforge.cutout", "MOD_MASK"),
    ("imageforge.depth_plane", "MOD_DISPLACE"),
    ("imageforge.parallax_shot", "VIEW_CAMERA"),
    ("imageforge.upscale_textures", "TEXTURE"),
]
STRIP_MENU = [
    ("imageforge.remove_background_frames", "IMAGE_RGB_ALPHA"),
    ("imageforge.upscale_frames", "FULLSCREEN_ENTER"),
    ("imageforge.remove_background_strips", "SEQ_STRIP_DUPLICATE"),
]


def drawn_menu(function) -> list[tuple[str, str]]:
    owner = SimpleNamespace(layout=RecordingLayout())
    function(owner, bpy.context)
    return [(item.idname, item.icon) for item in owner.layout.operators()]


def in_order(today: list, drawn: list) -> bool:
    """Every entry of `today` is drawn, in today's order (new tools may stand between them)."""
    return [entry for entry in drawn if entry in today] == today


def test_the_menus_list_the_tools_as_before(addon):
    from imageforge.addon import menus

    assert in_order(TOOLS_MENU, drawn_menu(menus.IMAGEFORGE_MT_tools.draw))
    assert in_order(STRIP_MENU, drawn_menu(menus.draw_strip_entries))


def test_draw_selection_offers_the_actions_of_the_tools_that_declare_one(addon):
    action = bpy.ops.imageforge.draw_selection.get_rna_type().properties["action"]
    assert [(item.identifier, item.name) for item in action.enum_items] == [
        ("REFINE", "Refine Selection"),
        ("CUTOUT", "Cutout"),
        ("REMOVE", "Remove Background in Selection"),
        ("PARALLAX", "Parallax Shot"),
        ("FILL", "Fill Selection"),
    ]
    assert action.default == "REFINE"


def test_the_tools_panel_draws_the_listed_tools_in_order(server):
    from imageforge.addon.panels.tools import ToolsPanel

    server.server.snapshot = {"state": "READY"}
    image_object(bpy.data.images.new("Listed Photo", 64, 32), "Listed Photo")
    drawn = draw(ToolsPanel, bpy.context)
    rows = (("REFINE", None), ("CUTOUT", False), ("CUTOUT", True), ("REMOVE", None), ("PARALLAX", None), ("FILL", None))
    listed = 3 + 3 * len(rows)
    tools = [(item.idname, vars(item.properties)) for item in drawn.operators()][:listed]
    selection_rows = []
    for action, displace in rows:
        extra = {} if displace is None else {"displace": displace}
        selection_rows += [
            ("imageforge.draw_selection", {"action": action, "shape": shape, **extra}) for shape in ("BOX", "LASSO")
        ]
        selection_rows.append(("imageforge.click_select", {"action": action, **extra}))  # SAM 2.1's button
    assert tools == [
        ("imageforge.remove_background", {}),
        ("imageforge.upscale_image", {"scale": "2"}),
        ("imageforge.upscale_image", {"scale": "4"}),
        *selection_rows,
    ]
    assert [item.kind for item in drawn.items].count("separator") == 1
    assert drawn.operators()[listed].idname == "imageforge.depth_plane"


@pytest.fixture
def listing_with(addon):
    """listing_with(cls): the operators' listing with one more class; restored afterwards."""
    from imageforge.addon import operators
    from imageforge.addon.operators import draw_selection, listing

    def extend(cls: type) -> None:
        listing.collect((*operators.CLASSES, cls))
        draw_selection.declare_actions()

    yield extend
    listing.collect(operators.CLASSES)
    draw_selection.declare_actions()


def test_a_new_tool_appears_where_it_declares(listing_with):
    from imageforge.addon import menus
    from imageforge.addon.operators import draw_selection
    from imageforge.addon.operators.listing import Listing, SelectionAction, Surface, selection_action

    class IMAGEFORGE_OT_throwaway:
        bl_idname = "imageforge.throwaway"
        listings = (Listing(Surface.TOOLS_MENU, 45, "BRUSH_DATA"), Listing(Surface.STRIP_MENU, 5, "BRUSH_DATA"))
        selection_action = SelectionAction("THROWAWAY", "Throwaway", 15)

    listing_with(IMAGEFORGE_OT_throwaway)
    drawn = drawn_menu(menus.IMAGEFORGE_MT_tools.draw)
    assert drawn.index(("imageforge.throwaway", "BRUSH_DATA")) == drawn.index(TOOLS_MENU[3]) + 1  # 45: after Cutout
    assert drawn_menu(menus.draw_strip_entries)[0] == ("imageforge.throwaway", "BRUSH_DATA")
    items = draw_selection.IMAGEFORGE_OT_draw_selection.__annotations__["action"].keywords["items"]
    assert [item[0] for item in items][:2] == ["REFINE", "THROWAWAY"]  # 15: right after Refine
    assert selection_action("THROWAWAY").idname == "imageforge.throwaway"


def test_two_tools_with_one_selection_action_are_refused(listing_with):
    from imageforge.addon.operators.listing import SelectionAction

    class IMAGEFORGE_OT_again:
        bl_idname = "imageforge.again"
        selection_action = SelectionAction("CUTOUT", "Cutout again", 50)

    with pytest.raises(TypeError, match="same selection action"):
        listing_with(IMAGEFORGE_OT_again)
