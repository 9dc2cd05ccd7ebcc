"""The LaMa adapter on real CPU sessions of kit LaMa models (output = RGB + mask × LAMA_FILL)."""

from __future__ import annotations

import numpy as np
import pytest

from imageforge.contract import ModelUnavailableError
from imageforge.contract.catalog import Family
from imageforge.server.models.lama import LamaAdapter
from tests.kit.onnx_models import LAMA_FILL, build_ben2, build_lama

from .conftest import kit_entry

FILL = np.array(LAMA_FILL, np.float32)


def test_odd_sizes_are_padded_to_multiples_of_32_and_cropped_back(make_adapter):
    adapter = make_adapter(kit_entry("KIT_LAMA", Family("inpaint"), "lama"), build_lama)
    assert isinstance(adapter, LamaAdapter) and adapter.fixed_size is None
    rgb = np.random.default_rng(2).random((37, 45, 3), dtype=np.float32)
    hole = np.zeros((37, 45), bool)
    hole[30:, 40:] = True  # touching the padded corner
    filled = adapter.inpaint(rgb, hole, last_run=True)
    assert filled.shape == (37, 45, 3)
    np.testing.assert_array_equal(filled[~hole], rgb[~hole])  # the kit passes known pixels through
    np.testing.assert_allclose(filled[hole], np.broadcast_to(FILL, (int(hole.sum()), 3)))  # hole zeroed, then filled
    assert adapter.runs == 1


def test_a_fixed_size_export_gets_the_image_resized_to_its_input(make_adapter):
    adapter = make_adapter(kit_entry("KIT_LAMA_512", Family("inpaint"), "lama"), lambda path: build_lama(path, size=64))
    assert adapter.fixed_size == (64, 64)
    rgb = np.full((50, 90, 3), 0.5, np.float32)
    hole = np.zeros((50, 90), bool)
    hole[10:40, 20:70] = True
    filled = adapter.inpaint(rgb, hole, last_run=True)
    assert filled.shape == (50, 90, 3)
    np.testing.assert_allclose(filled[20:30, 30:60], np.broadcast_to(FILL, (10, 30, 3)), atol=1e-3)
    np.testing.assert_allclose(filled[:4, :10], 0.5, atol=1e-3)


def test_a_model_without_the_four_channel_input_is_refused(make_adapter):
    with pytest.raises(ModelUnavailableError, match="does not look like a LaMa export"):
        make_adapter(kit_entry("NOT_LAMA", Family("inpaint"), "lama"), lambda path: build_ben2(path, size=32))
