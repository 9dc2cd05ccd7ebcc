"""Tiled runs blend without seams: equal to a whole-image run for models whose receptive field fits."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from imageforge.server.tiling import axis_weight, plan_tiles, run_tiled
from tests.kit.onnx_models import build_upscaler


@pytest.fixture(scope="module")
def blur_model(tmp_path_factory):
    path = build_upscaler(tmp_path_factory.mktemp("m") / "blur2.onnx", receptive_radius=2)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return lambda batch: session.run(None, {"input": batch})[0]


def tiled(image, model, *, tile, margin, blend, batch=1):
    height, width, channels = image.shape
    output = np.full((height * 4, width * 4, channels), np.nan, dtype=np.float32)
    written = []

    def sink(first_row, rows):
        assert np.isnan(output[first_row : first_row + len(rows)]).all(), "rows written twice"
        output[first_row : first_row + len(rows)] = rows
        written.append((first_row, len(rows)))

    grid = plan_tiles(height, width, tile=tile, margin=margin, blend=blend)
    progress = []
    run_tiled(image, grid, model, scale=4, sink=sink, batch=batch, on_tile=lambda d, t: progress.append((d, t)))
    assert progress[-1] == (grid.count, grid.count)
    return output, written, grid


@pytest.mark.parametrize(("height", "width", "batch"), [(50, 70, 1), (33, 90, 3), (24, 24, 2)])
def test_matches_a_whole_image_run_when_margin_covers_the_receptive_field(blur_model, height, width, batch):
    image = np.random.default_rng(1).random((height, width, 3), dtype=np.float32)
    whole = blur_model(image.transpose(2, 0, 1)[None])[0].transpose(1, 2, 0)
    output, written, grid = tiled(image, blur_model, tile=24, margin=2, blend=4, batch=batch)
    assert not np.isnan(output).any()
    np.testing.assert_allclose(output, whole, atol=1e-5)
    assert sum(count for _, count in written) == height * 4
    assert [first for first, _ in written] == sorted(first for first, _ in written)
    if height > 24 or width > 24:
        assert grid.count > 1 and grid.work_ratio > 1


def test_too_small_a_margin_shows_seams(blur_model):
    image = np.random.default_rng(2).random((40, 40, 3), dtype=np.float32)
    whole = blur_model(image.transpose(2, 0, 1)[None])[0].transpose(1, 2, 0)
    output, _, _ = tiled(image, blur_model, tile=16, margin=0, blend=2)
    assert np.abs(output - whole).max() > 1e-3


def test_weights_ramp_only_at_inner_edges():
    weight = axis_weight(10, 20, 60, margin=2, blend=4)
    assert weight[0] == 0 and weight[-1] == 0 and weight[10] == 1
    np.testing.assert_allclose(weight[:7], [0, 0, 0.125, 0.375, 0.625, 0.875, 1])
    assert (axis_weight(0, 20, 20, margin=2, blend=4) == 1).all()


def test_plans_equal_tiles_reaching_the_edges():
    grid = plan_tiles(100, 45, tile=32, margin=4, blend=8)
    assert grid.rows == [0, 16, 32, 48, 64, 68] and grid.columns == [0, 13]
    with pytest.raises(ValueError):
        plan_tiles(100, 100, tile=16, margin=4, blend=8)
