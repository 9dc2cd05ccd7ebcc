"""Landing a result whose size no longer matches the image: a typed error, one sentence, the image untouched."""

from __future__ import annotations

import bpy
import numpy as np
import pytest

from imageforge.addon.scene.pixels import read_pixels
from imageforge.addon.scene.replace import ResultSizeError, multiply_alpha, replace_within
from imageforge.contract import ImageForgeError


@pytest.fixture
def image(addon):
    made = bpy.data.images.new("Resized", 8, 6, alpha=True, float_buffer=True)
    made.pixels.foreach_set(np.linspace(0, 1, 8 * 6 * 4, dtype=np.float32))
    yield made
    bpy.data.images.remove(made)


def test_a_matte_of_another_size_is_a_result_size_error_and_changes_nothing(image, tmp_path):
    before = read_pixels(image).copy()
    with pytest.raises(
        ResultSizeError, match=r"^The matte is 4×3 but image 'Resized' is 8×6 now; run the tool again\.$"
    ):
        multiply_alpha(image, np.ones((3, 4), np.float32), tmp_path)
    np.testing.assert_array_equal(read_pixels(image), before)
    assert list(tmp_path.iterdir()) == []


def test_a_result_of_another_size_is_a_result_size_error(image, tmp_path):
    mask = np.ones((6, 8), bool)
    with pytest.raises(ResultSizeError, match=r"^The result is 5×6 but image 'Resized' is 8×6 now") as raised:
        replace_within(image, np.zeros((6, 5, 4), np.float32), mask, tmp_path)
    assert isinstance(raised.value, ImageForgeError)  # the operators report it as the job's one sentence
