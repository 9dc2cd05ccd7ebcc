"""What the depth-mesh tools (Convert to Depth Plane, Cutout, Parallax Shot) share: their tearing, subdivision and
refine properties, the detail and models they send, and the displaced cutout's mesh and placement."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import bpy
import numpy as np
from mathutils import Matrix, Vector

from ..scene.depth_grid import (
    SUBDIVISION_MAX,
    SUBDIVISION_MIN,
    TEAR_RATIO_DEFAULT,
    TEAR_RATIO_MIN,
    GridMesh,
    centred,
    depth_grid,
    resample_nearest,
)


def subdivision_property(default: int) -> Any:
    return bpy.props.IntProperty(
        name="Subdivisions",
        description="Mesh detail: 2^n faces along the image's longer side",
        default=default,
        min=SUBDIVISION_MIN,
        max=SUBDIVISION_MAX,
    )


def refine_property() -> Any:
    return bpy.props.BoolProperty(
        name="Refine Edges", description="Refine the selection's edges with the background model", default=True
    )


class DepthTearing:
    """Removing the faces that would stretch across depth jumps (scene/depth_grid.py).

    The properties are given as objects, not annotation strings: Blender evaluates a mixin's string annotations
    in the module of each operator that uses it, where these constants are not imported.
    """

    if TYPE_CHECKING:  # the properties below, as Blender gives them to the operator
        tear: bool
        tear_ratio: float

    __annotations__ = {
        "tear": bpy.props.BoolProperty(
            name="Tear at Depth Jumps",
            description="Remove faces across depth discontinuities so foreground and background separate "
            "instead of being joined by stretched faces",
            default=True,
        ),
        "tear_ratio": bpy.props.FloatProperty(
            name="Tear Ratio",
            description="A face is removed when the depths at the ends of one of its edges differ by more than "
            "this ratio (1.2: the far end 20% farther than the near end)",
            default=TEAR_RATIO_DEFAULT,
            min=TEAR_RATIO_MIN,
            soft_max=3.0,
            max=100.0,
        ),
    }

    def depth_mesh(self, points: np.ndarray, weight: np.ndarray, subdivisions: int) -> GridMesh:
        return depth_grid(points, weight, subdivisions, tear_ratio=self.tear_ratio if self.tear else None)


def torn_note(grid: GridMesh) -> str:
    return f", {grid.torn} faces torn at depth jumps" if grid.torn else ""


def displaced_cutout(
    tearing: DepthTearing, points: np.ndarray, weight: np.ndarray, alpha: np.ndarray, subdivisions: int, matrix: Matrix
) -> tuple[GridMesh, Matrix]:
    """A cutout's depth-shaped mesh centred on its own origin, and the world matrix that keeps it where the camera
    at `matrix` sees it (in front of a depth plane placed with the same matrix)."""
    grid, centre = centred(tearing.depth_mesh(points, weight * resample_nearest(alpha, weight.shape), subdivisions))
    return grid, matrix @ Matrix.Translation(Vector(centre.tolist()))
