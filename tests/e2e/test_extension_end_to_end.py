"""The built extension end to end, under real Blender: install the zip, start its server, run every job operator.

One run per Blender release in the test matrix (pyproject.toml's `blender-*` groups: 4.5 LTS, 5.2 LTS and
5.3, each in its own bpy environment): the zip that `cli/build.py` builds is installed with
`package_install_files`, its Storage Root preference points at a root with a ready server environment
(tests/kit/server_env.py), and blender_driver.py drives Download Model, Remove Background, Upscale Image,
Refine Selection, Convert to Depth Plane and Cutout against kit models that the server downloads from the
loopback hub. Each test here checks one tool's result in the scene against the kit model's known function
(tests/kit/onnx_models.py): pixels, vertices seen through the camera, the camera, materials, undo, and that
nothing on the way used an API that Blender release deprecates.

Not driven: generate-multiview-cameras (Camera Path from Video; tests/addon/test_camera_path.py lands a
documented cameras.json) and the debug jobs (CLI only).
The driver runs in Blender's Python (3.11 or 3.13); this module stays in the 3.12 suite, which has `onnx` to
build the kit models and NumPy 2 for the references.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

from imageforge.cli.blender_environments import blender_environments
from tests.kit.catalog import KitCatalog, publish_kit_catalog
from tests.kit.extension import build_extension
from tests.kit.hub import LoopbackHub
from tests.kit.onnx_models import BEN2_LUMA, MOGE2_DEFAULTS, moge2_reference, upscaler_reference
from tests.kit.server_env import install_server_environment

pytestmark = pytest.mark.slow

DRIVER = Path(__file__).with_name("blender_driver.py")
BLENDERS = {environment.name: environment for environment in blender_environments()}  # tests/sync syncs them
SQUARE = (64, 64)  # the image tools' input: one BEN2 input and one upscale tile, so references are exact
PHOTO = (64, 48)  # the geometry tools' input, landscape
REFINE_BOX = [8, 8, 40, 40]
CUTOUT_BOX = [16, 8, 48, 40]
CURSOR = (1.0, -2.0, 0.5)
UNDO_STEPS = ["Remove Background", "Upscale Image", "Refine Selection", "Convert to Depth Plane", "Cutout"]


@dataclass(frozen=True)
class Run:
    report: dict
    output: Path
    storage: Path
    catalog: KitCatalog
    hub: LoopbackHub

    def array(self, name: str) -> np.ndarray:
        return np.load(self.output / name)

    def job(self, name: str) -> dict:
        job = self.report["jobs"][name]
        assert job["outcome"] == ["FINISHED"] and not job["active_job_left"], job
        return job


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, np.ndarray | Path]:
    folder = tmp_path_factory.mktemp("photos ü")
    square = np.random.default_rng(6).integers(0, 256, size=(*SQUARE[::-1], 3), dtype=np.uint8)
    photo = np.random.default_rng(7).integers(0, 256, size=(*PHOTO[::-1], 3), dtype=np.uint8)
    PILImage.fromarray(square).save(folder / "square.png")
    PILImage.fromarray(photo).save(folder / "photo.png")
    return {"square": square, "photo": photo, "square_path": folder / "square.png", "photo_path": folder / "photo.png"}


@pytest.fixture(scope="module")
def extension_zip(tmp_path_factory) -> Path:
    return build_extension(tmp_path_factory.mktemp("extension"))


@pytest.fixture(scope="module", params=list(BLENDERS), ids=lambda version: f"blender-{version}")
def run(request, tmp_path_factory, extension_zip, inputs) -> Run:
    python = BLENDERS[request.param].interpreter
    if not python.is_file():
        pytest.skip(f"{BLENDERS[request.param].path.name} is missing: tests/sync syncs it")
    root = tmp_path_factory.mktemp(f"blender {request.param}")
    storage = install_server_environment(root / "storage with spaces ü")
    output = root / "output"
    output.mkdir()
    with LoopbackHub() as hub:
        catalog = publish_kit_catalog(hub, root / "catalog")
        spec = {
            "zip": str(extension_zip),
            "storage_root": str(storage),
            "output": str(output),
            "images": {
                "Background": str(inputs["square_path"]),
                "Upscale": str(inputs["square_path"]),
                "Refine": str(inputs["square_path"]),
                "Photo": str(inputs["photo_path"]),
            },
            "selections": {"refine": {"box": REFINE_BOX}, "cutout": {"box": CUTOUT_BOX}},
        }
        (root / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        environment = {
            **{key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")},
            "BLENDER_USER_RESOURCES": str(root / "blender"),
            "XDG_STATE_HOME": str(root / "state"),
            "IMAGEFORGE_MODEL_CATALOG": str(catalog.path),
            "HF_ENDPOINT": hub.url,
            "IMAGEFORGE_STORAGE_ROOT": str(root / "unused default root"),  # the preference must win over it
        }
        completed = subprocess.run(
            [str(python), str(DRIVER), str(root / "spec.json")],
            env=environment,
            capture_output=True,
            text=True,
            timeout=600,
        )
    report_path = output / "report.json"
    assert report_path.is_file(), f"the driver wrote no report:\n{completed.stdout[-3000:]}\n{completed.stderr[-3000:]}"
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert "error" not in report, f"{report['error']}\nserver.log:\n{_tail(storage / 'server.log')}"
    return Run(report, output, storage, catalog, hub)


def _tail(path: Path, characters: int = 4000) -> str:
    return path.read_text(encoding="utf-8", errors="replace")[-characters:] if path.is_file() else "(none)"


def matte(pixels: np.ndarray) -> np.ndarray:
    """What the kit BEN2 (luma) gives after the adapter's min-max: the expected alpha."""
    luma = (pixels / 255) @ np.array(BEN2_LUMA)
    return (luma - luma.min()) / (luma.max() - luma.min())


def sample_indices(size: int, segments: int) -> np.ndarray:
    """The pixel under each grid line (openspec/0007: integer arithmetic)."""
    return np.minimum(np.arange(segments + 1) * size // segments, size - 1)


def expected_normal() -> np.ndarray:
    """The kit plane's normal in Blender camera axes (OpenCV's y and z flipped), encoded (n + 1) / 2."""
    tilt = MOGE2_DEFAULTS["plane"][1]
    opencv = np.array([0.0, tilt, -1.0]) / math.sqrt(1 + tilt * tilt)
    return (opencv * (1, -1, -1) + 1) / 2


# -- the extension and its server --------------------------------------------------------------------------------


def test_the_zip_installs_and_its_server_starts_from_the_storage_root_preference(run):
    report = run.report
    assert report["install"]["outcome"] == ["FINISHED"]
    assert Path(report["install"]["folder"]).parts[-2:] == ("user_default", "imageforge")
    assert report["storage_root"] == str(run.storage.resolve())
    assert report["server_before_start"] == "STOPPED"  # the ready environment was recognised: no setup needed
    server = report["server"]
    assert (server["outcome"], server["state"]) == (["FINISHED"], "READY")
    assert "cpu" in server["devices"] and isinstance(server["pid"], int)


def test_download_model_fetches_the_model_from_the_hub(run):
    job = run.job("download_model")
    assert job["message"] == "Kit Ben2 is ready"
    assert (run.storage / "models" / "kit_ben2" / "model.onnx").read_bytes() == run.catalog.files["KIT_BEN2"]
    downloads = [record for record in run.hub.requests if record.path.startswith("kit/kit-ben2/")]
    assert [record.method for record in downloads] == ["GET"]  # Remove Background later found it ready


# -- image tools: the image is replaced in place ----------------------------------------------------------------


def test_remove_background_replaces_the_image_empty_picture(run, inputs):
    job = run.job("remove_background")
    image = job["image"]
    assert job["message"] == "Removed the background of 'Background'"
    assert (image["name"], image["size"], image["packed"]) == ("Background", list(SQUARE), True)
    pixels = run.array(image["pixels"])
    np.testing.assert_array_equal(np.round(pixels[..., :3] * 255), inputs["square"])
    np.testing.assert_allclose(pixels[..., 3], matte(inputs["square"]), atol=3 / 255)


def test_upscale_replaces_the_material_image_at_four_times_the_size(run, inputs):
    job = run.job("upscale_image")
    image = job["image"]
    assert job["message"] == "Upscaled 'Upscale' to 256 × 256 px"
    assert (image["name"], image["size"], image["packed"]) == ("Upscale", [256, 256], True)
    source = (inputs["square"] / 255).astype(np.float32).transpose(2, 0, 1)[None]
    expected = np.round(np.clip(upscaler_reference(source, receptive_radius=2)[0].transpose(1, 2, 0), 0, 1) * 255)
    pixels = run.array(image["pixels"])
    assert np.abs(np.round(pixels[..., :3] * 255) - expected).max() <= 1
    np.testing.assert_array_equal(pixels[..., 3], 1.0)


def test_refine_selection_changes_only_the_selection_and_its_soft_edge(run, inputs):
    job = run.job("refine_selection")
    x0, y0, x1, y1 = REFINE_BOX
    changed = int(job["message"].split()[1])
    box_area = (x1 - x0) * (y1 - y0)
    assert job["message"] == f"Refined {changed} pixels of 'Refine'"
    # The server grows the selection by a few pixels (2 for this box) so soft edges just outside it land too.
    assert box_area <= changed <= (x1 - x0 + 6) * (y1 - y0 + 6)
    pixels = run.array(job["image"]["pixels"])
    np.testing.assert_array_equal(np.round(pixels[..., :3] * 255), inputs["square"])
    expected = matte(inputs["square"])
    inside = np.zeros(SQUARE[::-1], dtype=bool)
    inside[y0:y1, x0:x1] = True
    near = np.zeros_like(inside)
    near[max(y0 - 3, 0) : y1 + 3, max(x0 - 3, 0) : x1 + 3] = True
    alpha = pixels[..., 3]
    # With padding covering the image, BEN2 sees the whole image: the matte inside is the whole image's.
    np.testing.assert_allclose(alpha[inside], expected[inside], atol=3 / 255)
    band = near & ~inside
    assert np.all((np.abs(alpha[band] - expected[band]) <= 3 / 255) | (alpha[band] == 1.0))
    np.testing.assert_array_equal(alpha[~near], 1.0)


# -- geometry tools: new meshes, a camera, materials ------------------------------------------------------------


def test_depth_plane_lies_on_the_kit_plane_and_its_camera_reproduces_the_photo(run):
    job = run.job("depth_plane")
    width, height = PHOTO
    reference = moge2_reference(1, height, width)
    columns, rows = sample_indices(width, 16), sample_indices(height, 12)  # 2^4 segments along the long side
    mesh = job["mesh"]
    assert (mesh["vertices"], mesh["faces"]) == (17 * 13, 16 * 12)  # every pixel valid: the whole grid
    expected = reference["metric_points"][0][np.ix_(rows, columns)] * (1, -1, -1)  # OpenCV to Blender camera axes
    np.testing.assert_allclose(run.array(mesh["in_camera"]), expected.reshape(-1, 3), atol=1e-3)
    seen = run.array(mesh["seen"])  # each vertex through the camera lands on the centre of the pixel it came from
    pixel_centres = np.stack(np.meshgrid(columns + 0.5, rows + 0.5), axis=-1).reshape(-1, 2)
    np.testing.assert_allclose(seen[:, :2], pixel_centres, atol=1e-3)
    assert (seen[:, 2] > 0).all()

    camera = job["camera"]
    fx = reference["intrinsics"][0, 0] * width
    assert camera["lens"] == pytest.approx(fx * 36 / width, rel=1e-4)  # 27 mm for the kit's focal 1.2
    assert (camera["sensor_fit"], camera["sensor_width"]) == ("HORIZONTAL", 36.0)
    assert camera["shift"] == pytest.approx([0.0, 0.0], abs=1e-5)
    assert camera["focus_distance"] == pytest.approx(float(np.median(reference["depth"][0])), rel=1e-4)
    assert camera["location"] == pytest.approx(CURSOR)
    assert camera["same_matrix_as_plane"] and camera["is_scene_camera"]
    assert job["resolution"] == list(PHOTO)

    [material] = mesh["materials"]
    assert material["images"] == ["Photo", "Photo Normal"] and material["normal_space"] == "OBJECT"
    assert ["ShaderNodeTexImage", "Color", "ShaderNodeBsdfPrincipled", "Base Color"] in material["links"]
    assert ["ShaderNodeNormalMap", "Normal", "ShaderNodeBsdfPrincipled", "Normal"] in material["links"]
    normal = job["normal"]
    assert (normal["size"], normal["packed"]) == (list(PHOTO), True)
    normal_pixels = run.array(normal["pixels"])[..., :3]
    np.testing.assert_allclose(normal_pixels, np.broadcast_to(expected_normal(), normal_pixels.shape), atol=2 / 255)


def test_cutout_is_displaced_by_depth_where_it_was_cut_from_the_photo(run, inputs):
    job = run.job("cutout")
    x0, y0, x1, y1 = CUTOUT_BOX
    width, height = x1 - x0, y1 - y0
    columns, rows = x0 + sample_indices(width, 31), y0 + sample_indices(height, 31)  # 2^6 capped at 31 segments
    mesh = job["mesh"]
    assert job["message"] == f"Cutout 'Photo Cutout': {32 * 32} vertices"
    assert (mesh["vertices"], mesh["faces"]) == (32 * 32, 31 * 31)
    reference = moge2_reference(1, PHOTO[1], PHOTO[0])
    expected = reference["metric_points"][0][np.ix_(rows, columns)] * (1, -1, -1)
    np.testing.assert_allclose(run.array(mesh["in_camera"]), expected.reshape(-1, 3), atol=1e-3)
    # Seen through the depth plane's camera (same cursor), the cutout covers exactly the selection in the photo.
    seen = run.array(mesh["seen"])
    pixel_centres = np.stack(np.meshgrid(columns + 0.5, rows + 0.5), axis=-1).reshape(-1, 2)
    np.testing.assert_allclose(seen[:, :2], pixel_centres, atol=1e-3)

    image = job["image"]
    assert (image["name"], image["size"], image["packed"]) == ("Photo Cutout", [width, height], True)
    pixels = run.array(image["pixels"])
    np.testing.assert_array_equal(np.round(pixels[..., :3] * 255), inputs["photo"][y0:y1, x0:x1])
    np.testing.assert_array_equal(pixels[..., 3], 1.0)
    [material] = mesh["materials"]
    assert material["images"] == ["Photo Cutout", "Photo Cutout Normal"] and material["normal_space"] == "OBJECT"
    normal = job["normal"]
    assert normal["size"] == [width, height]
    normal_pixels = run.array(normal["pixels"])[..., :3]
    np.testing.assert_allclose(normal_pixels, np.broadcast_to(expected_normal(), normal_pixels.shape), atol=2 / 255)


def test_the_extension_uses_no_api_this_blender_deprecates(run):
    assert run.report["deprecations"] == [], f"under Blender {run.report['blender']}"


# -- history and shutdown -----------------------------------------------------------------------------------------


def test_each_result_is_one_named_undo_step(run):
    undo = run.report["undo"]
    assert undo["steps"][-len(UNDO_STEPS) :] == UNDO_STEPS  # Download Model changes no Blender data: no step
    assert "Photo Cutout" not in undo["after_one_undo"] and "Photo Depth Plane" in undo["after_one_undo"]


def test_disabling_the_add_on_stops_its_server(run):
    shutdown = run.report["shutdown"]
    assert shutdown["retired"] and not shutdown["process_record_left"]
    assert shutdown["types_left"] == []
    with pytest.raises(ProcessLookupError):
        os.kill(run.report["server"]["pid"], 0)
