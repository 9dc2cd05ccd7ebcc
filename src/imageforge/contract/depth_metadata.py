"""`depth_metadata` (and the cutout's `background_depth_metadata`): the camera of one depth result.

The server writes it beside each depth EXR (server/jobs/depth_plane.py) with `to_json`; the add-on reads it
with `from_json` to place the plane and fit its camera (addon/scene/intrinsics.py). Layout, version 1:

    {"version": 1, "image_size": [w, h], "analysed_size": [w, h], "fx": …, "fy": …, "cx": …, "cy": …,
     "reference_depth": …}

`image_size` is the size in source pixels of what the depth covers (the whole image, or the cutout's crop);
`analysed_size` the size of the depth EXR (the model's analysis, cropped likewise); `fx`, `fy`, `cx`, `cy`
pinhole intrinsics in source pixels, the principal point relative to the crop's origin; `reference_depth`
the robust median depth in metres (where the plane is placed). Files without `version` were written before
it existed and have exactly this layout (version 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .json_fields import JsonFields, read_json_file

DEPTH_METADATA_VERSION = 1
WHAT = "The depth metadata"


@dataclass(frozen=True)
class DepthMetadata:
    image_size: tuple[int, int]  # [w, h] in source pixels of what the depth covers
    analysed_size: tuple[int, int]  # [w, h] of the depth EXR
    fx: float
    fy: float
    cx: float  # in source pixels, from the left of what the depth covers
    cy: float
    reference_depth: float  # metres
    version: int = DEPTH_METADATA_VERSION

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "image_size": list(self.image_size),
            "analysed_size": list(self.analysed_size),
            "fx": self.fx,
            "fy": self.fy,
            "cx": self.cx,
            "cy": self.cy,
            "reference_depth": self.reference_depth,
        }

    @classmethod
    def from_json(cls, raw: object) -> DepthMetadata:
        """The document `to_json` writes (or its version-less original); anything else is an InputError."""
        fields = JsonFields(raw, WHAT)
        return cls(
            version=fields.version(DEPTH_METADATA_VERSION),
            image_size=fields.size("image_size"),
            analysed_size=fields.size("analysed_size"),
            fx=fields.number("fx", positive=True),
            fy=fields.number("fy", positive=True),
            cx=fields.number("cx"),
            cy=fields.number("cy"),
            reference_depth=fields.number("reference_depth", positive=True),
        )

    @classmethod
    def read(cls, path: Path) -> DepthMetadata:
        return cls.from_json(read_json_file(path, "the depth metadata"))
