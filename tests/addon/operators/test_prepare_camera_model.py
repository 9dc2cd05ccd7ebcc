"""Prepare DA3 camera model… and Prepare Click Select model…: the dialogs, the convert-model job they submit, Esc,
a failure, and what changes after."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import bpy
from job_server import run_job_operator
from recording import draw
from result_files import write_json
from scenes import undo_steps

from imageforge.contract.catalog import Family, ModelFile, local_overlay_path
from imageforge.contract.conversions import load_conversions

CONVERTED_BYTES = 4096


def convert_like_the_server(storage: Path):
    """A producer doing what convert-model leaves behind: the model file and its entry in the local overlay."""

    def produce(parameters, directory: Path) -> dict[str, str]:
        conversion = load_conversions().get(parameters["model"])
        for name in conversion.result.files:
            model = storage / "models" / conversion.result.directory / name
            model.parent.mkdir(parents=True, exist_ok=True)
            model.write_bytes(b"\0" * CONVERTED_BYTES)
        overlay = local_overlay_path(storage)
        record = conversion.catalog_record(
            [ModelFile(name, CONVERTED_BYTES, "e" * 64) for name in conversion.result.files]
        )
        write_json(overlay, {"models": [record]})
        return {"conversion": write_json(directory / "conversion.json", {"model": conversion.result.key}).name}

    return produce


def test_the_converted_model_becomes_the_camera_default_and_the_panel_shows_it(job_server, tmp_path, capfd, reports):
    from imageforge.addon import preferences
    from imageforge.addon.panels.models import ModelsPanel

    prefs = preferences.get_preferences()
    storage = tmp_path / "storage"
    prefs.storage_root = str(storage)
    try:
        assert preferences.job_model(prefs, Family("multiview")) == "DA3_SMALL"  # the built-in, depth-only export
        job_server.producers["convert-model"] = convert_like_the_server(storage)
        before = undo_steps(capfd)
        assert run_job_operator(bpy.ops.imageforge.prepare_camera_model, model="DA3_SMALL") == {"FINISHED"}
        assert job_server.submitted == [("convert-model", {"model": "DA3_SMALL"})]
        assert reports == [
            ("INFO", "Depth Anything 3 Small (cameras, converted) is ready; Camera Path from Video uses it")
        ]
        assert undo_steps(capfd) == before  # files changed, not Blender data
        # Camera Path from Video now sends the converted model; the Models panel lists it, ready, as default.
        assert preferences.job_model(prefs, Family("multiview")) == "DA3_SMALL_CAMERAS"
        layout = draw(ModelsPanel, bpy.context)
    finally:
        prefs.storage_root = ""
    labels = layout.texts()
    assert "Depth Anything 3 Small (cameras, converted) (default)" in labels and "Ready" in labels
    assert "Depth Anything 3 Small (depth only)" in labels  # still offered, no longer the default
    assert "imageforge.prepare_camera_model" in layout.operator_ids()
    assert preferences.job_model(prefs, Family("multiview")) == "DA3_SMALL"  # another storage root: no overlay


def test_the_models_panel_offers_the_conversion_before_any_exists(job_server):
    from imageforge.addon.panels.models import ModelsPanel

    layout = draw(ModelsPanel, bpy.context)
    (button,) = [item for item in layout.operators() if item.idname == "imageforge.prepare_camera_model"]
    assert button.text == "Prepare DA3 camera model…" and button.enabled


def test_the_dialog_names_the_download_the_time_and_esc(addon):
    from imageforge.addon.operators.models import conversion_dialog

    conversions = load_conversions()
    small = " ".join(conversion_dialog(conversions, conversions.get("DA3_SMALL"), "Camera Path from Video"))
    assert "about 137 MB" in small and "about 0.9 GB" in small and "about 8 minutes" in small
    assert "Esc cancels" in small and "Apache-2.0" in small and "depth-anything/DA3-SMALL" in small
    base = " ".join(conversion_dialog(conversions, conversions.get("DA3_BASE"), "Camera Path from Video"))
    assert "about 541 MB" in base and "about 20 minutes" in base
    items = bpy.ops.imageforge.prepare_camera_model.get_rna_type().properties["model"].enum_items.keys()
    # Large and Giant (CC BY-NC) are never offered; SAM 2.1's conversions are no camera model.
    assert list(items) == ["DA3_SMALL", "DA3_BASE"]
    assert {item.key for item in conversions.conversions} > set(items)


def test_a_failed_conversion_is_one_error_report_and_changes_nothing(job_server, reports):
    from imageforge.addon import preferences

    job_server.producers["convert-model"] = lambda parameters, directory: None  # the job fails
    assert run_job_operator(bpy.ops.imageforge.prepare_camera_model, model="DA3_BASE") == {"CANCELLED"}
    assert reports == [("ERROR", "The model ran out of memory.")]
    assert preferences.job_model(preferences.get_preferences(), Family("multiview")) == "DA3_SMALL"


def test_esc_cancels_the_conversion_on_the_server(job_server):
    from imageforge.addon import blender_runtime

    job_server.producers["convert-model"] = lambda parameters, directory: None
    assert bpy.ops.imageforge.prepare_camera_model("EXEC_DEFAULT", model="DA3_SMALL") == {"RUNNING_MODAL"}
    job = blender_runtime.get_runtime().active_job
    job.start_thread.join(timeout=5.0)
    operator = job.operator
    assert operator.modal(bpy.context, SimpleNamespace(type="ESC")) == {"PASS_THROUGH"}
    outcome = {"RUNNING_MODAL"}
    for _ in range(20):
        outcome = operator.modal(bpy.context, SimpleNamespace(type="TIMER"))
        if outcome != {"RUNNING_MODAL"}:
            break
    assert outcome == {"CANCELLED"}
    (submitted,) = job_server.results.values()
    assert submitted["cancelled"] is True


def test_the_click_select_model_is_prepared_from_its_own_button(job_server, tmp_path, reports):
    """SAM 2.1 has its own button: its dialog offers Tiny and Small, and the result becomes the segment default."""
    from imageforge.addon import preferences
    from imageforge.addon.operators.models import conversion_dialog
    from imageforge.addon.panels.models import ModelsPanel

    items = bpy.ops.imageforge.prepare_click_select_model.get_rna_type().properties["model"].enum_items.keys()
    assert list(items) == ["SAM2_TINY", "SAM2_SMALL"]
    conversions = load_conversions()
    tiny = " ".join(conversion_dialog(conversions, conversions.get("SAM2_TINY"), "Click Select"))
    assert "for Click Select" in tiny and "about 156 MB" in tiny and "facebook/sam2.1-hiera-tiny" in tiny
    (button,) = [
        item
        for item in draw(ModelsPanel, bpy.context).operators()
        if item.idname == "imageforge.prepare_click_select_model"
    ]
    assert button.text == "Prepare Click Select model…" and button.enabled

    prefs = preferences.get_preferences()
    storage = tmp_path / "storage"
    prefs.storage_root = str(storage)
    try:
        job_server.producers["convert-model"] = convert_like_the_server(storage)
        assert run_job_operator(bpy.ops.imageforge.prepare_click_select_model, model="SAM2_TINY") == {"FINISHED"}
        assert job_server.submitted == [("convert-model", {"model": "SAM2_TINY"})]
        assert reports == [("INFO", "SAM 2.1 Hiera Tiny (click select, converted) is ready; Click Select uses it")]
        assert preferences.job_model(prefs, Family("segment")) == "SAM2_TINY_ONNX"
    finally:
        prefs.storage_root = ""
