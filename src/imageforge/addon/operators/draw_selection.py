"""Draw a box or lasso on an image, in the Image Editor or on an image plane in the 3D Viewport.

A modal operator: left-drag draws, release finishes, right-click or Esc cancels. Each mouse position is turned
into image pixels at once (ImagePicker), so the result is independent of later view changes; the pixel
geometry itself is in scene/selection.py. On release it runs the tool its `action` names with the selection:
each tool that runs on a selection declares its action (operators/listing.py SelectionAction).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import bpy
import gpu
from bpy_extras import view3d_utils
from gpu_extras.batch import batch_for_shader
from mathutils import Vector

from ..scene.active_image import find_active_image
from ..scene.selection import (
    Point,
    barycentric_uv,
    barycentric_weights,
    box_selection,
    empty_uv,
    lasso_selection,
    view_to_pixel,
)
from .availability import poll_with_reason, tool_reason
from .listing import Listing, Surface, selection_action, selection_actions

Picker = Callable[[float, float], Point | None]  # region pixel → image pixel, None when off the image
OUTLINE_COLOUR = (1.0, 0.55, 0.1, 1.0)  # the selection being drawn: orange, as Blender's own active outlines
OUTLINE_WIDTH = 2.0  # px


def image_editor_picker(region: bpy.types.Region, image: bpy.types.Image) -> Picker:
    width, height = image.size

    def pick(x: float, y: float) -> Point:
        u, v = region.view2d.region_to_view(x, y)
        return view_to_pixel(u, v, width, height)

    return pick


def pixel_on_empty(obj: bpy.types.Object, origin: Vector, direction: Vector, size: tuple[int, int]) -> Point | None:
    """Where a world-space ray meets an image empty's picture, in image pixels."""
    inverse = obj.matrix_world.inverted()
    origin, direction = inverse @ origin, inverse.to_3x3() @ direction
    if abs(direction.z) < 1e-9:
        return None
    hit = origin + direction * (-origin.z / direction.z)
    uv = empty_uv((hit.x, hit.y), obj.empty_display_size, obj.empty_image_offset, *size)
    return view_to_pixel(*uv, *size) if uv else None


def pixel_on_mesh(
    obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, origin: Vector, direction: Vector, size: tuple[int, int]
) -> Point | None:
    """Where a world-space ray meets a mesh (with modifiers), in pixels of the image mapped by its active UVs."""
    mesh = obj.evaluated_get(depsgraph).data
    uv_layer = mesh.uv_layers.active
    if uv_layer is None:
        return None
    inverse = obj.matrix_world.inverted()
    hit, location, _normal, index = obj.ray_cast(
        inverse @ origin, (inverse.to_3x3() @ direction).normalized(), depsgraph=depsgraph
    )
    if not hit:
        return None
    mesh.calc_loop_triangles()
    for triangle in mesh.loop_triangles:
        if triangle.polygon_index != index:
            continue
        corners = [mesh.vertices[vertex].co for vertex in triangle.vertices]
        if min(barycentric_weights(corners, location)) < -1e-4:
            continue
        uvs = [uv_layer.data[loop].uv for loop in triangle.loops]
        return view_to_pixel(*barycentric_uv(corners, uvs, location), *size)
    return None


def viewport_picker(context: bpy.types.Context, obj: bpy.types.Object, image: bpy.types.Image) -> Picker | None:
    """Pixels under the mouse on an image empty or on a mesh showing the image."""
    region, view = context.region, context.region_data
    size = tuple(image.size)
    if obj.type not in {"EMPTY", "MESH"}:
        return None
    depsgraph = context.evaluated_depsgraph_get()

    def pick(x: float, y: float) -> Point | None:
        origin = view3d_utils.region_2d_to_origin_3d(region, view, (x, y))
        direction = view3d_utils.region_2d_to_vector_3d(region, view, (x, y))
        if obj.type == "EMPTY":
            return pixel_on_empty(obj, origin, direction, size)
        return pixel_on_mesh(obj, depsgraph, origin, direction, size)

    return pick


class IMAGEFORGE_OT_draw_selection(bpy.types.Operator):
    """Draw a box or lasso on the image, then refine that region, cut it out, or make a Parallax Shot of it"""

    bl_idname = "imageforge.draw_selection"
    bl_label = "Draw Selection"
    bl_options = {"REGISTER"}

    # action: the tools that declare a selection_action (declare_actions, once every operator module is imported)
    listings = (Listing(Surface.TOOLS_PANEL, 30, "SELECT_SET"),)
    shape: bpy.props.EnumProperty(
        name="Shape", items=(("BOX", "Box", "Drag a rectangle"), ("LASSO", "Lasso", "Drag a freehand outline"))
    )
    displace: bpy.props.BoolProperty(name="Displace by Depth", description="For Cutout: shape it by depth")

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        area = getattr(context, "area", None)
        if area is None or area.type not in {"IMAGE_EDITOR", "VIEW_3D"}:
            return poll_with_reason(cls, "Draw in the Image Editor or in the 3D Viewport")
        return poll_with_reason(cls, tool_reason(context) or None)

    def invoke(self, context: bpy.types.Context, event: Any) -> set[str]:
        found = find_active_image(context)
        self._image: Any = found.image if found else None
        self._pick: Picker | None
        if context.area.type == "IMAGE_EDITOR" and self._image is not None:
            self._pick = image_editor_picker(context.region, self._image)
        elif self._image is not None and context.active_object is not None:
            self._pick = viewport_picker(context, context.active_object, self._image)
        else:
            self._pick = None
        if self._pick is None:
            self.report({"WARNING"}, "Select an image plane (an image empty or a mesh with the image and UVs)")
            return {"CANCELLED"}
        self._screen_points: list[tuple[float, float]] = []
        self._pixels: list[Point] = []
        self._drawing = False
        space = type(context.space_data)
        self._handle = space.draw_handler_add(self.draw_overlay, (), "WINDOW", "POST_PIXEL")
        self._space = space
        context.area.header_text_set("Drag to draw the selection · Esc or right-click cancels")
        context.window_manager.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context: bpy.types.Context, event: Any) -> set[str]:
        context.area.tag_redraw()
        if event.type in {"ESC", "RIGHTMOUSE"}:
            return self.finish(context, cancelled=True)
        if event.type == "LEFTMOUSE" and event.value == "PRESS":
            self._drawing = True
            self.add_point(event)
        elif event.type == "MOUSEMOVE" and self._drawing:
            if self.shape == "BOX" and len(self._screen_points) > 1:
                self._screen_points.pop()
                self._pixels.pop()
            self.add_point(event)
        elif event.type == "LEFTMOUSE" and event.value == "RELEASE" and self._drawing:
            return self.finish(context, cancelled=False)
        return {"RUNNING_MODAL"}

    def add_point(self, event: Any) -> None:
        assert self._pick is not None  # invoke() ended the operator without one
        pixel = self._pick(event.mouse_region_x, event.mouse_region_y)
        if pixel is not None:
            self._screen_points.append((event.mouse_region_x, event.mouse_region_y))
            self._pixels.append(pixel)

    def selection(self) -> dict[str, Any] | None:
        width, height = self._image.size
        if self.shape == "BOX":
            if len(self._pixels) < 2:
                return None
            return box_selection(self._pixels[0], self._pixels[-1], width, height)
        return lasso_selection(self._pixels, width, height)

    def finish(self, context: bpy.types.Context, *, cancelled: bool) -> set[str]:
        self._space.draw_handler_remove(self._handle, "WINDOW")
        context.area.header_text_set(None)
        context.area.tag_redraw()
        if cancelled:
            return {"CANCELLED"}
        selection = self.selection()
        if selection is None:
            self.report({"WARNING"}, "The selection is too small; drag a larger region on the image")
            return {"CANCELLED"}
        tool = selection_action(self.action)
        arguments = {"image_name": self._image.name, "selection": json.dumps(selection)}
        arguments.update({name: getattr(self, name) for name in tool.action.forwards})
        category, name = tool.idname.split(".")
        getattr(getattr(bpy.ops, category), name)("EXEC_DEFAULT", **arguments)
        return {"FINISHED"}

    @staticmethod
    def draw_tool(layout: bpy.types.UILayout, _context: bpy.types.Context) -> None:
        """The Tools panel's selection tools: a row per tool (and variant) with a Box, a Lasso and a Click Select
        button (operators/click_select.py)."""
        for tool in selection_actions():
            for row_spec in tool.action.panel_rows:
                row = layout.row(align=True)
                row.label(text=row_spec.title)
                for shape, icon in (("BOX", "SELECT_SET"), ("LASSO", "MOD_CURVE")):
                    operator = row.operator(IMAGEFORGE_OT_draw_selection.bl_idname, text="", icon=icon)
                    operator.action, operator.shape = tool.action.key, shape
                    for option, value in row_spec.options.items():
                        setattr(operator, option, value)
                clicked = row.operator("imageforge.click_select", text="", icon="RESTRICT_SELECT_OFF")  # SAM 2.1
                clicked.action = tool.action.key
                takes = getattr(getattr(bpy.types, "IMAGEFORGE_OT_click_select", None), "__annotations__", {})
                for option, value in row_spec.options.items():
                    if option in takes:
                        setattr(clicked, option, value)

    def draw_overlay(self) -> None:
        outline = outline_points(self._screen_points, self.shape)
        if outline:
            draw_outline(outline)


def outline_points(points: list[tuple[float, float]], shape: str) -> list[tuple[float, float]]:
    """The selection's closed outline in region pixels (first point repeated); empty below two points."""
    if len(points) < 2:
        return []
    if shape == "BOX":
        (x0, y0), (x1, y1) = points[0], points[-1]
        points = [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
    return [*points, points[0]]


def draw_outline(outline: list[tuple[float, float]]) -> None:
    """Draw `outline` in the current region's pixel space, OUTLINE_WIDTH px wide.

    The polyline shader draws wide lines on every backend Blender 4.5-5.3 has (OpenGL, Metal, Vulkan); a
    UNIFORM_COLOR batch with `gpu.state.line_width_set` is 1 px on Metal and Vulkan and deprecated since 5.0.
    """
    shader = gpu.shader.from_builtin("POLYLINE_UNIFORM_COLOR")
    batch = batch_for_shader(shader, "LINE_STRIP", {"pos": outline})
    shader.uniform_float("viewportSize", gpu.state.viewport_get()[2:])
    shader.uniform_float("lineWidth", OUTLINE_WIDTH)
    shader.uniform_float("color", OUTLINE_COLOUR)
    gpu.state.blend_set("ALPHA")  # the polyline shader smooths its edges with alpha
    batch.draw(shader)
    gpu.state.blend_set("NONE")


def declare_actions() -> None:
    """Give Draw Selection its `action` enum: one item per tool with a selection_action, in their order (the
    first is the default). Called by operators/__init__.py once every operator module is imported, before
    registration reads the annotations."""
    tools = selection_actions()
    IMAGEFORGE_OT_draw_selection.__annotations__["action"] = bpy.props.EnumProperty(
        name="Action",
        items=tuple((tool.action.key, tool.action.label, "") for tool in tools),
        default=tools[0].action.key,
    )


CLASSES = (IMAGEFORGE_OT_draw_selection,)
