"""Full-resolution results are written band by band (so a 16384² job never holds a whole float copy of them):
the files must be exactly what one band covering the whole image writes. Small images, many tiny bands.

Memory at the 16384² limit is measured by bench/memory_at_limit.py, never asserted here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

from imageforge.contract import JobId
from imageforge.server.job_steps import hole_fill
from imageforge.server.media import png_stream, resample, stills
from tests.kit.onnx_models import build_ben2, build_lama, build_moge2

from .geometry_kit import (  # noqa: F401  (fixtures)
    catalog_entry,
    jobs_fixture,
    model_path,
    use_catalog_fixture,
    write_rgba,
)

BAND_SIZES = (
    ("DECODE_BAND_PIXELS", stills),
    ("RESIZE_BAND_PIXELS", resample),
    ("BAND_PIXELS", png_stream),
    ("BLEND_BAND_PIXELS", hole_fill),
)


@pytest.fixture
def kit_models(use_catalog, storage_root: Path) -> None:
    use_catalog(
        [
            catalog_entry("KIT_MOGE2", "geometry", "moge2"),
            catalog_entry("KIT_BEN2", "background", "ben2", normalization="none"),
            catalog_entry("KIT_LAMA", "inpaint", "lama"),
        ]
    )
    build_lama(model_path(storage_root, "KIT_LAMA"))
    build_moge2(model_path(storage_root, "KIT_MOGE2"), focal=1.1, shift=0.8, plane=(3.0, 0.45), metric_scale=1.7)
    build_ben2(model_path(storage_root, "KIT_BEN2"), size=64, function="luma")


@pytest.fixture
def photo(tmp_path: Path) -> Path:
    pixels = np.random.default_rng(4).random((48, 64, 4), dtype=np.float32)
    pixels[..., 3] = 1.0
    pixels[:, :16, 3] = 0.0
    pixels[30:, 40:, 3] = 0.5
    return write_rgba(tmp_path / "photo.png", pixels)


def run_twice(jobs, monkeypatch, job: JobId, parameters: dict) -> tuple[dict, dict]:
    """The job's PNG/EXR results (decoded) with bands of 3 rows, then with one band for the whole image."""
    outputs = []
    for band_rows in (3, 1 << 20):
        for name, module in BAND_SIZES:
            monkeypatch.setattr(module, name, 64 * band_rows)
        outcome = jobs.run(job, parameters)
        assert outcome.state == "succeeded", outcome.error
        outputs.append(
            {
                name: np.asarray(PILImage.open(outcome.file(name)))
                for name in outcome.result
                if outcome.result[name].endswith(".png")
            }
        )
    return outputs[0], outputs[1]


@pytest.mark.parametrize(
    ("job", "extra"),
    [
        (JobId.GENERATE_DEPTH_PLANE_GEOMETRY, {"max_input_size": 32}),  # the normal map is sampled up ×2
        (JobId.REMOVE_BACKGROUND, {}),
        (JobId.INPAINT_IMAGE, {"selection": {"box": [20, 4, 50, 40]}, "max_input_size": 32}),  # blended in bands
        (JobId.REFINE_IMAGE_SELECTION, {"selection": {"box": [20, 4, 50, 40]}}),
        (
            JobId.GENERATE_CUTOUT_ARTIFACTS,
            {"selection": {"box": [18.5, 6, 60, 44.25]}, "refine": True, "normal_mode": "object", "max_input_size": 32},
        ),
    ],
)
def test_results_written_in_bands_equal_the_whole_image_written_at_once(
    jobs, kit_models, photo, monkeypatch, job, extra
):
    banded, whole = run_twice(jobs, monkeypatch, job, {"input": str(photo), "device": "cpu", **extra})
    assert banded.keys() == whole.keys() and banded
    for name in whole:
        assert banded[name].shape == whole[name].shape
        np.testing.assert_array_equal(banded[name], whole[name], err_msg=name)
