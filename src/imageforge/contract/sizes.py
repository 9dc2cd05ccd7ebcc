"""Image-size arithmetic both sides must agree on (the add-on's labels show what the server will produce)."""

from __future__ import annotations


def fit_long_edge_size(size: tuple[int, int], max_size: int) -> tuple[int, int]:
    """The (width, height) whose long edge is at most `max_size`, keeping the aspect ratio; never larger."""
    if max_size < 1:
        raise ValueError("max_size must be at least 1")
    width, height = size
    long_edge = max(width, height)
    if long_edge <= max_size:
        return (width, height)
    scale = max_size / long_edge
    return (max(1, round(width * scale)), max(1, round(height * scale)))


MIN_GEOMETRY_EDGE = 2  # pixels on each side of what MoGe-2 analyses (openspec/0006: why 2, measured)


def geometry_size_problem(size: tuple[int, int], max_input_size: int) -> str | None:
    """Why depth, normals and a camera cannot come from an image this small, as the sentence both sides show;
    None when they can. The rule is on the analysed size: the image reduced to `max_input_size`.

    MoGe-2's network runs at any size (it resamples to its own token grid), but the camera is recovered from
    where different pixels lie on the view plane: one pixel lies at its centre and gives no focal length (the
    official pipeline fails on a 1 × 1 image too), and a depth plane needs at least one face: 2 × 2 pixels."""
    width, height = size
    analysed = fit_long_edge_size(size, max_input_size)
    if min(width, height) < MIN_GEOMETRY_EDGE:
        return (
            f"The image is {width}×{height} pixels; depth, normals and the camera need at least "
            f"{MIN_GEOMETRY_EDGE}×{MIN_GEOMETRY_EDGE} pixels, so use a larger image."
        )
    if min(analysed) < MIN_GEOMETRY_EDGE:
        return (
            f"Maximum AI Input Size {max_input_size} reduces this {width}×{height} image to "
            f"{analysed[0]}×{analysed[1]} pixels; depth, normals and the camera need at least "
            f"{MIN_GEOMETRY_EDGE}×{MIN_GEOMETRY_EDGE}, so raise it."
        )
    return None
