"""Mask selections in the contract: run lengths both sides encode alike, their bounds, and one-sentence errors."""

from __future__ import annotations

import random

import pytest

from imageforge.contract import InputError, job_spec
from imageforge.contract.parameters import Selection
from imageforge.contract.selection_geometry import MaskRuns, analysed_crop


def runs_of(rows: list[str]) -> MaskRuns:
    flat = bytes(1 if char == "#" else 0 for row in rows for char in row)
    return MaskRuns.encode(flat, len(rows[0]), len(rows))


def test_runs_start_outside_and_round_trip():
    mask = runs_of(["..##", ".#..", "...."])
    assert mask.runs == (2, 2, 1, 1, 6)
    assert mask.to_bytes() == bytes([0, 0, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0])
    assert runs_of(["##", ".."]).runs == (0, 2, 2)  # the first pixel inside: an empty outside run first
    assert runs_of(["##", "##"]).runs == (0, 4)
    assert MaskRuns.encode(bytes([0, 7, 255, 0]), 2, 2).runs == (1, 2, 1)  # any non-zero byte is inside


def test_random_masks_round_trip_and_their_bounds_are_those_of_the_inside_pixels():
    generator = random.Random(4)
    for _ in range(200):
        width, height = generator.randint(1, 9), generator.randint(1, 9)
        flat = bytes(generator.random() < 0.2 for _ in range(width * height))
        mask = MaskRuns.encode(flat, width, height)
        assert mask.to_bytes() == flat and mask.area == sum(flat)
        inside = [(index % width, index // width) for index, value in enumerate(flat) if value]
        if not inside:
            assert mask.bounds is None
            continue
        xs, ys = [x for x, _ in inside], [y for _, y in inside]
        assert mask.bounds == (min(xs), min(ys), max(xs) + 1, max(ys) + 1)


def test_a_run_that_wraps_a_row_spans_the_image_width():
    mask = runs_of(["...#", "#..."])
    assert mask.runs == (3, 2, 3) and mask.bounds == (0.0, 0.0, 4.0, 2.0)


def test_a_mask_selection_parses_and_crops_by_the_box_rules():
    mask = runs_of(["........", "..###...", "..##....", "........"])
    raw = {"mask": {"width": 8, "height": 4, "runs": list(mask.runs)}}
    parsed = job_spec("refine-image-selection").parse({"input": "x", "selection": raw})
    assert parsed.selection == Selection(mask=mask)
    assert parsed.selection.to_dict() == raw
    assert parsed.selection.bounds == (2.0, 1.0, 5.0, 3.0)
    assert analysed_crop(parsed.selection.bounds, 1, 8, 4) == analysed_crop((2.0, 1.0, 5.0, 3.0), 1, 8, 4)
    assert parsed.selection.size_mismatch(8, 4) is None
    assert "is 8×4 pixels but the image is 9×4" in parsed.selection.size_mismatch(9, 4)


def test_a_mask_file_parses_from_both_spellings():
    assert Selection.parse("selection", "@masks/cat.png") == Selection(mask_file="masks/cat.png")
    assert Selection.parse("selection", {"mask_file": "cat.png"}).to_dict() == {"mask_file": "cat.png"}
    assert Selection(mask_file="cat.png").overlaps(10, 10)  # the server checks it once it has read the file
    with pytest.raises(ValueError, match="once the file is read"):
        _ = Selection(mask_file="cat.png").bounds


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ({"mask": {"width": 4, "height": 3, "runs": [12]}}, "selects no pixel"),
        ({"mask": {"width": 4, "height": 3, "runs": [5, 6]}}, "add up to 4×3 pixels"),
        ({"mask": {"width": 4, "height": 3, "runs": [5, -1, 8]}}, "non-negative"),
        ({"mask": {"width": 0, "height": 3, "runs": []}}, "out of range"),
        ({"mask": {"width": 4, "height": 3, "runs": [1.5, 10.5]}}, "whole numbers"),
        ({"mask": {"width": 4, "height": 3, "runs": [True, 11]}}, "whole numbers"),
        ({"mask": {"width": 4, "height": 3}}, 'must be {"width"'),
        ({"mask": [0, 1]}, 'must be {"width"'),
        ({"mask_file": ""}, "path of a mask image"),
        ({"mask_file": 4}, "path of a mask image"),
        ({"mask": {"width": 2, "height": 2, "runs": [0, 4]}, "box": [0, 0, 1, 1]}, 'must be {"box"'),
        ("mask.png", "@mask.png"),
    ],
)
def test_bad_mask_selections_are_one_sentence(raw, fragment):
    with pytest.raises(InputError) as caught:
        Selection.parse("selection", raw)
    assert fragment in str(caught.value) and str(caught.value).count(". ") == 0


def test_paths_and_mask_files_of_selections_are_made_absolute_for_the_server():
    from imageforge.contract.jobs import GENERATE_CUTOUT_ARTIFACTS, INPAINT_IMAGE
    from imageforge.contract.parameters import with_absolute_paths

    def absolute(path: str) -> str:
        return "/work/" + path

    given = GENERATE_CUTOUT_ARTIFACTS.parse({"input": "photo.png", "selection": "@cat.png"})
    made = with_absolute_paths(given, absolute)
    assert (made.input, made.selection.mask_file) == ("/work/photo.png", "/work/cat.png")
    assert (given.input, given.selection.mask_file) == ("photo.png", "cat.png")  # a new value; the given one stays
    spelled = INPAINT_IMAGE.parse({"input": "a.png", "selection": {"mask_file": "cat.png"}, "mask": "other.png"})
    made = with_absolute_paths(spelled, absolute)
    assert (made.selection.mask_file, made.mask) == ("/work/cat.png", "/work/other.png")
    box = GENERATE_CUTOUT_ARTIFACTS.parse({"input": "/abs.png", "selection": {"box": [0, 0, 1, 1]}})
    assert with_absolute_paths(box, absolute).selection == box.selection
