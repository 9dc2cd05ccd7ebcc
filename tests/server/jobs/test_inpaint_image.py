"""inpaint-image in-process on the kit LaMa model (fills the zeroed hole with LAMA_FILL, keeps the rest)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

from imageforge.contract import InputError
from imageforge.contract.results import ResultName
from imageforge.server.job_steps.hole_fill import MIN_CONTEXT, hole_crop
from imageforge.server.media import open_input
from tests.kit.onnx_models import LAMA_FILL

FILL_8 = np.round(np.array(LAMA_FILL) * 255).astype(np.uint8)


def photo(path: Path, width: int, height: int, *, mode: str = "RGB", seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    channels = {"RGB": 3, "RGBA": 4}[mode]
    pixels = rng.integers(0, 256, (height, width, channels), dtype=np.uint8)
    PILImage.fromarray(pixels, mode).save(path)
    return pixels


def grey_mask(path: Path, width: int, height: int, box: tuple[int, int, int, int]) -> np.ndarray:
    x0, y0, x1, y1 = box
    mask = np.zeros((height, width), np.uint8)
    mask[y0:y1, x0:x1] = 255
    PILImage.fromarray(mask, "L").save(path)
    return mask > 0


def read_png(path: Path) -> np.ndarray:
    return np.asarray(PILImage.open(path))


def test_an_odd_sized_image_is_filled_under_the_mask_and_bit_identical_elsewhere(run_job, tmp_path):
    pixels = photo(tmp_path / "photo.png", 45, 37)
    hole = grey_mask(tmp_path / "mask.png", 45, 37, (10, 8, 23, 30))
    result, context = run_job(
        "inpaint-image", {"input": str(tmp_path / "photo.png"), "mask": str(tmp_path / "mask.png")}
    )
    assert {name: file.name for name, file in result.items()} == {
        "inpaint": "inpaint.png",
        "provenance": "provenance.json",
    }
    output = read_png(result[ResultName.INPAINT])
    assert output.shape == (37, 45, 3) and output.dtype == np.uint8
    np.testing.assert_array_equal(output[~hole], pixels[~hole])  # every pixel outside the mask, to the bit
    np.testing.assert_array_equal(output[hole], np.broadcast_to(FILL_8, (int(hole.sum()), 3)))  # the model's fill
    assert "Inpainting crop (0, 0, 45, 37)" in context.log_text  # small image: context reaches every edge
    assert "analysed at 45×37" in context.log_text  # the adapter padded to 64×64 and cropped back


def test_an_alpha_mask_fills_where_it_is_opaque_and_rgba_input_keeps_its_alpha(run_job, tmp_path):
    pixels = photo(tmp_path / "photo.png", 40, 30, mode="RGBA")
    cut = np.zeros((30, 40, 4), np.uint8)  # a cutout: colour everywhere, opaque only over the object
    cut[..., :3] = 255
    cut[5:15, 20:35, 3] = 255
    PILImage.fromarray(cut, "RGBA").save(tmp_path / "cutout.png")
    result, _ = run_job("inpaint-image", {"input": str(tmp_path / "photo.png"), "mask": str(tmp_path / "cutout.png")})
    output = read_png(result[ResultName.INPAINT])
    assert output.shape == (30, 40, 4)
    hole = cut[..., 3] > 0
    np.testing.assert_array_equal(output[~hole], pixels[~hole])
    np.testing.assert_array_equal(output[hole][:, :3], np.broadcast_to(FILL_8, (int(hole.sum()), 3)))
    np.testing.assert_array_equal(output[..., 3], pixels[..., 3])  # alpha untouched, even in the hole


def test_a_soft_mask_blends_by_its_grey_level(run_job, tmp_path):
    pixels = photo(tmp_path / "photo.png", 32, 32)
    mask = np.zeros((32, 32), np.uint8)
    mask[8:16, 8:16] = 255
    mask[8:16, 16:20] = 128  # a half-strength feather
    PILImage.fromarray(mask, "L").save(tmp_path / "mask.png")
    result, _ = run_job("inpaint-image", {"input": str(tmp_path / "photo.png"), "mask": str(tmp_path / "mask.png")})
    output = read_png(result[ResultName.INPAINT]).astype(np.float64)
    expected = pixels[8:16, 16:20] + (np.array(LAMA_FILL) * 255 - pixels[8:16, 16:20]) * (128 / 255)
    np.testing.assert_allclose(output[8:16, 16:20], expected, atol=0.51)
    np.testing.assert_array_equal(output[mask == 0], pixels[mask == 0])


def test_sixteen_bit_input_stays_sixteen_bit_and_identical_outside(run_job, tmp_path):
    rng = np.random.default_rng(5)
    pixels = rng.integers(0, 65536, (24, 33), dtype=np.uint16)
    PILImage.fromarray(pixels.astype(np.int32), "I").convert("I;16").save(tmp_path / "deep.png")
    source = open_input(str(tmp_path / "deep.png"))
    assert source.sample_kind.value == "uint16"
    result, _ = run_job("inpaint-image", {"input": str(tmp_path / "deep.png"), "selection": {"box": [4, 4, 12, 20]}})
    output = open_input(str(result[ResultName.INPAINT]))
    assert output.sample_kind.value == "uint16"
    values = np.round(output.read_still().pixels * 65535).astype(np.int64)
    keep = np.ones((24, 33), bool)
    keep[4:20, 4:12] = False
    np.testing.assert_array_equal(values[keep], np.repeat(pixels[keep][:, None], 3, axis=1))
    np.testing.assert_array_equal(values[~keep], np.broadcast_to(np.round(np.array(LAMA_FILL) * 65535), (128, 3)))


def test_a_small_hole_in_a_large_image_analyses_only_a_crop_around_it(run_job, tmp_path):
    pixels = photo(tmp_path / "large.png", 1500, 1100)
    hole = grey_mask(tmp_path / "mask.png", 1500, 1100, (700, 500, 760, 540))
    result, context = run_job(
        "inpaint-image",
        {"input": str(tmp_path / "large.png"), "mask": str(tmp_path / "mask.png"), "max_input_size": 256},
    )
    # 60×40 hole + 64 px context on each side: a 188×168 crop, at full resolution (fits 256).
    assert "Inpainting crop (636, 436, 824, 604) (x0, y0, x1, y1) analysed at 188×168" in context.log_text
    output = read_png(result[ResultName.INPAINT])
    np.testing.assert_array_equal(output[~hole], pixels[~hole])
    np.testing.assert_array_equal(output[hole], np.broadcast_to(FILL_8, (int(hole.sum()), 3)))


def test_a_large_hole_is_analysed_reduced_and_pasted_back_at_full_size(run_job, tmp_path):
    pixels = photo(tmp_path / "photo.png", 600, 400)
    hole = grey_mask(tmp_path / "mask.png", 600, 400, (100, 80, 500, 320))
    result, context = run_job(
        "inpaint-image",
        {"input": str(tmp_path / "photo.png"), "mask": str(tmp_path / "mask.png"), "max_input_size": 128},
    )
    assert "analysed at 128×85" in context.log_text
    output = read_png(result[ResultName.INPAINT])
    np.testing.assert_array_equal(output[~hole], pixels[~hole])
    inner = output[90:310, 110:490].reshape(-1, 3).astype(int)  # away from the enlarged rim
    assert np.abs(inner - FILL_8).max() <= 1


def test_a_lasso_selection_fills_its_inside(run_job, tmp_path):
    pixels = photo(tmp_path / "photo.png", 64, 48)
    lasso = [[10, 10], [50, 10], [30, 40]]
    result, _ = run_job("inpaint-image", {"input": str(tmp_path / "photo.png"), "selection": {"lasso": lasso}})
    output = read_png(result[ResultName.INPAINT])
    np.testing.assert_array_equal(output[20, 30], FILL_8)  # well inside the triangle
    np.testing.assert_array_equal(output[:9], pixels[:9])  # above it
    np.testing.assert_array_equal(output[41:], pixels[41:])  # below it


def test_the_hole_crop_takes_context_around_the_hole():
    weight = np.zeros((1000, 2000), np.float32)
    weight[400:600, 900:1300] = 1.0  # 400 × 200 hole: half its longer side (200 px) of context
    crop = hole_crop(weight)
    assert (crop.x0, crop.y0, crop.x1, crop.y1) == (700, 200, 1500, 800)
    weight[:] = 0
    weight[0:4, 0:4] = 1.0  # a tiny hole at the corner: the minimum context, clipped to the image
    crop = hole_crop(weight)
    assert (crop.x0, crop.y0, crop.x1, crop.y1) == (0, 0, 4 + MIN_CONTEXT, 4 + MIN_CONTEXT)


@pytest.mark.parametrize(
    "parameters,message",
    [
        ({}, "either 'mask'"),
        ({"mask": "M", "selection": {"box": [0, 0, 4, 4]}}, "either 'mask'"),
        ({"selection": {"box": [100, 100, 120, 130]}}, "outside the image"),
        ({"mask": "EMPTY"}, "marks no pixel"),
        ({"mask": "WIDE"}, "use a mask of the image's shape"),
    ],
)
def test_bad_masks_fail_with_one_sentence_and_nothing_written(run_job, tmp_path, storage_root, parameters, message):
    photo(tmp_path / "photo.png", 40, 30)
    PILImage.fromarray(np.zeros((30, 40), np.uint8), "L").save(tmp_path / "empty.png")
    PILImage.fromarray(np.full((30, 80), 255, np.uint8), "L").save(tmp_path / "wide.png")
    names = {"M": tmp_path / "empty.png", "EMPTY": tmp_path / "empty.png", "WIDE": tmp_path / "wide.png"}
    if "mask" in parameters:
        parameters = {**parameters, "mask": str(names[parameters["mask"]])}
    with pytest.raises(InputError, match=message):
        run_job("inpaint-image", {"input": str(tmp_path / "photo.png"), **parameters})
    (folder,) = (storage_root / "jobs").iterdir()
    assert {entry.name for entry in folder.iterdir()} <= {"job-state.json", "job.log"}
    assert json.loads((folder / "job-state.json").read_text())["state"] == "failed"


def test_a_half_size_mask_of_the_same_shape_is_scaled_up(run_job, tmp_path):
    pixels = photo(tmp_path / "photo.png", 64, 48)
    grey_mask(tmp_path / "mask.png", 32, 24, (8, 8, 16, 16))  # → 16..32 at full size
    result, _ = run_job("inpaint-image", {"input": str(tmp_path / "photo.png"), "mask": str(tmp_path / "mask.png")})
    output = read_png(result[ResultName.INPAINT])
    np.testing.assert_array_equal(output[20:28, 20:28].reshape(-1, 3), np.broadcast_to(FILL_8, (64, 3)))
    np.testing.assert_array_equal(output[:10], pixels[:10])
