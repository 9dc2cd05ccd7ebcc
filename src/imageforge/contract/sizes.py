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
