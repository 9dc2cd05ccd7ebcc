"""Tiled runs blend without seams: equal to a whole-image run for models whose receptive field fits; `core`
(tile_size) is what each run keeps, the context comes on top, and the work a grid costs is counted."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from imageforge.server.upscaling.tiling import Span, axis_weight, plan_tiles, run_tiled
from tests.kit.onnx_models import build_upscaler


@pytest.fixture(scope="module")
def blur_model(tmp_path_factory):
    path = build_upscaler(tmp_path_factory.mktemp("m") / "blur2.onnx", receptive_radius=2)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return lambda batch: session.run(None, {"input": batch})[0]


def tiled(image, model, *, core, margin, blend, batch=1):
    height, width, channels = image.shape
    output = np.full((height * 4, width * 4, channels), np.nan, dtype=np.float32)
    written = []

    def sink(first_row, rows):
        assert np.isnan(output[first_row : first_row + len(rows)]).all(), "rows written twice"
        output[first_row : first_row + len(rows)] = rows
        written.append((first_row, len(rows)))

    grid = plan_tiles(height, width, core=core, margin=margin, blend=blend)
    progress = []
    run_tiled(image, grid, model, scale=4, sink=sink, batch=batch, on_tile=lambda d, t: progress.append((d, t)))
    assert progress[-1] == (grid.count, grid.count)
    return output, written, grid


@pytest.mark.parametrize(("height", "width", "batch"), [(50, 70, 1), (33, 90, 3), (24, 24, 2)])
def test_matches_a_whole_image_run_when_margin_covers_the_receptive_field(blur_model, height, width, batch):
    image = np.random.default_rng(1).random((height, width, 3), dtype=np.float32)
    whole = blur_model(image.transpose(2, 0, 1)[None])[0].transpose(1, 2, 0)
    output, written, grid = tiled(image, blur_model, core=16, margin=2, blend=4, batch=batch)
    assert not np.isnan(output).any()
    np.testing.assert_allclose(output, whole, atol=1e-5)
    assert sum(count for _, count in written) == height * 4
    assert [first for first, _ in written] == sorted(first for first, _ in written)
    if height > 16 or width > 16:
        assert grid.count > 1 and grid.work_ratio > 1


def test_too_small_a_margin_shows_seams(blur_model):
    image = np.random.default_rng(2).random((40, 40, 3), dtype=np.float32)
    whole = blur_model(image.transpose(2, 0, 1)[None])[0].transpose(1, 2, 0)
    output, _, _ = tiled(image, blur_model, core=12, margin=0, blend=2)
    assert np.abs(output - whole).max() > 1e-3


def test_neighbours_cross_fade_over_the_blend_centred_on_their_seam():
    grid = plan_tiles(20, 60, core=20, margin=2, blend=4)
    first, second, third = grid.columns
    assert (first, second) == (Span(0, 24, 0, 20), Span(16, 28, 20, 40))  # context 2 + 4/2 on inner sides only
    left, middle = axis_weight(first, 60, 4), axis_weight(second, 60, 4)
    np.testing.assert_allclose(left[16:24], [1, 1, 0.875, 0.625, 0.375, 0.125, 0, 0])
    np.testing.assert_allclose(left[16:24] + middle[:8], 1.0)  # the ramps are exact complements
    assert middle[0] == 0 and middle[-1] == 0 and (middle[6:22] == 1).all()
    assert (axis_weight(Span(0, 20, 0, 20), 20, 4) == 1).all()
    assert third == Span(36, 24, 40, 60)


def test_cores_split_each_axis_evenly_and_never_exceed_the_tile_size():
    grid = plan_tiles(100, 45, core=32, margin=4, blend=8)
    assert [(span.core_start, span.core_end) for span in grid.rows] == [(0, 25), (25, 50), (50, 75), (75, 100)]
    assert [(span.start, span.size) for span in grid.rows] == [(0, 33), (17, 41), (42, 41), (67, 33)]
    assert [(span.core_start, span.core_end) for span in grid.columns] == [(0, 22), (22, 45)]
    assert plan_tiles(30, 30, core=64, margin=4, blend=8).count == 1
    with pytest.raises(ValueError):
        plan_tiles(100, 100, core=8, margin=4, blend=8)


@pytest.mark.parametrize(("size", "expected"), [(1024, 1.2221), (2048, 1.2612), (1000, 1.2277)])
def test_work_is_the_runs_area_over_the_image_area(size, expected):
    # tile_size 256 with the upscalers' margin 10 and blend 16: the 1024² case of docs/benchmarks.md is 1.222×,
    # where the old meaning (256 px per run, overlap counted inside the tile) did 1.5625×.
    grid = plan_tiles(size, size, core=256, margin=10, blend=16)
    seen = []
    image = np.zeros((size, size, 1), dtype=np.float32)
    run_tiled(image, grid, lambda tiles: (seen.append(tiles.shape), tiles)[1], scale=1, sink=lambda top, rows: None)
    assert sum(n * h * w for n, _, h, w in seen) / size**2 == pytest.approx(grid.work_ratio)
    assert grid.work_ratio == pytest.approx(expected, abs=1e-4)
    assert max(h for _, _, h, _ in seen) <= 256 + 2 * grid.context


def test_a_batch_holds_tiles_of_equal_width_only():
    grid = plan_tiles(16, 100, core=25, margin=2, blend=4)
    shapes = []
    run_tiled(np.ones((16, 100, 3), np.float32), grid, lambda t: (shapes.append(t.shape), t)[1], scale=1,
              sink=lambda top, rows: None, batch=8)  # fmt: skip
    assert [shape[0] for shape in shapes] == [1, 2, 1] and len({shape[3] for shape in shapes[1:2]}) == 1
