"""The upscale adapter on real CPU sessions of kit upscalers (box blur of known radius, then 4× nearest)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image as PILImage

from imageforge.contract import InputError
from imageforge.contract.catalog import Family
from imageforge.server.models.upscale import UpscaleAdapter, automatic_core
from imageforge.server.upscaling.tiling import plan_tiles
from tests.kit.onnx_models import build_upscaler, upscaler_reference

from .conftest import kit_entry

RADIUS = 3


def reference(pixels: np.ndarray, radius: int = RADIUS) -> np.ndarray:
    """The kit model run once on the whole image, clamped: [H*4, W*4, C]."""
    chw = pixels.transpose(2, 0, 1)[None].astype(np.float32)
    return np.clip(upscaler_reference(chw, receptive_radius=radius)[0].transpose(1, 2, 0), 0.0, 1.0)


def collect(adapter, pixels, plan, **kwargs) -> np.ndarray:
    rows = []

    def sink(top: int, band: np.ndarray) -> None:
        assert top == sum(len(block) for block in rows)  # bands arrive in order, without gaps
        rows.append(band.copy())

    adapter.upscale(pixels, plan, sink=sink, **kwargs)
    return np.concatenate(rows)


@pytest.fixture
def blur_upscaler(make_adapter):
    def make(margin: int = RADIUS, **options):
        entry = kit_entry(f"BLUR_{margin}", Family("upscale"), "upscale", tile_margin=margin, tile_blend=4, **options)
        return make_adapter(entry, lambda path: build_upscaler(path, receptive_radius=RADIUS))

    return make


@pytest.fixture
def image() -> np.ndarray:
    return np.random.default_rng(9).random((48, 64, 3), dtype=np.float32)


def test_tiled_output_equals_a_whole_image_run_when_the_margin_covers_the_receptive_field(blur_upscaler, image):
    adapter = blur_upscaler(margin=RADIUS)
    assert isinstance(adapter, UpscaleAdapter)
    plan = adapter.plan(48, 64, scale=4, tile_size=16)
    assert plan.model_scale == 4 and plan.tile_count > 6 and plan.batch == 1  # CPU: one tile per run
    reported = []
    out = collect(adapter, image, plan, on_tile=lambda done, total: reported.append((done, total)))
    assert out.shape == (192, 256, 3)
    np.testing.assert_allclose(out, reference(image), atol=1e-5)
    assert reported == [(done, plan.tile_count) for done in range(1, plan.tile_count + 1)]


def test_a_margin_smaller_than_the_receptive_field_shows_at_the_tile_edges(blur_upscaler, image):
    adapter = blur_upscaler(margin=0)
    plan = adapter.plan(48, 64, scale=4, tile_size=16)
    assert np.abs(collect(adapter, image, plan) - reference(image)).max() > 1e-3


def test_alpha_goes_through_the_model_separately_and_is_reattached(blur_upscaler, image):
    adapter = blur_upscaler()
    alpha = np.zeros((48, 64, 1), dtype=np.float32)
    alpha[10:30, 20:50] = 1.0
    rgba = np.concatenate([image, alpha], axis=2)
    plan = adapter.plan(48, 64, scale=4, tile_size=16)
    runs_before = adapter.runs
    out = collect(adapter, rgba, plan)
    assert out.shape == (192, 256, 4)
    np.testing.assert_allclose(out[..., :3], reference(image), atol=1e-5)  # colour ignores alpha
    np.testing.assert_allclose(out[..., 3], reference(np.repeat(alpha, 3, axis=2))[..., 0], atol=1e-5)
    assert adapter.runs - runs_before == 2 * plan.tile_count  # colour and alpha runs per tile on CPU


def test_alpha_comes_back_as_the_luma_of_the_models_clamped_channels(make_adapter, image):
    """Real-ESRGAN's own code clamps the alpha's RGB output to [0, 1], then makes it grey with
    0.299 R + 0.587 G + 0.114 B (cv2 BGR2GRAY): neither the plain mean nor the luma of unclamped channels."""
    gains = (2.0, 0.5, 0.25)
    entry = kit_entry("GAINS", Family("upscale"), "upscale", tile_margin=0, tile_blend=4)
    adapter = make_adapter(entry, lambda path: build_upscaler(path, channel_gains=gains))
    alpha = np.linspace(0.0, 1.0, 48 * 64, dtype=np.float32).reshape(48, 64, 1)
    out = collect(adapter, np.concatenate([image, alpha], axis=2), adapter.plan(48, 64, scale=4, tile_size=24))
    channels = np.clip(alpha * np.array(gains, np.float32), 0.0, 1.0)  # red saturates above alpha 0.5
    expected = channels @ np.array([0.299, 0.587, 0.114], np.float32)
    np.testing.assert_allclose(out[..., 3], expected.repeat(4, 0).repeat(4, 1), atol=1e-5)


def test_opaque_alpha_costs_no_model_runs(blur_upscaler, image):
    adapter = blur_upscaler()
    rgba = np.concatenate([image, np.ones((48, 64, 1), dtype=np.float32)], axis=2)
    plan = adapter.plan(48, 64, scale=4, tile_size=16)
    runs_before = adapter.runs
    out = collect(adapter, rgba, plan)
    assert adapter.runs - runs_before == plan.tile_count
    assert np.all(out[..., 3] == 1.0)


def test_scale_two_is_the_four_times_output_halved_with_lanczos(blur_upscaler, image):
    adapter = blur_upscaler()
    plan = adapter.plan(48, 64, scale=2, tile_size=16)
    out = collect(adapter, image, plan)
    assert out.shape == (96, 128, 3)
    big = reference(image)
    halved = np.stack(
        [np.asarray(PILImage.fromarray(big[..., c]).resize((128, 96), PILImage.Resampling.LANCZOS)) for c in range(3)],
        axis=2,
    )
    np.testing.assert_allclose(out, np.clip(halved, 0, 1), atol=1e-4)


def test_the_arena_shrink_is_requested_on_the_last_run_only(blur_upscaler, image):
    adapter = blur_upscaler()
    plan = adapter.plan(48, 64, scale=4, tile_size=16)  # the probe run happens here
    flags = []
    run = adapter.handle.run
    adapter.handle.run = lambda feeds, *, last_run: flags.append(last_run) or run(feeds, last_run=last_run)
    collect(adapter, image, plan)
    assert flags == [False] * (plan.tile_count - 1) + [True]
    flags.clear()
    collect(adapter, image, plan, last_frame=False)  # a video frame that is not the last
    assert flags == [False] * plan.tile_count


def test_values_are_clamped(blur_upscaler):
    adapter = blur_upscaler()
    bright = np.full((16, 16, 3), 1.0, dtype=np.float32)
    bright[4:8, 4:8] = 3.0  # what a float source would give unclamped; the model averages it in
    out = collect(adapter, bright, adapter.plan(16, 16, scale=4))
    assert out.max() == 1.0 and out.min() >= 0.0


def test_scale_comes_from_the_catalog_or_a_probe(make_adapter):
    probed = make_adapter(
        kit_entry("X2_PROBED", Family("upscale"), "upscale"), lambda path: build_upscaler(path, scale=2)
    )
    assert probed.model_scale == 2 and probed.runs == 1
    with pytest.raises(InputError, match="upscales 2×; choose scale 2"):
        probed.plan(16, 16, scale=4)
    declared = make_adapter(kit_entry("X4_DECLARED", Family("upscale"), "upscale", scale=4), build_upscaler)
    assert declared.model_scale == 4 and declared.runs == 0


def test_a_tile_size_inside_the_blend_is_refused(blur_upscaler):
    adapter = blur_upscaler()
    with pytest.raises(InputError, match="'tile_size' must be 0 or more than 4"):
        adapter.plan(100, 100, scale=4, tile_size=4)


def test_tile_size_is_the_core_each_run_keeps(blur_upscaler):
    adapter = blur_upscaler()  # margin 3, blend 4: context 5 pixels around each core
    plan = adapter.plan(48, 64, scale=4, tile_size=16)
    assert [(span.core_start, span.core_end) for span in plan.grid.columns] == [(0, 16), (16, 32), (32, 48), (48, 64)]
    assert [span.size for span in plan.grid.columns] == [21, 26, 26, 21]
    assert plan.tile_count == 3 * 4


def test_the_memory_budget_decides_the_tile_size(make_adapter):
    entry = kit_entry("BUDGET", Family("upscale"), "upscale", tile_memory_mib=512)
    adapter = make_adapter(entry, build_upscaler)
    limit = math.isqrt(512 * 1024 * 1024 // 16384) // 8 * 8  # 176 px with the default (heavy-model) estimate
    small = adapter.plan(100, 140, scale=4)
    assert small.tile_count == 1  # fits the budget: one run on the whole image
    large = adapter.plan(300, 200, scale=4)
    assert max(large.grid.largest_run) <= limit and large.tile_count > 1
    light = make_adapter(
        kit_entry("LIGHT", Family("upscale"), "upscale", tile_memory_mib=512, tile_bytes_per_pixel=1024), build_upscaler
    )
    assert light.plan(300, 200, scale=4).tile_count == 1  # a model that states a small footprint gets one tile


@pytest.mark.parametrize(("height", "width"), [(1000, 400), (4096, 4096), (2160, 3840), (500, 9000), (300, 416)])
def test_automatic_cores_use_the_fewest_runs_that_fit_the_limit(height, width):
    limit, context = 416, 18
    core = automatic_core(height, width, limit=limit, context=context)
    grid = plan_tiles(height, width, core=core, margin=10, blend=16)
    assert max(grid.largest_run) <= limit
    if max(height, width) <= limit:
        assert grid.count == 1
    else:  # a run per (limit - 2·context) pixels of each axis, no more
        assert grid.count == math.ceil(height / (limit - 2 * context)) * math.ceil(width / (limit - 2 * context))
