"""Selections as crops and confining masks: pixel-exact boxes, lassos, growth, and the errors users see."""

from __future__ import annotations

import numpy as np
import pytest

from imageforge.contract import InputError
from imageforge.contract.parameters import Selection
from imageforge.server.job_steps.selection_mask import polygon_coverage, selection_region


def full_mask(region, size):
    width, height = size
    mask = np.zeros((height, width), dtype=np.float32)
    mask[region.slices] = region.mask
    return mask


def test_a_box_selects_exactly_its_pixels_before_growing():
    region = selection_region(Selection(box=(10, 12, 20, 18)), (64, 48), padding=5)
    assert region.grow == 2
    assert region.crop == (10 - 7, 12 - 7, 20 + 7, 18 + 7)
    mask = full_mask(region, (64, 48))
    rows, columns = np.nonzero(mask)
    # Grown by 2 around columns 10–19 and rows 12–17 (the box's pixels), never by less.
    assert mask[12:18, 10:20].all() and mask[10:20, 8:22].sum() >= 10 * 10
    assert columns.min() >= 10 - 3 and columns.max() <= 19 + 3 and rows.min() >= 12 - 3 and rows.max() <= 17 + 3
    assert mask[0:5].sum() == 0 and mask[:, 30:].sum() == 0


def test_a_lasso_fills_by_pixel_centres():
    triangle = Selection(lasso=((0.0, 0.0), (30.0, 0.0), (0.0, 30.0)))
    region = selection_region(triangle, (30, 30), padding=0)
    assert region.crop == (0, 0, 30, 30)
    inside = polygon_coverage(np.array(triangle.lasso), 30, 30, samples=1) > 0
    # Row j's centre is at j + 0.5: the triangle spans x < 29.5 - j there.
    assert [int(row.sum()) for row in inside] == [29 - j for j in range(30)]
    assert inside[:-1, 0].all() and not inside[-1].any()
    assert (region.mask >= inside).all()  # the confining mask contains the selection


def test_a_selection_partly_outside_is_clipped_to_the_image():
    region = selection_region(Selection(box=(-50, -50, 10, 10)), (64, 48), padding=8)
    assert region.crop[:2] == (0, 0)
    assert full_mask(region, (64, 48))[0:10, 0:10].all()


@pytest.mark.parametrize(
    "selection",
    [
        Selection(box=(100, 100, 140, 130)),
        Selection(box=(-40, 5, -1, 20)),
        Selection(lasso=((70, 0), (90, 0), (90, 9))),
    ],
)
def test_a_selection_outside_the_image_is_an_input_error(selection):
    with pytest.raises(InputError, match=r"outside the image \(64×48 pixels\)"):
        selection_region(selection, (64, 48), padding=4)


def test_a_sliver_covering_no_pixel_centre_is_an_input_error():
    sliver = Selection(box=(10.6, 10, 10.9, 20))  # between two pixel centres
    with pytest.raises(InputError, match="covers no pixel"):
        selection_region(sliver, (64, 48), padding=4)


def test_growing_a_dense_lasso_leaves_no_holes():
    """Every pixel within `grow` (square neighbourhood) of a selected pixel is selected: no pinholes on the edge."""
    rng = np.random.default_rng(11)
    for _ in range(20):
        centre = rng.uniform(30, 50, 2)
        angles = np.sort(rng.uniform(0, 2 * np.pi, 300))
        radii = rng.uniform(8, 20, 300)
        points = [
            [float(x), float(y)] for x, y in centre + np.stack([np.cos(angles), np.sin(angles)], 1) * radii[:, None]
        ]
        region = selection_region(Selection(lasso=tuple(map(tuple, points))), (80, 80), 0)
        x0, y0, x1, y1 = region.crop
        inside = polygon_coverage(np.array(points) - (x0, y0), x1 - x0, y1 - y0, samples=1) > 0
        grow = region.grow
        expected = np.zeros_like(inside)
        for dy in range(-grow, grow + 1):
            for dx in range(-grow, grow + 1):
                expected |= np.roll(np.roll(np.pad(inside, grow), dy, 0), dx, 1)[grow:-grow, grow:-grow]
        np.testing.assert_array_equal(region.mask > 0, expected)


# -- mask selections: the same crop and grow as a box, their own coverage -----------------------------------------


def mask_selection(inside: np.ndarray) -> Selection:
    from imageforge.contract.selection_geometry import MaskRuns

    height, width = inside.shape
    return Selection(mask=MaskRuns.encode(inside.astype(np.uint8).tobytes(), width, height))


def test_a_box_shaped_mask_is_refined_exactly_as_the_box():
    inside = np.zeros((48, 64), bool)
    inside[12:18, 10:20] = True
    as_mask = selection_region(mask_selection(inside), (64, 48), padding=5)
    as_box = selection_region(Selection(box=(10, 12, 20, 18)), (64, 48), padding=5)
    assert as_mask.crop == as_box.crop and as_mask.grow == as_box.grow
    np.testing.assert_array_equal(as_mask.mask, as_box.mask)


def test_a_ring_mask_keeps_its_hole_until_grown_over_and_is_its_own_coverage():
    from imageforge.server.job_steps.selection_mask import selection_coverage

    ys, xs = np.mgrid[0:60, 0:80]
    radius = np.hypot(xs - 40, ys - 30)
    ring = (radius < 20) & (radius >= 12)
    region = selection_region(mask_selection(ring), (80, 60), padding=0)
    assert region.crop == (21 - 2, 11 - 2, 60 + 2, 50 + 2) and region.grow == 2  # 5 % of its 39 px
    full = full_mask(region, (80, 60))
    assert full[ring].all() and full[30, 40] == 0  # the hole is more than the grow away from the ring
    np.testing.assert_array_equal(selection_coverage(mask_selection(ring), (80, 60)), ring.astype(np.float32))


def test_a_mask_file_is_soft_coverage_and_must_be_of_the_image_size(tmp_path):
    from PIL import Image

    from imageforge.server.job_steps.selection_mask import check_overlap, selection_coverage

    grey = np.zeros((30, 40), np.uint8)
    grey[5:15, 10:20] = 255
    grey[5:15, 20:24] = 128
    Image.fromarray(grey, "L").save(tmp_path / "mask.png")
    selection = Selection.parse("selection", f"@{tmp_path / 'mask.png'}")
    np.testing.assert_allclose(selection_coverage(selection, (40, 30)), grey / 255, atol=1e-6)
    region = selection_region(selection, (40, 30), padding=0)
    assert region.crop == (10 - 2, 5 - 2, 24 + 2, 15 + 2)  # 128/255 ≥ 0.5: inside
    with pytest.raises(InputError, match=r"The mask is 40×30 pixels but the image is 80×60; use a mask of"):
        check_overlap(selection, (80, 60))  # the same aspect, but a selection is in the image's own pixels


def test_a_mask_of_another_size_or_an_empty_mask_file_is_an_input_error(tmp_path):
    from PIL import Image

    inside = np.zeros((48, 64), bool)
    inside[0, 0] = True
    with pytest.raises(InputError, match=r"is 64×48 pixels but the image is 64×49; make the selection"):
        selection_region(mask_selection(inside), (64, 49), padding=0)
    Image.fromarray(np.zeros((48, 64), np.uint8), "L").save(tmp_path / "black.png")
    with pytest.raises(InputError, match="covers no pixel"):
        selection_region(Selection(mask_file=str(tmp_path / "black.png")), (64, 48), padding=0)
    with pytest.raises(InputError, match="missing.png"):
        selection_region(Selection(mask_file=str(tmp_path / "missing.png")), (64, 48), padding=0)
