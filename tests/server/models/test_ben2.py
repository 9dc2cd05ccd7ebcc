"""The BEN2 adapter on real CPU sessions of kit BEN2 models (known functions: luma, threshold on red)."""

from __future__ import annotations

import numpy as np
import pytest

from imageforge.contract import ModelUnavailableError
from imageforge.contract.catalog import Family
from imageforge.server.models.ben2 import IMAGENET_MEAN, IMAGENET_STD, Ben2Adapter
from tests.kit.onnx_models import BEN2_LUMA, build_ben2

from .conftest import kit_entry

LUMA = np.array(BEN2_LUMA, dtype=np.float32)


def min_max(values: np.ndarray) -> np.ndarray:
    return (values - values.min()) / (values.max() - values.min())


@pytest.fixture
def rgb() -> np.ndarray:
    """8-bit values, as the model sees them (its input is rounded to 8 bits like the official code's)."""
    return (np.random.default_rng(5).integers(0, 256, (64, 64, 3)) / 255).astype(np.float32)


def test_reads_names_size_and_fp16_output_from_the_session(make_adapter, rgb):
    entry = kit_entry("RENAMED_BEN2", Family("background"), "ben2", normalization="none")
    adapter = make_adapter(
        entry, lambda path: build_ben2(path, size=64, input_name="pixel_values", output_name="matte_logits")
    )
    assert isinstance(adapter, Ben2Adapter)
    assert (adapter.input_name, adapter.output_name, adapter.input_size) == ("pixel_values", "matte_logits", (64, 64))
    raw = adapter.infer(rgb, last_run=True)
    assert raw.dtype == np.float16 and raw.shape == (1, 1, 64, 64)
    alpha = adapter.matte(rgb, (64, 64), None, last_run=True)
    assert alpha.dtype == np.float32 and alpha.shape == (64, 64)
    np.testing.assert_allclose(alpha, min_max(rgb @ LUMA), atol=2e-3)
    assert adapter.runs == 2 and adapter.model_seconds > 0


def test_imagenet_normalisation_is_applied_before_the_model(make_adapter):
    def threshold(path):
        return build_ben2(path, size=64, function="threshold")  # 1 where the model's red input > 0.5

    imagenet = make_adapter(
        kit_entry("BEN2_IMAGENET", Family("background"), "ben2", normalization="imagenet"), threshold
    )
    plain = make_adapter(kit_entry("BEN2_PLAIN", Family("background"), "ben2", normalization="none"), threshold)
    rgb = np.zeros((64, 64, 3), dtype=np.float32)
    rgb[:, :32, 0] = 0.55  # (0.55 - 0.485) / 0.229 = 0.28: below the threshold once normalised
    rgb[:, 32:, 0] = 0.70  # (0.70 - 0.485) / 0.229 = 0.94: above it either way
    assert (0.55 - IMAGENET_MEAN[0]) / IMAGENET_STD[0] < 0.5 < (0.70 - IMAGENET_MEAN[0]) / IMAGENET_STD[0]
    normalised = imagenet.matte(rgb, (64, 64), None, last_run=True)
    np.testing.assert_allclose(normalised[:, :30], 0.0, atol=1e-3)
    np.testing.assert_allclose(normalised[:, 34:], 1.0, atol=1e-3)
    # Unnormalised, both halves pass the threshold: a flat matte of 1.
    np.testing.assert_allclose(plain.matte(rgb, (64, 64), None, last_run=True), 1.0, atol=1e-3)


def test_matte_comes_back_at_the_source_size_in_place(make_adapter):
    adapter = make_adapter(
        kit_entry("BEN2_THRESHOLD", Family("background"), "ben2", normalization="none"),
        lambda path: build_ben2(path, size=64, function="threshold"),
    )
    rgb = np.zeros((48, 96, 3), dtype=np.float32)
    rgb[:, :32, 0] = 1.0  # red in the left third: the threshold model's foreground
    alpha = adapter.matte(rgb, (96, 48), None, last_run=True)
    assert alpha.shape == (48, 96)
    np.testing.assert_allclose(alpha[:, :28], 1.0, atol=1e-3)
    np.testing.assert_allclose(alpha[:, 36:], 0.0, atol=1e-3)
    assert alpha.min() >= 0.0 and alpha.max() <= 1.0
    larger = adapter.matte(rgb, (192, 96), None, last_run=True)  # any requested size
    np.testing.assert_allclose(larger[:, :56], 1.0, atol=1e-3)
    np.testing.assert_allclose(larger[:, 72:], 0.0, atol=1e-3)


def test_source_alpha_multiplies_the_matte(make_adapter, rgb):
    adapter = make_adapter(
        kit_entry("BEN2_ALPHA", Family("background"), "ben2", normalization="none"),
        lambda path: build_ben2(path, size=64),
    )
    source_alpha = np.tile(np.linspace(0.0, 1.0, 64, dtype=np.float32), (64, 1))
    alpha = adapter.matte(rgb, (64, 64), source_alpha, last_run=True)
    np.testing.assert_allclose(alpha, min_max(rgb @ LUMA) * source_alpha, atol=2e-3)
    assert np.all(alpha[:, 0] == 0.0)


def test_a_flat_matte_is_kept_rather_than_stretched(make_adapter):
    adapter = make_adapter(
        kit_entry("BEN2_FLAT", Family("background"), "ben2", normalization="none"),
        lambda path: build_ben2(path, size=64),
    )
    white = np.ones((40, 40, 3), dtype=np.float32)
    np.testing.assert_allclose(adapter.matte(white, (40, 40), None, last_run=True), 1.0, atol=1e-3)


def test_unknown_normalisation_is_a_catalog_error(make_adapter):
    entry = kit_entry("BEN2_ODD", Family("background"), "ben2", normalization="zscore")
    with pytest.raises(ModelUnavailableError, match="normalization 'zscore'"):
        make_adapter(entry, lambda path: build_ben2(path, size=64))


def test_postprocessing_resizes_bilinearly_then_stretches_like_ben2_py(make_adapter):
    """BEN2.py: F.interpolate(bilinear, align_corners=False) to the source size, then min–max over the result."""
    adapter = make_adapter(kit_entry("BEN2_POST", Family("background"), "ben2"), lambda path: build_ben2(path, size=32))
    raw = np.array([[0.2, 0.6], [0.4, 0.8]], np.float32)[None, None]
    weights = np.array([0.0, 0.25, 0.75, 1.0])  # half-pixel source positions -0.25, 0.25, 0.75, 1.25, clamped
    expected = (2 * weights[None, :] + weights[:, None]) / 3  # the stretched corners are 0, 2/3, 1/3, 1
    np.testing.assert_allclose(adapter.postprocess(raw, (4, 4), None), expected, atol=1e-6)
    # Shrinking has no antialiasing: a one-pixel line between the sampled pairs vanishes, as in BEN2.py.
    line = np.zeros((1, 1, 8, 8), np.float32)
    line[..., 3, :] = 1.0
    line[..., 1, 1] = 0.5  # sampled (positions 1.5 and 5.5 on each axis): a quarter of it reaches out[0, 0]
    shrunk = adapter.postprocess(line, (2, 2), None)
    np.testing.assert_allclose(shrunk, [[1.0, 0.0], [0.0, 0.0]], atol=1e-6)


def test_a_declared_final_sigmoid_is_checked_in_the_file(make_adapter):
    def with_sigmoid(path):
        return build_ben2(path, size=32, final_sigmoid=True)

    entry = kit_entry("BEN2_SIGMOID", Family("background"), "ben2", final_activation="sigmoid")
    checked = make_adapter(entry, with_sigmoid)
    assert checked.matte(np.full((32, 32, 3), 0.5, np.float32), (32, 32), None, last_run=True).shape == (32, 32)
    with pytest.raises(ModelUnavailableError, match="does not end in a sigmoid .its output comes from Conv"):
        make_adapter(
            kit_entry("BEN2_LOGITS", Family("background"), "ben2", final_activation="sigmoid"),
            lambda path: build_ben2(path, size=32),
        )


@pytest.mark.parametrize("size", [(20, 30), (1500, 1100)])
def test_the_model_input_is_ben2_pys_8_bit_lanczos_resize_exactly(make_adapter, size):
    """BEN2.py: `Image.open(...).convert("RGB").resize((1024, 1024), Image.LANCZOS)`, then ToTensor. PIL resizes
    the 8-bit image in two 8-bit passes; resizing the same values in float differed by up to 2/255 (docs/parity.md),
    the 8-bit resize is the official tensor bit for bit, enlarging (20×30) or shrinking (1500×1100)."""
    from PIL import Image as PILImage

    adapter = make_adapter(kit_entry("BEN2_PRE", Family("background"), "ben2", normalization="none"), build_ben2)
    height, width = size
    eight_bit = np.random.default_rng(3).integers(0, 256, (height, width, 3), dtype=np.uint8)
    official = PILImage.fromarray(eight_bit, "RGB").resize((1024, 1024), PILImage.Resampling.LANCZOS)
    expected = np.asarray(official, np.float32) / 255.0
    ours = adapter.preprocess(eight_bit.astype(np.float32) / 255.0)[0].transpose(1, 2, 0)
    np.testing.assert_array_equal(ours, expected)


def test_an_rgba_input_is_composited_over_black_before_the_8_bit_resize(make_adapter):
    adapter = make_adapter(kit_entry("BEN2_RGBA", Family("background"), "ben2", normalization="none"), build_ben2)
    rgba = np.random.default_rng(4).integers(0, 256, (40, 50, 4)).astype(np.float32) / 255.0
    composite = np.rint(rgba[..., :3] * rgba[..., 3:] * 255).astype(np.uint8)
    from PIL import Image as PILImage

    official = PILImage.fromarray(composite, "RGB").resize((1024, 1024), PILImage.Resampling.LANCZOS)
    np.testing.assert_array_equal(
        adapter.preprocess(rgba)[0].transpose(1, 2, 0), np.asarray(official, np.float32) / 255.0
    )
