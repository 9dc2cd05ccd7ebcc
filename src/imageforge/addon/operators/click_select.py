"""Click Select: click the object, Shift+click (or right click) what is not the object, see the mask at once.

A modal operator in the Image Editor and on image planes and empties in the 3D Viewport (the same picking as Draw
Selection). Left click adds a positive point, Shift+click or right click a negative one, a left drag draws a box
prompt, Ctrl+Z takes the last prompt back, Enter accepts, Esc cancels; the status bar lists the keys and says what
the server is doing. The mask is computed by SAM 2.1 on the server (addon/click_session.py, on its own thread:
Blender never waits) and drawn over the image as it comes. Accepting stores the mask on the image as its
selection (`imageforge_selection`, the contract's mask selection) and runs the chosen tool with it, as Draw
Selection does with a box or lasso.

Called with EXEC_DEFAULT (a script, the tests) it takes `points` and `box` in image pixels instead of clicks and
accepts the first mask.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import bpy
import gpu
import numpy as np
from gpu_extras.batch import batch_for_shader
from mathutils import Vector

from ...contract import InputError
from ...contract.catalog import Family
from ...contract.segment_prompts import Clicks, PromptBox
from ...contract.selection_geometry import MaskRuns
from .. import preferences
from ..click_session import ClickPrompts, ClickSession, RuntimeTransport, SessionState
from ..scene.active_image import find_active_image, image_problem, job_input_path
from ..scene.selection import Point, box_selection
from .availability import poll_with_reason, tool_reason
from .draw_selection import draw_outline, image_editor_picker, viewport_picker
from .listing import selection_action, selection_actions

SEGMENT = Family("segment")  # SAM 2.1's family (server/models/sam2.py)
STORED_SELECTION = "imageforge_selection"  # the image's ID property: the accepted selection, as JSON
DRAG_PIXELS = 5  # a press that moves further is a box, not a click
MASK_COLOUR = (0.1, 0.55, 1.0, 0.45)  # the mask drawn over the image: Blender's selection blue, see-through
POSITIVE_COLOUR, NEGATIVE_COLOUR = (0.2, 0.9, 0.3, 1.0), (1.0, 0.25, 0.2, 1.0)
POINT_SIZE = 8.0
OVERLAY_SIDE = 1024  # the mask texture's longest side: enough for the screen, cheap to upload
KEYS = "LMB: object · Shift+LMB / RMB: not the object · Drag: box · Ctrl+Z: undo · Enter: accept · Esc: cancel"


def mask_overlay_pixels(mask: MaskRuns, *, longest: int = OVERLAY_SIDE) -> np.ndarray:
    """(rows, columns, 4) float32 RGBA, bottom row first (GPU textures are): the mask tinted MASK_COLOUR, reduced
    by an integer stride to at most `longest` pixels on its longer side."""
    inside = np.frombuffer(mask.to_bytes(), np.uint8).reshape(mask.height, mask.width)
    stride = max(1, math.ceil(max(mask.width, mask.height) / longest))
    reduced = inside[::stride, ::stride][::-1]
    pixels = np.zeros((*reduced.shape, 4), np.float32)
    pixels[reduced > 0] = MASK_COLOUR
    return pixels


def mask_texture(pixels: np.ndarray) -> gpu.types.GPUTexture:
    rows, columns = pixels.shape[:2]
    buffer = gpu.types.Buffer("FLOAT", rows * columns * 4, np.ascontiguousarray(pixels).ravel())
    return gpu.types.GPUTexture((columns, rows), format="RGBA16F", data=buffer)


def draw_mask(texture: gpu.types.GPUTexture, corners: Sequence[tuple[float, ...]]) -> None:
    """Draw `texture` on the quad `corners` (bottom-left, bottom-right, top-right, top-left of the image), in
    the current space (region pixels in the Image Editor, world space on an image empty)."""
    shader = gpu.shader.from_builtin("IMAGE")
    batch = batch_for_shader(
        shader,
        "TRIS",  # TRI_FAN is deprecated in 5.x: the quad as two triangles
        {"pos": corners, "texCoord": ((0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0))},
        indices=((0, 1, 2), (0, 2, 3)),
    )
    gpu.state.blend_set("ALPHA")
    shader.bind()
    shader.uniform_sampler("image", texture)
    batch.draw(shader)
    gpu.state.blend_set("NONE")


def draw_points(points: list[tuple[float, float, bool]]) -> None:
    """The clicks in region pixels: green on the object, red not on it."""
    shader = gpu.shader.from_builtin("POINT_UNIFORM_COLOR")
    gpu.state.point_size_set(POINT_SIZE)
    gpu.state.blend_set("ALPHA")
    for positive in (True, False):
        chosen = [(x, y) for x, y, kind in points if kind is positive]
        if chosen:
            batch = batch_for_shader(shader, "POINTS", {"pos": chosen})
            shader.uniform_float("color", POSITIVE_COLOUR if positive else NEGATIVE_COLOUR)
            batch.draw(shader)
    gpu.state.blend_set("NONE")
    gpu.state.point_size_set(1.0)


def empty_corners(obj: bpy.types.Object, size: tuple[int, int]) -> list[tuple[float, float, float]]:
    """World-space corners of an image empty's picture (bottom-left first, counter-clockwise)."""
    width, height = size
    scale_x = obj.empty_display_size if width >= height else obj.empty_display_size * width / height
    scale_y = obj.empty_display_size if height >= width else obj.empty_display_size * height / width
    ox, oy = obj.empty_image_offset
    corners = []
    for u, v in ((0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)):
        local = ((u + ox) * scale_x, (v + oy) * scale_y, 0.0)
        corners.append(tuple(obj.matrix_world @ Vector(local)))
    return corners


class IMAGEFORGE_OT_click_select(bpy.types.Operator):
    """Click the object to select it (Shift+click or right click: not the object), then Enter: cut it out, make a
    Parallax Shot of it, or refine it"""

    bl_idname = "imageforge.click_select"
    bl_label = "Click Select"
    bl_options = {"REGISTER"}

    # action: the tools that declare a selection_action, as Draw Selection's (declare_actions below)
    displace: bpy.props.BoolProperty(name="Displace by Depth", description="For Cutout: shape it by depth")
    image_name: bpy.props.StringProperty(name="Image", options={"HIDDEN", "SKIP_SAVE"})
    points: bpy.props.StringProperty(
        name="Points",
        description="Without clicks: [[x, y, label], ...] in image pixels",
        options={"HIDDEN", "SKIP_SAVE"},
    )
    box: bpy.props.StringProperty(
        name="Box", description="Without clicks: [x0, y0, x1, y1] in image pixels", options={"HIDDEN", "SKIP_SAVE"}
    )

    running: Any = None  # the operator in progress (one Click Select at a time; tests drive it through this)

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        area = getattr(context, "area", None)
        if area is not None and area.type not in {"IMAGE_EDITOR", "VIEW_3D"}:
            return poll_with_reason(cls, "Click in the Image Editor or in the 3D Viewport")
        return poll_with_reason(cls, tool_reason(context) or None)

    # -- starting --------------------------------------------------------------------------------------------
    def invoke(self, context: bpy.types.Context, event: Any) -> set[str]:
        found = find_active_image(context)
        image = found.image if found else None
        pick = None
        if image is not None and context.area.type == "IMAGE_EDITOR":
            pick = image_editor_picker(context.region, image)
        elif image is not None and context.active_object is not None:
            pick = viewport_picker(context, context.active_object, image)
        if pick is None or image is None:
            self.report({"WARNING"}, "Select an image plane (an image empty or a mesh with the image and UVs)")
            return {"CANCELLED"}
        return self.start(context, image, pick, interactive=True)

    def execute(self, context: bpy.types.Context) -> set[str]:
        image = bpy.data.images.get(self.image_name) if self.image_name else None
        if image is None:
            found = find_active_image(context)
            image = found.image if found else None
        if image is None:
            self.report({"WARNING"}, "Select an image first (Image Editor, image empty or textured object)")
            return {"CANCELLED"}
        return self.start(context, image, None, interactive=False)

    def start(self, context: bpy.types.Context, image: bpy.types.Image, pick: Any, *, interactive: bool) -> set[str]:
        problem = image_problem(image)
        runtime = _runtime()
        if problem or runtime is None:
            self.report({"WARNING"}, f"{problem or 'Set up the server first (sidebar, ImageForge, Server)'}.")
            return {"CANCELLED"}
        self._image_name, self._size = image.name, (int(image.size[0]), int(image.size[1]))
        self._pick, self._interactive = pick, interactive
        self._folder = Path(tempfile.mkdtemp(prefix="imageforge-click-"))
        try:
            prompts = ClickPrompts() if interactive else self.given_prompts()
            path = job_input_path(image, self._folder)
        except InputError as error:
            shutil.rmtree(self._folder, ignore_errors=True)
            self.report({"WARNING"}, str(error))
            return {"CANCELLED"}
        prefs = preferences.get_preferences()
        model = preferences.job_model(prefs, SEGMENT)
        options = {"model": model, "device": preferences.job_device(prefs).value}
        self._session = ClickSession(RuntimeTransport(runtime), path, self._size, options)
        self._prompts = prompts
        self._screen: list[tuple[float, float, bool]] = []  # each click on screen, positive or not, for the overlay
        self._press: tuple[float, float] | None = None
        self._drag: tuple[float, float] | None = None
        self._shown: SessionState | None = None
        self._texture: Any = None
        self._handlers: list[tuple[Any, Any]] = []
        area = getattr(context, "area", None)
        if area is not None and context.space_data is not None:
            space = type(context.space_data)
            self._handlers.append((space, space.draw_handler_add(self.draw_overlay, (), "WINDOW", "POST_PIXEL")))
            if area.type == "VIEW_3D":
                self._handlers.append((space, space.draw_handler_add(self.draw_in_view, (), "WINDOW", "POST_VIEW")))
        self._timer = context.window_manager.event_timer_add(0.05, window=context.window)
        context.window_manager.modal_handler_add(self)
        type(self).running = self
        self.say(context, "Click on the object")
        if not interactive:
            self._session.ask(prompts)
        return {"RUNNING_MODAL"}

    def given_prompts(self) -> ClickPrompts:
        try:
            points = Clicks.parse("points", json.loads(self.points or "[]"))
            box = PromptBox.parse("box", json.loads(self.box)) if self.box else None
        except ValueError as error:
            raise InputError("Click Select's points and box must be JSON in image pixels.") from error
        prompts = ClickPrompts(points.points)
        prompts = prompts.with_box(box) if box is not None else prompts
        problem = prompts.problem(*self._size) or (None if prompts.steps else "Give points or a box to select")
        if problem:
            raise InputError(problem)
        return prompts

    # -- events ------------------------------------------------------------------------------------------------
    def modal(self, context: bpy.types.Context, event: Any) -> set[str]:
        kind, value = event.type, getattr(event, "value", "NOTHING")
        if kind == "TIMER":
            return self.tick(context)
        if kind == "ESC" and value == "PRESS":
            return self.finish(context, accepted=False)
        if kind in {"RET", "NUMPAD_ENTER"} and value == "PRESS":
            return self.finish(context, accepted=True)
        if kind == "Z" and value == "PRESS" and getattr(event, "ctrl", False):
            self.change(self._prompts.undone(), self._screen[:-1])
        elif kind == "LEFTMOUSE" and value == "PRESS":
            self._press, self._drag = (event.mouse_region_x, event.mouse_region_y), None
        elif kind == "MOUSEMOVE" and self._press is not None:
            if math.dist(self._press, (event.mouse_region_x, event.mouse_region_y)) > DRAG_PIXELS:
                self._drag = (event.mouse_region_x, event.mouse_region_y)
        elif kind == "LEFTMOUSE" and value == "RELEASE" and self._press is not None:
            self.release(event)
        elif kind == "RIGHTMOUSE" and value == "PRESS":
            self.click(event.mouse_region_x, event.mouse_region_y, positive=False)
        else:
            return {"PASS_THROUGH"}  # navigation (wheel, middle mouse) works while selecting
        self.redraw(context)
        return {"RUNNING_MODAL"}

    def release(self, event: Any) -> None:
        start, end = self._press, self._drag
        self._press = self._drag = None
        assert start is not None
        if end is None:
            self.click(*start, positive=not getattr(event, "shift", False))
            return
        corners = [self._pick(*start), self._pick(*end)] if self._pick else [None, None]
        if corners[0] is None or corners[1] is None:
            return
        box = box_selection(corners[0], corners[1], *self._size)
        if box is not None:
            self.change(self._prompts.with_box(PromptBox(*box["box"])), self._screen)

    def click(self, x: float, y: float, *, positive: bool) -> None:
        pixel: Point | None = self._pick(x, y) if self._pick else None
        if pixel is None:
            return  # off the image: nothing to add
        self.change(self._prompts.with_point(*pixel, positive=positive), [*self._screen, (x, y, positive)])

    def change(self, prompts: ClickPrompts, screen: list[tuple[float, float, bool]]) -> None:
        self._prompts, self._screen = prompts, screen
        self._session.ask(prompts)

    def tick(self, context: bpy.types.Context) -> set[str]:
        state = self._session.state()
        if state is not self._shown:
            self._shown = state
            self._texture = None  # rebuilt on the next draw
            self.say(context, state.message)
            self.redraw(context)
        if not self._interactive and not state.waiting and (state.mask is not None or state.error):
            return self.finish(context, accepted=True)
        return {"RUNNING_MODAL"}

    # -- ending --------------------------------------------------------------------------------------------------
    def finish(self, context: bpy.types.Context, *, accepted: bool) -> set[str]:
        state = self._session.state()
        self._session.close()
        for space, handle in self._handlers:
            space.draw_handler_remove(handle, "WINDOW")
        context.window_manager.event_timer_remove(self._timer)
        self.say(context, None)
        self.redraw(context)
        type(self).running = None
        shutil.rmtree(self._folder, ignore_errors=True)
        if not accepted:
            return {"CANCELLED"}
        image = bpy.data.images.get(self._image_name)
        if state.error and state.mask is None:
            self.report({"WARNING"}, state.error)
            return {"CANCELLED"}
        if state.mask is None or image is None:
            self.report({"WARNING"}, "Nothing is selected yet; click on the object, then press Enter")
            return {"CANCELLED"}
        selection = {"mask": {"width": state.mask.width, "height": state.mask.height, "runs": list(state.mask.runs)}}
        text = json.dumps(selection)
        image[STORED_SELECTION] = text  # a later tool run finds it (stored_selection)
        tool = selection_action(self.action)
        arguments = {"image_name": image.name, "selection": text}
        arguments.update({name: getattr(self, name) for name in tool.action.forwards if hasattr(self, name)})
        category, name = tool.idname.split(".")
        getattr(getattr(bpy.ops, category), name)("EXEC_DEFAULT", **arguments)
        return {"FINISHED"}

    def say(self, context: bpy.types.Context, message: str | None) -> None:
        workspace = getattr(context, "workspace", None)
        if workspace is not None:
            workspace.status_text_set(None if message is None else f"{message}    {KEYS}")
        area = getattr(context, "area", None)
        if area is not None:
            area.header_text_set(None if message is None else f"Click Select: {message}")

    @staticmethod
    def redraw(context: bpy.types.Context) -> None:
        area = getattr(context, "area", None)
        if area is not None:
            area.tag_redraw()

    # -- drawing -------------------------------------------------------------------------------------------------
    def current_texture(self) -> Any:
        state = self._shown
        if state is None or state.mask is None:
            return None
        if self._texture is None:
            self._texture = mask_texture(mask_overlay_pixels(state.mask))
        return self._texture

    def draw_overlay(self) -> None:
        context = bpy.context
        texture = self.current_texture()
        if texture is not None and context.area is not None and context.area.type == "IMAGE_EDITOR":
            view = context.region.view2d
            corners = [view.view_to_region(u, v, clip=False) for u, v in ((0, 0), (1, 0), (1, 1), (0, 1))]
            draw_mask(texture, [(float(x), float(y)) for x, y in corners])
        if self._press is not None and self._drag is not None:
            (x0, y0), (x1, y1) = self._press, self._drag
            draw_outline([(x0, y0), (x1, y0), (x1, y1), (x0, y1), (x0, y0)])
        if self._screen:
            draw_points(self._screen)

    def draw_in_view(self) -> None:
        obj = bpy.context.active_object
        texture = self.current_texture()
        if texture is not None and obj is not None and obj.type == "EMPTY":
            draw_mask(texture, empty_corners(obj, self._size))


def declare_actions() -> None:
    """Click Select's `action` enum: the tools with a selection_action, as Draw Selection's (operators/__init__.py
    calls it once every operator module is imported)."""
    tools = selection_actions()
    IMAGEFORGE_OT_click_select.__annotations__["action"] = bpy.props.EnumProperty(
        name="Action",
        items=tuple((tool.action.key, tool.action.label, "") for tool in tools),
        default=tools[0].action.key,
    )


def stored_selection(image: bpy.types.Image) -> str:
    """The selection Click Select stored with `image` (JSON), or ""."""
    value = image.get(STORED_SELECTION)
    return value if isinstance(value, str) else ""


def _runtime() -> Any:
    from .. import blender_runtime

    return blender_runtime.get_runtime()


CLASSES = (IMAGEFORGE_OT_click_select,)
__all__ = ["CLASSES", "IMAGEFORGE_OT_click_select", "declare_actions", "stored_selection"]
