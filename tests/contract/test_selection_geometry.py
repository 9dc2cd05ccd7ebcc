"""Selection geometry both sides share: even–odd lasso area, and the crop of a selection clipped to the image."""

from __future__ import annotations

import math

import pytest

from imageforge.contract import InputError, job_spec
from imageforge.contract.parameters import Selection
from imageforge.contract.selection_geometry import analysed_crop, clip_bounds, even_odd_area, grow_pixels

FIGURE_EIGHT = [[0, 0], [10, 10], [10, 0], [0, 10]]  # two triangles of 25 px² with opposite orientations


def shoelace(points) -> float:
    return abs(sum(x0 * y1 - x1 * y0 for (x0, y0), (x1, y1) in zip(points, [*points[1:], points[0]], strict=True))) / 2


def test_a_figure_eight_encloses_both_loops():
    assert shoelace(FIGURE_EIGHT) == 0.0  # what the old check measured, and refused
    assert even_odd_area(FIGURE_EIGHT) == pytest.approx(50.0)


@pytest.mark.parametrize(
    ("points", "area"),
    [
        ([[0, 0], [10, 0], [10, 10], [0, 10]], 100.0),  # a square, either orientation
        ([[0, 10], [10, 10], [10, 0], [0, 0]], 100.0),
        ([[0, 0], [30, 0], [0, 30]], 450.0),
        ([[0, 0], [1, 1], [2, 2]], 0.0),  # collinear
        ([[0, 0], [10, 0], [10, 10], [0, 10], [0, 0], [10, 0], [10, 10], [0, 10]], 0.0),  # drawn twice: even
    ],
)
def test_simple_and_degenerate_polygons(points, area):
    assert even_odd_area(points) == pytest.approx(area)


def test_a_pentagram_leaves_its_centre_out():
    star = [(10 * math.cos(math.pi / 2 + k * 4 * math.pi / 5), 10 * math.sin(math.pi / 2 + k * 4 * math.pi / 5))
            for k in range(5)]  # fmt: skip
    inner = 10 * math.cos(2 * math.pi / 5) / math.cos(math.pi / 5)  # the inner pentagon's circumradius
    side, apothem = 2 * inner * math.sin(math.pi / 5), inner * math.cos(math.pi / 5)
    assert even_odd_area(star) == pytest.approx(5 * 0.5 * side * (10 - apothem), rel=1e-9)  # the five tips only


def test_a_figure_eight_lasso_parses_and_a_collinear_one_does_not():
    spec = job_spec("refine-image-selection")
    parsed = spec.parse({"input": "x", "selection": {"lasso": FIGURE_EIGHT}})
    assert parsed.selection == Selection(lasso=tuple((float(x), float(y)) for x, y in FIGURE_EIGHT))
    with pytest.raises(InputError, match="enclosing an area"):
        spec.parse({"input": "x", "selection": {"lasso": [[0, 0], [5, 5], [10, 10], [5, 5]]}})


def test_lasso_points_far_beyond_any_image_are_refused():
    with pytest.raises(InputError, match="within ±10000000 pixels"):
        job_spec("refine-image-selection").parse({"input": "x", "selection": {"lasso": [[0, 0], [1e300, 0], [0, 9]]}})


def test_a_huge_finite_box_is_clipped_to_the_image():
    huge = (-1e308, -1e308, 1e308, 1e308)
    assert clip_bounds(huge, 64, 48) == (0.0, 0.0, 64.0, 48.0)
    assert analysed_crop(huge, 4096, 64, 48) == ((0, 0, 64, 48), grow_pixels((0, 0, 64, 48)))
    assert grow_pixels((0, 0, 64, 48)) == 3
    assert analysed_crop((10, 12, 20, 18), 5, 64, 48) == ((3, 5, 27, 25), 2)  # inside: unchanged
