"""The image a tool works on and the box or lasso drawn on it: what every tool on an image shares.

`ImageTool` finds the image in execute() (by name, or the active image) and finds it again by name when the
result lands; `selection_property`, `parse_selection` and `start_drawing` carry a drawn selection to a tool
(operators/draw_selection.py draws it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import bpy

from ...contract import InputError
from ...contract.parameters import Selection
from ..scene.active_image import find_active_image, image_problem, job_input_path
from .availability import NO_IMAGE, tool_reason


class ImageTool:
    """Finds the image a tool works on in execute(), and finds it again by name when the result lands."""

    if TYPE_CHECKING:  # what the job operator this mixin joins provides (operators/base.py)

        def temporary_directory(self) -> Path: ...

    image_name: bpy.props.StringProperty(
        name="Image", description="Image to process (default: the active image)", options={"HIDDEN", "SKIP_SAVE"}
    )

    @classmethod
    def unavailable_reason(cls, context: bpy.types.Context) -> str | None:
        return tool_reason(context)

    def target_image(self, context: bpy.types.Context) -> bpy.types.Image:
        if self.image_name:
            image = bpy.data.images.get(self.image_name)
            if image is None:
                raise InputError(f"There is no image named '{self.image_name}'.")
        else:
            found = find_active_image(context)
            if found is None:
                raise InputError(f"{NO_IMAGE}.")
            image = found.image
        problem = image_problem(image)
        if problem:
            raise InputError(f"{problem}.")
        self._image_name = image.name
        return image

    def input_path(self, image: bpy.types.Image) -> str:
        """A file the server reads `image` from: its own file, or its pixels written to this run's folder."""
        return str(job_input_path(image, self.temporary_directory()))

    def landed_image(self) -> bpy.types.Image:
        image = bpy.data.images.get(self._image_name)
        if image is None:
            raise InputError(f"The image '{self._image_name}' was removed while the job ran; nothing was changed.")
        return image


def start_drawing(operator: bpy.types.Operator, action: str, **options: Any) -> set[str]:
    """Hand over to the selection drawer, which runs `operator` again with the drawn selection."""
    if not bpy.ops.imageforge.draw_selection.poll():
        operator.report({"WARNING"}, "Draw the selection in the Image Editor or the 3D Viewport (sidebar, Tools)")
        return {"CANCELLED"}
    bpy.ops.imageforge.draw_selection("INVOKE_DEFAULT", action=action, **options)
    return {"FINISHED"}


def selection_property() -> Any:
    return bpy.props.StringProperty(
        name="Selection",
        description='Region in image pixels as JSON: {"box": [x0, y0, x1, y1]}, {"lasso": [[x, y], ...]} or '
        '{"mask": {"width": W, "height": H, "runs": [...]}} (Click Select)',
        options={"HIDDEN", "SKIP_SAVE"},
    )


def parse_selection(raw: str, image: bpy.types.Image) -> Selection:
    """The drawn selection (JSON from Draw Selection), checked to overlap the image."""
    try:
        selection = Selection.parse("selection", json.loads(raw))
    except ValueError as error:
        raise InputError("The selection is not valid JSON; draw it again.") from error
    width, height = image.size
    if selection.mask_file is not None:
        raise InputError("Blender sends a mask selection as run-length data; make it with Click Select.")
    mismatch = selection.size_mismatch(width, height)
    if mismatch is not None:
        raise InputError(mismatch)
    x0, y0, x1, y1 = selection.bounds
    if x1 <= 0 or y1 <= 0 or x0 >= width or y0 >= height:
        raise InputError("The selection lies outside the image; draw it on the image.")
    return selection
