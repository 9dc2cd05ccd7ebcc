"""The built extension end to end, under real Blender: install the zip, start its server, run every job operator.

One run per Blender release in the test matrix (pyproject.toml's `blender-*` groups: 4.5 LTS, 5.2 LTS and
5.3, each in its own bpy environment): the zip that `cli/build.py` builds is installed with
`package_install_files`, its Storage Root preference points at a root with a ready server environment
(tests/kit/server_env.py), and blender_driver.py drives Download Model, Remove Background, Upscale Image,
Refine Selection, Convert to Depth Plane, Cutout (with Fill Behind) and, on a kit scene with a depth jump,
Convert to Depth Plane and Parallax Shot against kit models that the server downloads from the loopback hub.
Each test here checks one tool's result in the scene against the kit model's known function
(tests/kit/onnx_models.py): pixels, vertices seen through the camera, the camera, materials, undo, and that
nothing on the way used an API that Blender release deprecates.

Last, Prepare DA3 camera model… runs the real conversion (convert-model: the converter environment of
tests/kit/converter_env.py, a random-weight DA3-Small safetensors from the loopback hub, the exporter and its
check against torch) and Camera Path from Video runs on the model it made. Not driven: the debug jobs (CLI only).
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

import av
import numpy as np
import pytest
from PIL import Image as PILImage

from imageforge.cli.blender_environments import blender_environments
from imageforge.contract.conversions import WHEELHOUSE_VARIABLE
from imageforge.server.matting import estimate_foreground
from tests.kit.catalog import KIT_STEP, KitCatalog, publish_kit_catalog
from tests.kit.converter_env import install_converter, wheelhouse
from tests.kit.extension import build_extension
from tests.kit.hub import LoopbackHub
from tests.kit.onnx_models import BEN2_LUMA, LAMA_FILL, MOGE2_DEFAULTS, moge2_reference, upscaler_reference
from tests.kit.server_env import install_server_environment

pytestmark = pytest.mark.slow

DRIVER = Path(__file__).with_name("blender_driver.py")
BLENDERS = {environment.name: environment for environment in blender_environments()}  # tests/sync syncs them
SQUARE = (64, 64)  # the image tools' input: one BEN2 input and one upscale tile, so references are exact
PHOTO = (64, 48)  # the geometry tools' input, landscape
REFINE_BOX = [8, 8, 40, 40]
CUTOUT_BOX = [16, 8, 48, 40]
CURSOR = (1.0, -2.0, 0.5)
STEP_BOX = [16, 12, 48, 36]  # KIT_STEP's card in PHOTO pixels: Parallax Shot's selection
CLICK_POINTS = [[32, 24, 1]]  # Click Select's click in PHOTO pixels (the kit SAM 2 masks similar colour around it)
PLATE_REACH = 3  # the clean plate fills the matte grown by 3 px at full weight, then fades over 3 px more
UNDO_STEPS = [
    "Remove Background",
    "Upscale Image",
    "Refine Selection",
    "Convert to Depth Plane",
    "Cutout",
    "Convert to Depth Plane",
    "Parallax Shot",
]
MOVIE_FRAMES = 4
CAMERA_FRAMES = 4
# The ground clip: the kit DA3's depth is its colour (3 + the normalised mean), so grey rows can hold the depth of
# a ground 1.5 below a camera pitched 40° down (nominal pinhole: 64 px focal, centre row 24 of 48), under 16 rows
# of blocks at random depths floating above it.
GROUND_SIZE = (64, 48)
GROUND_HEIGHT, GROUND_PITCH, GROUND_FOCAL, GROUND_ROW = 1.5, 40.0, 64.0, 24.0
GROUND_FIRST_ROW = 16


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
    movie = write_movie(folder / "take.mp4", [np.roll(square, 8 * index, axis=1) for index in range(MOVIE_FRAMES)])
    frames = folder / "walk"
    frames.mkdir()
    scene = np.random.default_rng(8).integers(0, 256, size=(45, 80 + 6 * CAMERA_FRAMES, 3), dtype=np.uint8)
    for index in range(CAMERA_FRAMES):  # a 16:9 pan
        PILImage.fromarray(scene[:, 6 * index : 6 * index + 80]).save(frames / f"frame_{index + 1:04d}.png")
    ground = folder / "ground"
    ground.mkdir()
    for index, pixels in enumerate(ground_frames()):
        PILImage.fromarray(pixels).save(ground / f"ground_{index + 1:04d}.png")
    return {
        "ground_frames": ground,
        "square": square,
        "photo": photo,
        "square_path": folder / "square.png",
        "photo_path": folder / "photo.png",
        "movie_path": movie,
        "camera_frames": frames,
    }


def ground_depth(rows: np.ndarray, centre_row: float = GROUND_ROW, focal: float = GROUND_FOCAL) -> np.ndarray:
    """Depth along the optical axis of the ground seen through pixel rows (their centres)."""
    pitch = math.radians(GROUND_PITCH)
    return GROUND_HEIGHT / (math.sin(pitch) + math.cos(pitch) * (rows + 0.5 - centre_row) / focal)


def ground_frames(count: int = CAMERA_FRAMES) -> list[np.ndarray]:
    """Frames whose grey is the depth the kit DA3 reads from them: the ground below, random blocks above."""
    from imageforge.server.models.da3 import IMAGENET_MEAN, IMAGENET_STD

    width, height = GROUND_SIZE
    depth = np.repeat(ground_depth(np.arange(height, dtype=np.float64))[:, None], width, axis=1)
    blocks = np.random.default_rng(9).uniform(1.3, 5.0, (GROUND_FIRST_ROW // 8, width // 8))
    depth[:GROUND_FIRST_ROW] = np.kron(blocks, np.ones((8, 8)))
    mean, std = np.asarray(IMAGENET_MEAN, np.float64), np.asarray(IMAGENET_STD, np.float64)
    grey = (depth - 3.0 + (mean / std).mean()) / (1.0 / std).mean()
    pixels = np.round(np.clip(grey, 0, 1) * 255).astype(np.uint8)
    return [np.repeat(pixels[..., None], 3, axis=2)] * count


def write_movie(path: Path, frames: list[np.ndarray]) -> Path:
    """A near-lossless H.264 clip (yuv444p, crf 0) the sequencer and the server both read."""
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=24, options={"crf": "0"})
        stream.width, stream.height, stream.pix_fmt = frames[0].shape[1], frames[0].shape[0], "yuv444p"
        for index, pixels in enumerate(frames):
            frame = av.VideoFrame.from_ndarray(pixels, format="rgb24")
            frame.pts = index
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return path


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
    weights = install_converter(storage)  # the converter environment, ready; the weights the hub serves
    output = root / "output"
    output.mkdir()
    with LoopbackHub() as hub:
        catalog = publish_kit_catalog(hub, root / "catalog")
        hub.add_hub_file("depth-anything/DA3-SMALL", "model.safetensors", weights.read_bytes())
        spec = {
            "zip": str(extension_zip),
            "storage_root": str(storage),
            "output": str(output),
            "images": {
                "Background": str(inputs["square_path"]),
                "Upscale": str(inputs["square_path"]),
                "Refine": str(inputs["square_path"]),
                "Photo": str(inputs["photo_path"]),
                "Step": str(inputs["photo_path"]),
            },
            "selections": {"refine": {"box": REFINE_BOX}, "cutout": {"box": CUTOUT_BOX}, "parallax": {"box": STEP_BOX}},
            "step_model": "KIT_MOGE2_STEP",
            "click": {"points": CLICK_POINTS},
            "movie": str(inputs["movie_path"]),
            "camera_model": "DA3_SMALL",
            "camera_frames": str(inputs["camera_frames"]),
            "ground_model": "KIT_DA3",
            "ground_frames": str(inputs["ground_frames"]),
            "colmap_folder": str(output / "ground COLMAP"),
        }
        (root / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        environment = {
            **{key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")},
            "BLENDER_USER_RESOURCES": str(root / "blender"),
            "XDG_STATE_HOME": str(root / "state"),
            "IMAGEFORGE_MODEL_CATALOG": str(catalog.path),
            "HF_ENDPOINT": hub.url,
            "IMAGEFORGE_STORAGE_ROOT": str(root / "unused default root"),  # the preference must win over it
            WHEELHOUSE_VARIABLE: str(wheelhouse()),
        }
        completed = subprocess.run(
            [str(python), str(DRIVER), str(root / "spec.json")],
            env=environment,
            capture_output=True,
            text=True,
            timeout=1500,  # the real DA3 conversion takes minutes of CPU
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
    # The soft edge's colour is the estimated foreground (on by default), the rest the picture's own.
    expected = (inputs["square"] / 255).astype(np.float32)
    estimate_foreground(expected, matte(inputs["square"]).astype(np.float32))
    np.testing.assert_allclose(pixels[..., :3], expected, atol=2 / 255)
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
    # Colour: the picture's own wherever the result is opaque; inside the selection's soft matte, the estimated
    # foreground colour (on by default), which differs from the photo's there.
    colour = np.round(pixels[..., :3] * 255)
    opaque = alpha == 1.0
    np.testing.assert_array_equal(colour[opaque], inputs["square"][opaque])
    soft = inside & (alpha > 0.05) & (alpha < 0.95)
    assert soft.sum() > 50 and np.abs(colour[soft] - inputs["square"][soft]).mean() > 2


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
    assert (
        job["message"]
        == f"Cutout 'Photo Cutout': {32 * 32} vertices; clean plate and filled depth on 'Photo Depth Plane'"
    )
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


def changed_region(plate: np.ndarray, photo: np.ndarray) -> tuple[int, int, int, int]:
    """x0, y0, x1, y1 of the pixels whose colour the clean plate changed."""
    rows, columns = np.nonzero(np.abs(np.round(plate[..., :3] * 255) - photo).max(axis=-1) > 0)
    return int(columns.min()), int(rows.min()), int(columns.max()) + 1, int(rows.max()) + 1


def grown(box: list[int], by: int) -> tuple[int, int, int, int]:
    x0, y0, x1, y1 = box
    return max(0, x0 - by), max(0, y0 - by), min(PHOTO[0], x1 + by), min(PHOTO[1], y1 + by)


def assert_filled_under(plate: np.ndarray, photo: np.ndarray, box: list[int]) -> None:
    """The clean plate changed the photo only around `box`: the kit LaMa's colour at full weight, faded after."""
    x0, y0, x1, y1 = changed_region(plate, photo)
    gx0, gy0, gx1, gy1 = grown(box, 2 * PLATE_REACH)
    assert gx0 <= x0 and gy0 <= y0 and x1 <= gx1 and y1 <= gy1  # nothing changed farther out
    fx0, fy0, fx1, fy1 = grown(box, PLATE_REACH)
    full = np.round(plate[fy0:fy1, fx0:fx1, :3] * 255)
    assert np.abs(full - np.round(np.array(LAMA_FILL) * 255)).max() <= 1  # the model's fill under the object


def face_depth_ratios(run: Run, mesh: dict) -> np.ndarray:
    """Per face, the far/near ratio of its corners' depths in the camera."""
    depth = -run.array(mesh["in_camera"])[:, 2]
    corners = depth[run.array(mesh["face_vertices"])]
    return corners.max(axis=1) / corners.min(axis=1)


def test_cutout_fills_behind_the_depth_plane_only_under_the_cutout(run, inputs):
    cutout = run.job("cutout")
    assert_filled_under(run.array(cutout["plate"]["pixels"]), inputs["photo"], CUTOUT_BOX)
    assert cutout["plate"]["packed"]
    after = cutout["plane_after"]
    [material] = after["materials"]
    assert material["images"] == ["Photo Clean Plate", "Photo Clean Plate Normal"]  # what is behind the cutout
    # The kit scene is one plane: the depth filled behind the cutout continues it, so the rebuilt plane is the
    # same surface as before (every vertex, no dip where the object was).
    before = run.job("depth_plane")["mesh"]
    assert (after["vertices"], after["faces"]) == (before["vertices"], before["faces"])
    np.testing.assert_allclose(run.array(after["in_camera"]), run.array(before["in_camera"]), rtol=2e-3, atol=2e-3)


def test_a_depth_plane_tears_at_a_synthetic_depth_jump(run):
    job = run.job("step_depth_plane")
    ratios = face_depth_ratios(run, job["mesh"])
    assert job["mesh"]["faces"] == len(ratios) < 32 * 24  # the faces across the jump are gone …
    assert ratios.max() < 1.2  # … so no face stretches from the card to the plane behind it
    depth = -run.array(job["mesh"]["in_camera"])[:, 2]
    corners = depth[run.array(job["mesh"]["face_vertices"])].mean(axis=1)
    plane = moge2_reference(1, PHOTO[1], PHOTO[0])["depth"][0]
    card = corners < plane.min() * 0.75  # the card is at half the plane's distance
    assert card.sum() > 100 and (~card).sum() > 300  # faces on both sides kept
    assert f"{32 * 24 - len(ratios)} faces torn at depth jumps" in job["message"]


def test_parallax_shot_puts_the_card_in_front_of_a_filled_background_and_moves_the_camera(run, inputs):
    job = run.job("parallax_shot")
    assert job["message"].startswith("Parallax Shot: background ")
    plane = moge2_reference(1, PHOTO[1], PHOTO[0])["depth"][0]
    background = -run.array(job["background"]["in_camera"])[:, 2]
    assert background.min() > plane.min() * 0.99  # nothing left at the card's depth: the plane continues behind it
    assert face_depth_ratios(run, job["background"]).max() < 1.05  # and no hole, no stretched faces
    assert job["background"]["faces"] == 32 * 24
    cutout = -run.array(job["cutout"]["in_camera"])[:, 2]
    card = moge2_reference(1, PHOTO[1], PHOTO[0], step=KIT_STEP)["depth"][0]
    x0, y0, x1, y1 = STEP_BOX
    assert cutout.min() >= card[y0:y1, x0:x1].min() - 1e-3 and cutout.max() <= card[y0:y1, x0:x1].max() + 1e-3
    assert_filled_under(run.array(job["plate"]["pixels"]), inputs["photo"], STEP_BOX)
    [material] = job["background"]["materials"]
    assert material["images"] == ["Step Clean Plate", "Step Clean Plate Normal"]
    assert material["normal_space"] == "OBJECT"
    start, end = (np.array(point) for point in job["camera"]["path"])
    distance = np.linalg.norm(end - start)
    subject = float(np.median(card[y0:y1, x0:x1]))
    assert distance == pytest.approx(0.15 * subject * math.hypot(1.0, 0.3), rel=1e-3)  # the dolly, with a sidestep
    assert job["camera"]["frame_end"] >= 48


@pytest.mark.parametrize(("action", "created"), [("cutout", "Photo Cutout"), ("parallax", "Step Cutout")])
def test_click_select_masks_the_clicked_colour_and_enter_runs_the_tool_with_it(run, inputs, action, created):
    from imageforge.contract.parameters import Selection
    from imageforge.server.models.sam2 import model_input
    from imageforge.server.models.sam2_resize import bilinear
    from tests.kit.onnx_models import sam2_reference

    job = run.job(f"click_select_{action}")
    assert job["outcome"] == ["FINISHED"] and job["tool"]["outcome"] == ["FINISHED"], job
    mask = Selection.parse("selection", job["selection"]).mask
    width, height = PHOTO
    assert mask is not None and (mask.width, mask.height) == (width, height)
    pixels = inputs["photo"][..., :3].astype(np.float32) / 255
    x, y, _ = CLICK_POINTS[0]
    point = (x / width * 1024, y / height * 1024)
    expected = bilinear(sam2_reference(model_input(pixels), point)[2], (width, height)) > 0  # best of three
    got = np.frombuffer(mask.to_bytes(), np.uint8).reshape(height, width).astype(bool)
    np.testing.assert_array_equal(got, expected)  # the server's mask, exactly, stored with the image
    assert any(name.startswith(created) for name in job["new_objects"]), job["new_objects"]


# -- frames and batches (issue 13) -------------------------------------------------------------------------------


def test_a_movie_strip_becomes_a_strip_of_alpha_frames_at_its_place_and_length(run, inputs):
    job = run.job("vse_strip")
    strip = job["strip"]
    assert job["message"] == "Removed the background: 3 frame(s) of 'Take' → 'Take Cutout'"
    assert strip["source"] == [1, 6, 9, "MOVIE"]  # untouched
    assert (strip["type"], strip["channel"], strip["span"]) == ("IMAGE", 2, [6, 9])
    assert [Path(path).name for path in strip["files"]] == ["frame_0002.png", "frame_0003.png", "frame_0004.png"]
    for index, path in enumerate(strip["files"], start=1):
        with PILImage.open(path) as frame:
            pixels = np.asarray(frame)
        assert pixels.shape == (*SQUARE[::-1], 4)  # RGBA: the matte as alpha
        source = np.roll(inputs["square"], 8 * index, axis=1)
        expected = (source / 255).astype(np.float32)  # the soft edge in the estimated foreground colour
        estimate_foreground(expected, matte(source).astype(np.float32))
        assert np.abs(pixels[..., :3] / 255 - expected).mean() < 0.02  # H.264 at crf 0 in yuv444p
        assert np.abs(pixels[..., 3] / 255 - matte(source)).mean() < 0.03


def test_an_image_texture_of_a_selected_object_is_upscaled_in_place(run, inputs):
    job = run.job("upscale_textures")
    image = job["image"]
    assert job["message"] == "1 done"
    assert (image["name"], image["size"], image["packed"], job["same_datablock"]) == ("Texture", [128, 128], True, True)
    source = (inputs["square"] / 255).astype(np.float32).transpose(2, 0, 1)[None]
    four = np.clip(upscaler_reference(source, receptive_radius=2)[0].transpose(1, 2, 0), 0, 1)
    halved = np.stack(  # 2× is the model's 4×, then halved with Pillow's Lanczos (server/upscaling/halving.py)
        [np.asarray(PILImage.fromarray(four[..., c], mode="F").resize((128, 128), PILImage.LANCZOS)) for c in range(3)],
        axis=-1,
    )
    pixels = run.array(image["pixels"])
    assert np.abs(pixels[..., :3] - np.clip(halved, 0, 1)).max() <= 2 / 255
    assert run.report["undo_after_batches"] == ["Remove Background (Frames)", "Upscale Textures of Selected Objects"]


# -- history and shutdown -----------------------------------------------------------------------------------------


def test_each_result_is_one_named_undo_step(run):
    undo = run.report["undo"]
    assert undo["steps"][-len(UNDO_STEPS) :] == UNDO_STEPS  # Download Model changes no Blender data: no step
    assert "Step Background" not in undo["after_one_undo"] and "Step Depth Plane" in undo["after_one_undo"]


def test_disabling_the_add_on_leaves_the_shared_server_which_then_exits(run):
    shutdown = run.report["shutdown"]
    assert shutdown["retired"] and not shutdown["process_record_left"]
    assert shutdown["types_left"] == []
    with pytest.raises(ProcessLookupError):
        os.kill(run.report["server"]["pid"], 0)


def test_prepare_da3_camera_model_then_camera_path_from_video_on_it(run):
    prepared = run.job("prepare_camera_model")
    assert prepared["message"] == "Depth Anything 3 Small (cameras, converted) is ready; Camera Path from Video uses it"
    assert prepared["camera_model"] == "DA3_SMALL_CAMERAS"  # the multiview default the tool now sends
    converted = run.storage / "models" / "DA3-SMALL-cameras" / "da3_small_cameras.onnx"
    assert converted.is_file() and not (run.storage / "models" / ".staging" / "convert-DA3_SMALL").exists()
    job = run.job("camera_path")
    camera = job["camera"]
    assert camera["frames"] == [1, CAMERA_FRAMES]
    assert math.isfinite(camera["lens"]) and camera["lens"] > 0
    matrices = run.array(camera["matrices"])
    assert matrices.shape == (CAMERA_FRAMES, 4, 4) and np.isfinite(matrices).all()
    rotations = matrices[:, :3, :3] / np.linalg.norm(matrices[:, :3, :3], axis=1, keepdims=True)
    identity = np.broadcast_to(np.eye(3), (CAMERA_FRAMES, 3, 3))
    np.testing.assert_allclose(rotations.transpose(0, 2, 1) @ rotations, identity, atol=1e-4)
    ran = [json.loads(path.read_text()) for path in (run.storage / "jobs").glob("*/provenance.json")]
    assert [run_["model"] for record in ran for run_ in record["models"] if "CAMERAS" in run_["model"]] == [
        "DA3_SMALL_CAMERAS"
    ]


def test_camera_path_from_video_lands_the_kit_reconstruction_levelled_and_scales_it(run):
    """The kit DA3 on the ground clip: points in one collection with the camera, the ground found and levelled to
    Z = 0 with the camera above it at the clip's height and pitch, the COLMAP folder unpacked, then Scale Scene
    by a 1.6 camera height, all through the real server."""
    job = run.job("reconstruction")
    landed = job["landed"]
    assert landed["objects"] == ["ground Camera", "ground Points", "ground Scene"]
    assert landed["parents"] == ["ground Scene"] and landed["modifier"] == ["NODES"]
    assert "ground levelled" in job["message"] and "COLMAP in" in job["message"]
    # Where the ground really is: the rows' depths back-projected through the pinhole the job reported (the
    # letterboxed kit model's own focal and centre), which keeps them on one plane B·y + A·z = h.
    [cameras] = [
        document for document in (json.loads(path.read_text()) for path in run.storage.glob("jobs/*/cameras.json"))
        if document["model"] == "KIT_DA3"
    ]  # fmt: skip
    intrinsics = cameras["frames"][0]["intrinsics"]
    pitch = math.radians(GROUND_PITCH)
    a = math.sin(pitch) + math.cos(pitch) * (intrinsics["cy"] - GROUND_ROW) / GROUND_FOCAL
    b = math.cos(pitch) * intrinsics["fy"] / GROUND_FOCAL
    height = GROUND_HEIGHT / math.hypot(a, b)
    camera = np.array(landed["camera"])
    assert camera[2, 3] == pytest.approx(height, rel=0.02)  # the first camera above the ground at Z = 0
    forward = camera[:3, :3] @ [0.0, 0.0, -1.0] / np.linalg.norm(camera[:3, 2])
    assert math.degrees(math.asin(-forward[2])) == pytest.approx(math.degrees(math.atan2(a, b)), abs=1.0)
    points = run.array(landed["points"])
    on_ground = np.abs(points[:, 2]) < 0.01 * height
    assert on_ground.mean() > 0.55 and len(points) > 1000  # the ground rows are two thirds of every frame
    folder = run.output / "ground COLMAP"
    assert {path.name for path in (folder / "sparse" / "0").iterdir()} == {"cameras.txt", "images.txt", "points3D.txt"}
    assert len(list((folder / "images").glob("frame_*.png"))) == CAMERA_FRAMES

    scaled = job["scaled"]
    # (a headless bpy pushes no undo step for an UNDO operator called from Python: only the import's own shows)
    assert job["scale"] == ["FINISHED"] and job["undo"][-1] == "Camera Path from Video"
    assert np.array(scaled["camera"])[2, 3] == pytest.approx(1.6, rel=1e-4)
    after = run.array(scaled["points"])
    np.testing.assert_allclose(after[on_ground, 2], points[on_ground, 2] * 1.6 / camera[2, 3], atol=1e-4)


def test_camera_path_on_the_converted_model_lands_its_points_with_the_camera(run):
    landed = run.job("camera_path")["landed"]
    assert landed["objects"] == ["walk Camera", "walk Points", "walk Scene"]
    points = run.array(landed["points"])
    assert len(points) > 0 and np.isfinite(points).all()
