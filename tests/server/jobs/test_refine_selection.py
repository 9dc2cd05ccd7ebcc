"""refine-image-selection in-process on the kit BEN2 threshold model (foreground = red channel above 0.5)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

from imageforge.contract import InputError
from imageforge.contract.results import ResultName
from imageforge.server.media import open_input


@pytest.fixture
def two_objects(tmp_path: Path) -> tuple[Path, np.ndarray]:
    """Two red squares on a dark background: one at x 8–23, one at x 40–55 (rows 16–31)."""
    pixels = np.full((48, 64, 3), 30, dtype=np.uint8)
    pixels[16:32, 8:24, 0] = 230
    pixels[16:32, 40:56, 0] = 230
    path = tmp_path / "objects.png"
    PILImage.fromarray(pixels).save(path)
    return path, pixels


def read(path: Path) -> np.ndarray:
    return open_input(str(path)).read_still().pixels


def test_a_box_refines_only_the_object_inside_it(run_job, two_objects):
    path, pixels = two_objects
    selection = {"box": [4, 12, 28, 36]}  # around the left square only
    result, context = run_job(
        "refine-image-selection",
        {"input": str(path), "selection": selection, "model": "KIT_BEN2_THRESHOLD", "estimate_foreground": False},
    )
    assert {name: file.name for name, file in result.items()} == {
        "alpha": "alpha.png",
        "cutout": "cutout.png",
        "provenance": "provenance.json",
    }
    alpha_file = open_input(str(result[ResultName.ALPHA]))
    assert (alpha_file.width, alpha_file.height, alpha_file.sample_kind.value) == (64, 48, "uint16")
    alpha = read(result[ResultName.ALPHA])[..., 0]
    assert np.all(alpha[18:30, 10:22] > 0.99)  # inside the left square
    assert np.all(alpha[:, 34:] == 0.0)  # the right square is outside the selection
    assert np.all(alpha[:8] == 0.0) and np.all(alpha[40:] == 0.0)
    cutout = read(result[ResultName.CUTOUT])
    np.testing.assert_array_equal(np.round(cutout[..., :3] * 255), pixels)
    np.testing.assert_allclose(cutout[..., 3], alpha, atol=1 / 255)
    assert "Selection crop" in context.log_text


def test_a_lasso_confines_the_matte_to_its_grown_outline(run_job, two_objects):
    path, _ = two_objects
    # A triangle over the right square's upper-left half.
    lasso = [[40, 16], [56, 16], [40, 32]]
    result, _ = run_job(
        "refine-image-selection",
        {"input": str(path), "selection": {"lasso": lasso}, "padding": 8, "model": "KIT_BEN2_THRESHOLD"},
    )
    alpha = read(result[ResultName.ALPHA])[..., 0]
    assert alpha[20, 44] > 0.97  # inside the triangle and the square
    assert alpha[30, 54] == 0.0  # inside the square, far outside the triangle
    assert np.all(alpha[:, :32] == 0.0)


def test_a_selection_outside_the_image_fails_with_nothing_written(run_job, two_objects, storage_root: Path):
    path, _ = two_objects
    with pytest.raises(InputError, match="outside the image"):
        run_job("refine-image-selection", {"input": str(path), "selection": {"box": [100, 100, 120, 130]}})
    (folder,) = (storage_root / "jobs").iterdir()
    assert {entry.name for entry in folder.iterdir()} <= {"job-state.json", "job.log"}
    assert json.loads((folder / "job-state.json").read_text())["state"] == "failed"


def test_a_huge_but_finite_box_is_the_whole_image(run_job, two_objects):
    path, _ = two_objects
    whole, _ = run_job(
        "refine-image-selection",
        {"input": str(path), "selection": {"box": [0, 0, 64, 48]}, "model": "KIT_BEN2_THRESHOLD"},
    )
    huge, context = run_job(
        "refine-image-selection",
        {"input": str(path), "selection": {"box": [-1e308, -1e308, 1e308, 1e308]}, "model": "KIT_BEN2_THRESHOLD"},
    )
    np.testing.assert_array_equal(read(huge[ResultName.ALPHA]), read(whole[ResultName.ALPHA]))
    assert (
        read(huge[ResultName.ALPHA])[20, 12, 0] > 0.99 and read(huge[ResultName.ALPHA])[20, 48, 0] > 0.99
    )  # both squares


def test_a_figure_eight_lasso_refines_both_loops(run_job, two_objects):
    path, _ = two_objects
    # Crossing at (32, 24): the upper-left loop holds the left square's corner, the lower-right one the right's.
    eight = [[4, 12], [60, 36], [60, 12], [4, 36]]
    result, _ = run_job(
        "refine-image-selection", {"input": str(path), "selection": {"lasso": eight}, "model": "KIT_BEN2_THRESHOLD"}
    )
    alpha = read(result[ResultName.ALPHA])[..., 0]
    assert alpha[18, 10] > 0.97 and alpha[30, 54] > 0.97  # in the left loop, in the right loop
