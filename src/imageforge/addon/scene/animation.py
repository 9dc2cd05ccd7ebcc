"""Keyframe an object along world matrices: one location and rotation key per frame.

Rotations are keyed as XYZ Euler angles, each chosen compatible with the previous key (`to_euler(order,
previous)`), so an angle crossing ±180° continues instead of jumping and Blender's interpolation between
keys does not spin the camera the long way round.
"""

from __future__ import annotations

from collections.abc import Sequence

import bpy
from mathutils import Euler, Matrix

ROTATION_ORDER = "XYZ"


def keyframe_matrices(obj: bpy.types.Object, frames: Sequence[int], matrices: Sequence[Matrix]) -> None:
    """Key `obj` (unparented) at each frame so that its world matrix is the matching one."""
    if len(frames) != len(matrices):
        raise ValueError("One matrix per frame is needed")
    obj.rotation_mode = ROTATION_ORDER
    previous: Euler | None = None
    for frame, matrix in zip(frames, matrices, strict=True):
        location, rotation, _scale = matrix.decompose()
        euler = rotation.to_euler(ROTATION_ORDER, previous) if previous else rotation.to_euler(ROTATION_ORDER)
        obj.location = location
        obj.rotation_euler = euler
        obj.keyframe_insert("location", frame=frame)
        obj.keyframe_insert("rotation_euler", frame=frame)
        previous = euler
