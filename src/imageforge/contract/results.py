"""The names of the files a job returns, and when each is there: one home for both sides.

A job's result is `{ResultName: file name in the job folder}`. The server's jobs write it with these members,
the add-on, the CLI and the tests read it with them, and the server's handler checks every result against the
job's `JobSpec.results` (server/handler.py): a name the spec does not declare, or a declared one missing when
the parameters ask for it, fails the job as a programming error. One enum for every job, because the same
file has the same name across jobs (`depth` + `depth_metadata` from a depth plane or a cutout) and one writer
serves several jobs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, TypeVar

P = TypeVar("P")
P_contra = TypeVar("P_contra", contravariant=True)  # a spec for any parameters serves a job of every kind


class ResultName(StrEnum):
    """Every result name a job may return (docs/jobs.md); a member equals its string."""

    MANIFEST = "manifest"
    CONVERSION = "conversion"
    FOREGROUND = "foreground"
    ALPHA = "alpha"
    UPSCALE = "upscale"
    CUTOUT = "cutout"
    SELECTION_ALPHA = "selection_alpha"
    DEPTH = "depth"
    DEPTH_METADATA = "depth_metadata"
    NORMAL = "normal"
    BACKGROUND = "background"
    BACKGROUND_DEPTH = "background_depth"
    BACKGROUND_DEPTH_METADATA = "background_depth_metadata"
    BACKGROUND_NORMAL = "background_normal"
    INPAINT = "inpaint"
    MASK = "mask"
    SEGMENT = "segment"
    CAMERAS = "cameras"
    POINTS = "points"
    COLMAP = "colmap"
    MEDIA = "media"
    VIDEO = "video"
    RAW = "raw"
    SUMMARY = "summary"
    PROVENANCE = "provenance"


@dataclass(frozen=True)
class GeometryResults:
    """The three files of one analysed surface: the depth plane's, or the cutout's background behind it."""

    depth: ResultName
    depth_metadata: ResultName
    normal: ResultName


SUBJECT_GEOMETRY = GeometryResults(ResultName.DEPTH, ResultName.DEPTH_METADATA, ResultName.NORMAL)
BACKGROUND_GEOMETRY = GeometryResults(
    ResultName.BACKGROUND_DEPTH, ResultName.BACKGROUND_DEPTH_METADATA, ResultName.BACKGROUND_NORMAL
)


@dataclass(frozen=True)
class ResultSpec(Generic[P_contra]):
    """One result of a job: what the file holds, and when a successful run returns it.

    `when` is None for a result every successful run returns; otherwise the result is there exactly when
    `when(parameters)` is true (the job's parsed parameters). `by_handler` marks provenance, which the handler
    writes after the job, and only when the job loaded a model.
    """

    description: str
    when: Callable[[P_contra], bool] | None = None
    by_handler: bool = False

    @property
    def optional(self) -> bool:
        return self.when is not None or self.by_handler

    def expected(self, parameters: P_contra) -> bool:
        """Whether the job itself must return this result for these parameters."""
        if self.by_handler:
            return False
        return self.when is None or self.when(parameters)


def expected_results(results: Mapping[ResultName, ResultSpec[P]], parameters: P) -> frozenset[ResultName]:
    """The names a job must return (and the only ones it may) for these parsed parameters."""
    return frozenset(name for name, spec in results.items() if spec.expected(parameters))


__all__ = ["BACKGROUND_GEOMETRY", "SUBJECT_GEOMETRY", "GeometryResults", "ResultName", "ResultSpec", "expected_results"]
