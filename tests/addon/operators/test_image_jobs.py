"""Remove Background, Upscale Image and Refine Selection on a real scene, landing real result files."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import bpy
import numpy as np
import pytest
from job_server import CancelledBy, chosen, run_job_operator
from result_files import write_exr, write_png_gray16, write_png_rgba
from scenes import image_object, load_photo, photo_pixels, undo_steps

BYTE = 1 / 255


def pixels_of(name: str) -> np.ndarray:
    from imageforge.addon.scene.pixels import read_pixels

    return read_pixels(bpy.data.images[name])


def refined(matte: np.ndarray, cutout: np.ndarray):
    """A stand-in refine-image-selection: the matte as 16-bit grey and the RGBA cutout, as the server writes them."""

    def produce(parameters, directory):
        write_png_gray16(directory / "alpha.png", matte)
        write_png_rgba(directory / "cutout.png", cutout)
        return {"alpha": "alpha.png", "cutout": "cutout.png"}

    return produce


@pytest.fixture
def photo(job_server, tmp_path):
    """An 8×6 PNG photo on disk, shown by the active object's material; the undo history starts here."""
    pixels = photo_pixels(8, 6)
    image = load_photo(tmp_path / "photo.png", pixels)
    image.name = "Photo"
    image_object(image)
    bpy.ops.ed.undo_push(message="Scene ready")
    return pixels


def test_remove_background_replaces_the_image_in_place(job_server, photo, tmp_path, capfd):
    matte = np.zeros((6, 8), dtype=np.float32)
    matte[:, :5] = 1.0  # foreground: the five left columns

    def produce(parameters, directory):
        foreground = photo.copy()
        foreground[..., 3] = matte
        write_png_rgba(directory / "foreground.png", foreground)
        return {"foreground": "foreground.png"}

    job_server.producers["remove-background"] = produce
    assert run_job_operator(bpy.ops.imageforge.remove_background) == {"FINISHED"}
    [(job_type, parameters)] = job_server.submitted
    assert job_type == "remove-background"
    assert chosen("remove-background", parameters) == {
        "input": str(tmp_path / "photo.png"),  # a saved, unchanged file is sent as it is
        "model": "BEN2_BASE",  # the preference's choice (output_kind foreground, device auto, 2048 px: defaults)
    }
    image = bpy.data.images["Photo"]
    assert bpy.data.materials["Photo Plane"].node_tree.nodes["Image Texture"].image == image  # same datablock
    result = pixels_of("Photo")
    assert np.allclose(result[..., 3], matte, atol=BYTE)
    assert np.allclose(result[..., :3], photo[..., :3], atol=BYTE)
    assert image.packed_file is not None
    assert (image.colorspace_settings.name, image.alpha_mode) == ("sRGB", "STRAIGHT")
    shutil.rmtree(tmp_path / "jobs")  # job files cleared: the packed result stays
    image.reload()
    assert np.allclose(pixels_of("Photo")[..., 3], matte, atol=BYTE)
    steps = undo_steps(capfd)
    this_test = steps[len(steps) - 1 - steps[::-1].index("Scene ready") :]  # earlier tests' steps stay in history
    assert this_test == ["Scene ready", "Remove Background"]
    bpy.ops.ed.undo()
    assert np.allclose(pixels_of("Photo")[..., 3], 1.0)
    assert bpy.data.images["Photo"].packed_file is None


def test_remove_background_multiplies_float_images_in_blender(job_server, tmp_path):
    hdr = photo_pixels(6, 4) * 8.0  # values above 1 must survive
    hdr[..., 3] = 1.0
    image = load_photo(tmp_path / "render.exr", hdr)
    image.name = "Render"
    image_object(image, "Render Plane")
    colorspace = image.colorspace_settings.name
    matte = np.linspace(0.0, 1.0, 24, dtype=np.float32).reshape(4, 6)

    def produce(parameters, directory):
        write_exr(directory / "alpha.exr", matte)
        return {"alpha": "alpha.exr"}

    job_server.producers["remove-background"] = produce
    assert run_job_operator(bpy.ops.imageforge.remove_background) == {"FINISHED"}
    assert job_server.submitted[0][1]["output_kind"] == "alpha"
    result = pixels_of("Render")
    assert np.allclose(result, hdr * matte[..., None], rtol=1e-5)  # premultiplied: colour and alpha alike
    assert result[..., :3].max() > 2.0  # HDR values above 1 survive
    assert bpy.data.images["Render"].packed_file is not None
    assert bpy.data.images["Render"].colorspace_settings.name == colorspace


def test_upscale_changes_the_size_and_exports_unsaved_images(job_server, tmp_path, capfd):
    image = bpy.data.images.new("Painted", 5, 3, alpha=True)  # generated: no file for the server to read
    painted = photo_pixels(5, 3, seed=4)
    from imageforge.addon.scene.pixels import write_pixels

    write_pixels(image, painted)
    image_object(image, "Painted Plane")
    bpy.ops.ed.undo_push(message="Painted")
    upscaled = photo_pixels(20, 12, seed=5)
    seen = {}

    def produce(parameters, directory):
        source = Path(parameters["input"])
        seen["input"] = source
        with_pixels = bpy.data.images.load(str(source), check_existing=False)
        seen["size"] = tuple(with_pixels.size)
        bpy.data.images.remove(with_pixels)
        write_png_rgba(directory / "upscale.png", upscaled)
        return {"upscale": "upscale.png"}

    job_server.producers["upscale-image"] = produce
    assert run_job_operator(bpy.ops.imageforge.upscale_image, scale="4") == {"FINISHED"}
    parameters = job_server.submitted[0][1]
    assert (parameters["scale"], parameters["model"]) == (4, "REALESRGAN_GENERAL_X4V3")
    assert seen["size"] == (5, 3) and seen["input"].suffix == ".png"
    assert not seen["input"].exists()  # the exported input is removed when the job ends
    image = bpy.data.images["Painted"]
    assert tuple(image.size) == (20, 12)
    assert np.allclose(pixels_of("Painted"), upscaled, atol=BYTE)
    assert image.packed_file is not None
    assert undo_steps(capfd)[-1] == "Upscale Image"
    bpy.ops.ed.undo()
    assert tuple(bpy.data.images["Painted"].size) == (5, 3)


def test_upscale_target_size_follows_the_maximum_input_size():
    from imageforge.addon.operators.upscale_size import upscale_target

    assert upscale_target(1000, 500, 4, 2048) == (4000, 2000)
    assert upscale_target(4096, 2048, 2, 2048) == (4096, 2048)
    assert upscale_target(3000, 1000, 4, 1024) == (4096, 1364)


def test_upscale_label_matches_an_exact_computation_of_the_servers_size():
    """The label's size, checked against exact rational arithmetic (not the contract function it calls): the
    longer side becomes min(long, Maximum AI Input Size), the shorter one the nearest whole number to its exact
    share (at least 1), and both are multiplied by the scale."""
    from fractions import Fraction

    from imageforge.addon.operators.upscale_size import upscale_target

    rng = np.random.default_rng(11)
    sizes = [(int(w), int(h)) for w, h in rng.integers(1, 20000, size=(300, 2))]
    for width, height in [*sizes, (1, 1), (3000, 1000), (1000, 3000), (2048, 2048), (2049, 3), (5, 20000)]:
        for max_size in (1, 255, 1024, 2048, 8192):
            for scale in (2, 4):
                long_edge, short_edge = max(width, height), min(width, height)
                limited_long = min(long_edge, max_size)
                exact_short = Fraction(short_edge * limited_long, long_edge)
                result = upscale_target(width, height, scale, max_size)
                result_long, result_short = (result[0], result[1]) if width >= height else (result[1], result[0])
                assert result_long == limited_long * scale
                assert result_short % scale == 0
                limited_short = result_short // scale
                assert limited_short >= 1
                assert abs(limited_short - exact_short) <= Fraction(1, 2) or (limited_short == 1 and exact_short < 1)
    assert upscale_target(3000, 1000, 4, 1024) == (4096, 1364)  # 1000 * 1024 / 3000 = 341.33 -> 341
    assert upscale_target(1000, 3000, 2, 1024) == (682, 2048)
    assert upscale_target(2049, 3, 4, 2048) == (8192, 12)  # 3 * 2048 / 2049 = 2.9985 -> 3
    assert upscale_target(5, 20000, 4, 255) == (4, 1020)  # 5 * 255 / 20000 = 0.06 -> at least 1


def test_refine_selection_changes_only_the_selected_pixels(job_server, photo, capfd):
    matte = np.zeros((6, 8), dtype=np.float32)
    matte[1:4, 2:6] = 0.25  # the server's matte is zero outside the (grown) selection
    cutout = photo.copy()
    cutout[..., 3] = matte

    job_server.producers["refine-image-selection"] = refined(matte, cutout)
    selection = {"box": [2, 1, 6, 4]}
    outcome = run_job_operator(bpy.ops.imageforge.refine_selection, selection=json.dumps(selection))
    assert outcome == {"FINISHED"}
    parameters = job_server.submitted[0][1]
    assert (parameters["selection"], parameters["padding"]) == ({"box": [2.0, 1.0, 6.0, 4.0]}, 32)
    alpha = pixels_of("Photo")[..., 3]
    inside = np.zeros((6, 8), dtype=bool)
    inside[1:4, 2:6] = True
    assert np.allclose(alpha[inside], 0.25, atol=BYTE)
    assert np.allclose(alpha[~inside], 1.0)
    assert undo_steps(capfd)[-1] == "Refine Selection"


@pytest.mark.parametrize("suffix", [".png", ".exr"])
def test_refine_selection_lands_the_soft_edge_the_server_grew_into(job_server, tmp_path, suffix):
    photo = photo_pixels(40, 30, seed=7)
    image = load_photo(tmp_path / f"photo{suffix}", photo)
    image.name = "Photo"
    image_object(image)
    box = [10, 8, 30, 22]  # grown by max(2, round(5% of 20)) = 2 px on the server
    matte = np.zeros((30, 40), dtype=np.float32)
    matte[8:22, 10:30] = 0.5
    matte[10:20, 30] = 0.6  # a soft edge just outside the drawn box, inside the grown band
    matte[10:20, 31] = 0.3
    cutout = photo.copy()
    cutout[..., 3] = matte

    job_server.producers["refine-image-selection"] = refined(matte, cutout)
    outcome = run_job_operator(bpy.ops.imageforge.refine_selection, selection=json.dumps({"box": box}))
    assert outcome == {"FINISHED"}
    alpha = pixels_of("Photo")[..., 3]
    assert np.allclose(alpha[10:20, 30], 0.6, atol=BYTE) and np.allclose(alpha[10:20, 31], 0.3, atol=BYTE)
    assert np.allclose(alpha[8:22, 10:30], 0.5, atol=BYTE)
    landed = np.zeros((30, 40), dtype=bool)
    landed[8:22, 10:30] = landed[10:20, 30:32] = True
    assert np.allclose(alpha[~landed], 1.0)  # the grown band's zeros and everything beyond keep the image
    if suffix == ".png":
        assert np.allclose(pixels_of("Photo")[..., :3], photo[..., :3], atol=BYTE)


def test_remove_background_in_selection_keeps_only_the_object_inside(job_server, photo, capfd):
    matte = np.zeros((6, 8), dtype=np.float32)
    matte[1:4, 2:6] = 0.75  # the model's matte on the selection's crop, zero beyond it
    matte[2, 3] = 0.0  # a hole inside the selection: background there too
    cutout = photo.copy()
    cutout[..., 3] = matte

    job_server.producers["refine-image-selection"] = refined(matte, cutout)
    selection = {"lasso": [[2, 1], [6, 1], [6, 4], [2, 4]]}
    outcome = run_job_operator(bpy.ops.imageforge.remove_background_in_selection, selection=json.dumps(selection))
    assert outcome == {"FINISHED"}
    [(job_type, parameters)] = job_server.submitted
    assert job_type == "refine-image-selection" and parameters["padding"] == 32
    result = pixels_of("Photo")
    assert np.allclose(result[..., 3], matte, atol=BYTE)  # outside the selection: transparent, not kept
    assert np.allclose(result[..., :3], photo[..., :3], atol=BYTE)  # straight alpha: the colour stays
    assert undo_steps(capfd)[-1] == "Remove Background in Selection"


def test_remove_background_in_selection_multiplies_float_images_to_zero_outside(job_server, tmp_path):
    pixels = photo_pixels(8, 6)
    image = load_photo(tmp_path / "photo.exr", pixels)
    image.name = "Photo"
    image_object(image)
    matte = np.zeros((6, 8), dtype=np.float32)
    matte[1:4, 2:6] = 0.5

    job_server.producers["refine-image-selection"] = refined(matte, pixels)
    outcome = run_job_operator(bpy.ops.imageforge.remove_background_in_selection, selection='{"box": [2, 1, 6, 4]}')
    assert outcome == {"FINISHED"}
    before = pixels.astype(np.float32)
    result = pixels_of("Photo")
    np.testing.assert_allclose(result, before * matte[..., None], atol=1e-3)  # premultiplied: all four channels


def test_fill_selection_sends_the_selection_and_lands_the_fill(job_server, photo, capfd):
    filled = photo.copy()
    filled[1:4, 2:6, :3] = [0.2, 0.4, 0.6]

    def produce(parameters, directory):
        write_png_rgba(directory / "inpaint.png", filled)
        return {"inpaint": "inpaint.png"}

    job_server.producers["inpaint-image"] = produce
    mask = {"mask": {"width": 8, "height": 6, "runs": [8, 4, 4, 4, 4, 4, 20]}}  # Click Select's kind
    assert run_job_operator(bpy.ops.imageforge.fill_selection, selection=json.dumps(mask)) == {"FINISHED"}
    [(job_type, parameters)] = job_server.submitted
    assert job_type == "inpaint-image" and parameters["selection"] == mask
    assert "mask" not in parameters or parameters["mask"] is None
    assert np.allclose(pixels_of("Photo"), filled, atol=BYTE)
    assert bpy.data.images["Photo"].packed_file is not None
    assert undo_steps(capfd)[-1] == "Fill Selection"


def test_fill_selection_refuses_float_images_and_a_missing_selection(job_server, tmp_path, reports):
    image = load_photo(tmp_path / "photo.exr", photo_pixels(8, 6))
    image.name = "Photo"
    image_object(image)
    assert bpy.ops.imageforge.fill_selection("EXEC_DEFAULT", selection='{"box": [1, 1, 4, 4]}') == {"CANCELLED"}
    assert reports[-1] == (
        "WARNING",
        "'Photo' is a float (HDR) image; Fill Selection works on 8-bit images. Save a PNG copy first.",
    )
    bpy.data.images.remove(image)
    image_object(load_photo(tmp_path / "photo.png", photo_pixels(8, 6)))
    assert bpy.ops.imageforge.fill_selection("EXEC_DEFAULT") == {"CANCELLED"}
    assert reports[-1][1] == "Select what to fill first: Click Select, or draw a box or lasso around it."
    assert not job_server.submitted


def test_refined_region_is_the_selection_plus_the_matte_inside_the_servers_crop():
    from imageforge.addon.scene.selection import refined_region, selection_bounds, selection_crop
    from imageforge.contract.selection_geometry import grow_pixels

    lasso = {"lasso": [[10, 10], [110, 10], [60, 70]]}
    assert grow_pixels(selection_bounds(lasso)) == 5 and grow_pixels((0, 0, 10, 10)) == 2  # the server's rule
    assert selection_crop(lasso, 32, 200, 100) == (0, 0, 147, 100)
    assert selection_crop({"box": [50.5, 40, 60, 50]}, 0, 200, 100) == (48, 38, 62, 52)
    matte = np.zeros((100, 200), dtype=np.float32)
    matte[40:45, 100:105] = 0.2  # beside the triangle: the band the server grew into
    matte[:, 160:] = 1.0  # beyond the crop (148 px with padding 32): never lands
    region = refined_region(lasso, 32, matte)
    assert region[40:45, 100:105].all() and not region[:, 147:].any()
    assert region[20, 60] and not region[80, 60]  # the selection lands even where the matte is zero


def test_a_job_the_server_cancelled_for_another_client_says_who_and_changes_nothing(job_server, photo, reports):
    """Not this operator's Esc: another client (a CLI on the shared server) cancelled the job. Before: the status
    bar read "Task cancelled" and nothing said why."""
    job_server.producers["remove-background"] = lambda parameters, directory: CancelledBy(
        "another client (cli, pid 4242) cancelled it"
    )
    assert run_job_operator(bpy.ops.imageforge.remove_background) == {"CANCELLED"}
    assert reports == [("WARNING", "The job was cancelled: another client (cli, pid 4242) cancelled it.")]
    assert np.allclose(pixels_of("Photo"), photo, atol=BYTE)


def test_bad_requests_are_warnings_and_submit_nothing(job_server, photo, reports):
    assert bpy.ops.imageforge.refine_selection("EXEC_DEFAULT", selection='{"box": [1, 1]}') == {"CANCELLED"}
    assert bpy.ops.imageforge.refine_selection("EXEC_DEFAULT", selection='{"box": [40, 40, 50, 50]}') == {"CANCELLED"}
    assert bpy.ops.imageforge.refine_selection("EXEC_DEFAULT") == {"CANCELLED"}  # nothing drawn
    assert bpy.ops.imageforge.upscale_image("EXEC_DEFAULT", image_name="No Such Image") == {"CANCELLED"}
    assert job_server.submitted == []
    assert [level for level, _ in reports] == ["WARNING"] * 4
    assert reports[-1] == ("WARNING", "There is no image named 'No Such Image'.")


def test_a_failed_job_changes_nothing(job_server, photo, capfd, reports):
    job_server.producers["remove-background"] = lambda parameters, directory: None
    before = undo_steps(capfd)
    assert run_job_operator(bpy.ops.imageforge.remove_background) == {"CANCELLED"}
    assert reports == [("ERROR", "The model ran out of memory.")]  # the job's failure: not the user's to fix
    assert np.allclose(pixels_of("Photo"), photo, atol=BYTE)
    assert bpy.data.images["Photo"].packed_file is None
    assert undo_steps(capfd) == before
    from imageforge.addon import blender_runtime

    assert blender_runtime.get_runtime().active_job is None


def test_a_job_the_server_failed_for_its_input_is_a_warning(job_server, photo, reports):
    def produce(parameters, directory):
        # The marker the server's handler leaves for an InputError (tests/server/test_handler.py checks it).
        failed = {"state": "failed", "error": "The file is not an image.", "failure": "input"}
        (directory / "job-state.json").write_text(json.dumps(failed), encoding="utf-8")
        return "The file is not an image."

    job_server.producers["remove-background"] = produce
    assert run_job_operator(bpy.ops.imageforge.remove_background) == {"CANCELLED"}
    assert reports == [("WARNING", "The file is not an image.")]
    assert np.allclose(pixels_of("Photo"), photo, atol=BYTE)


def test_an_input_blender_cannot_write_is_a_warning_and_leaves_no_temporary_folder(
    job_server, monkeypatch, capfd, reports
):
    image = bpy.data.images.new("Painted", 5, 3, alpha=True)  # generated: exported to a temporary folder
    image_object(image, "Painted Plane")
    from imageforge.addon.operators import base

    made, mkdtemp = [], tempfile.mkdtemp

    def blocked_mkdtemp(**options):
        folder = Path(mkdtemp(**options))
        (folder / "input.png").mkdir()  # a folder where the export goes: Blender's save() fails
        made.append(folder)
        return str(folder)

    monkeypatch.setattr(base.tempfile, "mkdtemp", blocked_mkdtemp)
    capfd.readouterr()
    assert bpy.ops.imageforge.upscale_image("EXEC_DEFAULT", scale="2") == {"CANCELLED"}  # no traceback
    output = capfd.readouterr()
    assert "Blender could not write the pixels of 'Painted'" in output.out + output.err
    assert "Traceback" not in output.out + output.err
    assert made and not made[0].exists()
    assert job_server.submitted == []
    assert [level for level, _ in reports] == ["WARNING"]


@pytest.mark.parametrize("generated", [False, True], ids=["file", "generated"])
def test_an_unreadable_result_leaves_the_image_as_it_was(job_server, photo, capfd, reports, generated):
    if generated:  # painted pixels that exist nowhere but in Blender: lost if the image is pointed at a file
        from imageforge.addon.scene.pixels import write_pixels

        bpy.data.images.remove(bpy.data.images["Photo"])
        image = bpy.data.images.new("Photo", 8, 6, alpha=True)
        write_pixels(image, photo)
        bpy.data.materials["Photo Plane"].node_tree.nodes["Image Texture"].image = image
    image = bpy.data.images["Photo"]
    before = (image.source, image.filepath, tuple(image.size))

    def produce(parameters, directory):
        (directory / "upscale.png").write_bytes(b"\x89PNG\r\n\x1a\n not a PNG after all")
        return {"upscale": "upscale.png"}

    job_server.producers["upscale-image"] = produce
    steps = undo_steps(capfd)
    assert run_job_operator(bpy.ops.imageforge.upscale_image, scale="2") == {"CANCELLED"}
    ((level, message),) = reports
    assert level == "ERROR" and message.startswith("Blender cannot read the result file upscale.png")
    image = bpy.data.images["Photo"]
    assert (image.source, image.filepath, tuple(image.size)) == before
    assert np.allclose(pixels_of("Photo"), photo, atol=BYTE)
    assert image.packed_file is None
    assert undo_steps(capfd) == steps


def test_an_image_removed_while_the_job_ran_is_a_warning_and_changes_nothing(job_server, photo, capfd, reports):
    def produce(parameters, directory):
        write_png_rgba(directory / "upscale.png", np.repeat(np.repeat(photo, 2, axis=0), 2, axis=1))
        bpy.data.images.remove(bpy.data.images["Photo"])  # the user deletes it meanwhile
        return {"upscale": "upscale.png"}

    job_server.producers["upscale-image"] = produce
    steps = undo_steps(capfd)
    assert run_job_operator(bpy.ops.imageforge.upscale_image, scale="2") == {"CANCELLED"}
    assert reports == [("WARNING", "The image 'Photo' was removed while the job ran; nothing was changed.")]
    assert "Photo" not in bpy.data.images and undo_steps(capfd) == steps


def test_a_landing_blender_cannot_write_leaves_the_pixels_as_they_were(job_server, photo, capfd):
    cutout = photo.copy()
    cutout[..., 3] = 0.25

    def produce(parameters, directory):
        write_png_gray16(directory / "alpha.png", cutout[..., 3])
        write_png_rgba(directory / "cutout.png", cutout)
        (directory / "landed-Photo.png").mkdir()  # where the refined pixels are written before packing
        return {"alpha": "alpha.png", "cutout": "cutout.png"}

    job_server.producers["refine-image-selection"] = produce
    steps = undo_steps(capfd)
    selection = json.dumps({"box": [2, 1, 6, 4]})
    assert run_job_operator(bpy.ops.imageforge.refine_selection, selection=selection) == {"CANCELLED"}
    assert np.allclose(pixels_of("Photo"), photo, atol=BYTE)
    assert not bpy.data.images["Photo"].is_dirty
    assert undo_steps(capfd) == steps
