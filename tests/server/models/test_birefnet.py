"""The BiRefNet adapter on real CPU sessions of kit BiRefNet graphs (the published signature, logits out)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image as PILImage

from imageforge.contract import ModelUnavailableError
from imageforge.contract.catalog import Family
from imageforge.server.models.background import IMAGENET_MEAN, IMAGENET_STD
from imageforge.server.models.birefnet import BiRefNetAdapter
from tests.kit.onnx_models import birefnet_reference, build_birefnet

from .conftest import kit_entry


def entry(key: str, **options):
    return kit_entry(key, Family("background"), "birefnet", normalization="imagenet", **options)


def align_corners_bilinear(plane: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """F.interpolate(mode="bilinear", align_corners=True) of a 2-D plane, written directly (corner to corner)."""
    height, width = plane.shape
    out_w, out_h = size
    ys, xs = np.linspace(0, height - 1, out_h), np.linspace(0, width - 1, out_w)
    y0, x0 = np.floor(ys).astype(int), np.floor(xs).astype(int)
    y1, x1 = np.minimum(y0 + 1, height - 1), np.minimum(x0 + 1, width - 1)
    fy, fx = (ys - y0)[:, None], (xs - x0)[None, :]
    top = plane[np.ix_(y0, x0)] * (1 - fx) + plane[np.ix_(y0, x1)] * fx
    bottom = plane[np.ix_(y1, x0)] * (1 - fx) + plane[np.ix_(y1, x1)] * fx
    return top * (1 - fy) + bottom * fy


@pytest.mark.parametrize(("source", "model"), [((40, 56), (64, 64)), ((90, 70), (48, 64))])
def test_pre_and_post_processing_follow_the_official_inference(make_adapter, source, model):
    """Square and non-square model inputs, enlarging and shrinking: the matte is sigmoid(logits of the
    8-bit PIL-bilinear-resized, ImageNet-normalised image), brought back corner-aligned."""
    model_h, model_w = model
    adapter = make_adapter(
        entry(f"BIREFNET_{model_h}X{model_w}"), lambda path: build_birefnet(path, size=model_w, height=model_h)
    )
    assert isinstance(adapter, BiRefNetAdapter) and adapter.input_size == (model_h, model_w)
    height, width = source
    eight_bit = np.random.default_rng(1).integers(0, 256, (height, width, 3), dtype=np.uint8)
    resized = PILImage.fromarray(eight_bit, "RGB").resize((model_w, model_h), PILImage.Resampling.BILINEAR)
    tensor = ((np.asarray(resized, np.float32) / 255.0 - IMAGENET_MEAN) / IMAGENET_STD).transpose(2, 0, 1)[None]
    ours_input = adapter.preprocess(eight_bit.astype(np.float32) / 255.0)
    np.testing.assert_array_equal(ours_input, tensor.astype(np.float32))
    expected = align_corners_bilinear(1 / (1 + np.exp(-birefnet_reference(tensor)[0, 0])), (width, height))
    alpha = adapter.matte(eight_bit.astype(np.float32) / 255.0, (width, height), None, last_run=True)
    assert alpha.shape == (height, width) and alpha.dtype == np.float32
    np.testing.assert_allclose(alpha, expected, atol=2e-6)


def test_no_min_max_stretch_and_the_source_alpha_multiplies(make_adapter):
    adapter = make_adapter(entry("BIREFNET_PLAIN"), build_birefnet)
    grey = np.full((32, 32, 3), 0.5, np.float32)  # a flat logit: a flat matte of sigmoid(l), not stretched to 0/1
    flat = adapter.matte(grey, (32, 32), None, last_run=True)
    assert np.ptp(flat) < 1e-6 and 0.01 < float(flat[0, 0]) < 0.99
    source_alpha = np.tile(np.linspace(0, 1, 32, dtype=np.float32), (32, 1))
    np.testing.assert_allclose(adapter.matte(grey, (32, 32), source_alpha, last_run=True), flat * source_alpha)


def test_a_file_that_already_ends_in_a_sigmoid_is_refused_unless_declared(make_adapter):
    def sigmoid_ended(path):
        return build_birefnet(path, final_sigmoid=True)

    with pytest.raises(ModelUnavailableError, match="already ends in a sigmoid, but its catalog entry says"):
        make_adapter(entry("BIREFNET_DOUBLE"), sigmoid_ended)
    declared = make_adapter(entry("BIREFNET_DECLARED", final_activation="sigmoid"), sigmoid_ended)
    logits = make_adapter(entry("BIREFNET_LOGITS"), build_birefnet)
    rgb = np.random.default_rng(2).integers(0, 256, (30, 30, 3)).astype(np.float32) / 255
    # Not squashed twice: the declared sigmoid graph gives the logits graph's matte.
    np.testing.assert_allclose(
        declared.matte(rgb, (30, 30), None, last_run=True), logits.matte(rgb, (30, 30), None, last_run=True), atol=1e-6
    )
    with pytest.raises(ModelUnavailableError, match="does not end in a sigmoid"):
        make_adapter(entry("BIREFNET_LOGITS_AS_SIGMOID", final_activation="sigmoid"), build_birefnet)


def test_a_graph_whose_output_is_not_a_matte_is_refused_in_one_sentence(make_adapter):
    with pytest.raises(
        ModelUnavailableError, match=r"does not look like a BiRefNet model \(its output \[1, 3, 64, 64\]"
    ):
        make_adapter(entry("BIREFNET_RGB_OUT"), lambda path: build_birefnet(path, channels=3))


def test_an_unknown_final_activation_is_a_catalog_error(make_adapter):
    with pytest.raises(ModelUnavailableError, match="final_activation 'softmax' in the catalog; use none or sigmoid"):
        make_adapter(entry("BIREFNET_ODD", final_activation="softmax"), build_birefnet)
