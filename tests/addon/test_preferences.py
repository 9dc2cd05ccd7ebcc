"""Preferences under real Blender: defaults, the device list per platform, invalid stored values, round trip."""

from __future__ import annotations

import os
from pathlib import Path

import addon_utils
import bpy
import pytest


@pytest.fixture
def prefs(addon, monkeypatch):
    from imageforge.addon import blender_runtime, preferences

    monkeypatch.setattr(preferences, "_last_offered", [])
    server = blender_runtime.get_runtime().server
    saved = server.snapshot
    yield preferences.get_preferences()
    server.snapshot = saved


def report_devices(snapshot_devices):
    """A server's snapshot whose ONNX Runtime offers `snapshot_devices` (contract/health.py's layout)."""
    from imageforge.addon import blender_runtime
    from imageforge.contract.health import ModelsHealth

    models = ModelsHealth((), tuple(snapshot_devices), {}, None, False, 4, (), ())
    blender_runtime.get_runtime().server.snapshot = {"state": "READY", "resources": {"models": models.to_json()}}


@pytest.mark.parametrize(
    ("platform", "expected", "default"),
    [
        ("linux", ["auto", "cuda", "cpu"], "auto"),
        ("windows", ["auto", "directml", "cpu"], "auto"),
        ("macos", ["cpu", "coreml"], "cpu"),
        ("other", ["auto", "cpu"], "auto"),
    ],
)
def test_device_fallback_list_before_setup_per_platform(prefs, monkeypatch, platform, expected, default):
    from imageforge.addon import choices, preferences

    monkeypatch.setattr(choices, "current_platform", lambda: platform)
    assert [device.value for device in preferences.available_devices()] == expected
    assert prefs.device == default
    assert preferences.job_device(prefs).value == default


def test_before_setup_an_openvino_storage_root_offers_openvino(prefs, monkeypatch):
    from imageforge.addon import choices, preferences
    from imageforge.client.server_runtimes import record_runtime

    monkeypatch.setattr(choices, "current_platform", lambda: "linux")
    root = preferences.storage_root()
    root.mkdir(parents=True, exist_ok=True)
    record_runtime(root, "openvino")  # `imageforge setup --runtime openvino`, or Set Up Server with the preference
    try:
        assert [device.value for device in preferences.available_devices()] == ["auto", "openvino", "cpu"]
    finally:
        record_runtime(root, "default")
    assert [device.value for device in preferences.available_devices()] == ["auto", "cuda", "cpu"]


def test_device_list_comes_from_the_server_and_is_remembered(prefs, monkeypatch):
    from imageforge.addon import blender_runtime, choices, preferences

    monkeypatch.setattr(choices, "current_platform", lambda: "linux")
    prefs.device = "cuda"
    assert prefs.stored_device == "cuda"
    report_devices(["cpu", "bogus", "CPU"])  # a machine without CUDA; names that are no device are ignored
    assert [device.value for device in preferences.available_devices()] == ["auto", "cpu"]
    assert prefs.device == "auto"  # the stored choice is not offered here: fall back, no error
    assert prefs.stored_device == "cuda"  # ... but it is kept for when it is offered again
    assert preferences.job_device(prefs).value == "auto"
    report_devices(["cuda", "cpu"])
    assert prefs.device == "cuda"
    blender_runtime.get_runtime().server.snapshot = {"state": "STOPPED", "message": "Stopped"}
    assert [device.value for device in preferences.available_devices()] == ["auto", "cuda", "cpu"]


def test_macos_lists_cpu_first_even_when_the_server_lists_coreml_first(prefs, monkeypatch):
    from imageforge.addon import choices, preferences

    monkeypatch.setattr(choices, "current_platform", lambda: "macos")
    report_devices(["coreml", "cpu"])
    assert [device.value for device in preferences.available_devices()] == ["cpu", "coreml"]
    assert prefs.device == "cpu"


def test_malformed_snapshots_fall_back_to_the_platform_list(prefs, monkeypatch):
    from imageforge.addon import blender_runtime, choices, preferences

    monkeypatch.setattr(choices, "current_platform", lambda: "windows")
    report_devices(["cpu"])
    readable = blender_runtime.get_runtime().server.snapshot
    junk = {**readable, "resources": {"models": {**readable["resources"]["models"], "devices": ["cpu", 7]}}}
    newer = {**readable, "resources": {"models": {**readable["resources"]["models"], "version": 2}}}
    for snapshot in ({"resources": "nonsense"}, {"resources": {"models": {"devices": "cpu"}}}, None, [], junk, newer):
        blender_runtime.get_runtime().server.snapshot = snapshot
        assert [device.value for device in preferences.available_devices()] == ["auto", "directml", "cpu"]


def test_invalid_stored_values_fall_back_to_defaults(prefs, monkeypatch):
    from imageforge.addon import choices, preferences
    from imageforge.contract.catalog import Family

    monkeypatch.setattr(choices, "current_platform", lambda: "linux")
    prefs.stored_device = "mps"
    prefs.stored_max_input_size = 100_000
    prefs.stored_resolution_level = -3
    prefs.stored_model_upscale = "A_MODEL_THE_CATALOG_DROPPED"
    assert (prefs.device, prefs.max_input_size, prefs.resolution_level) == ("auto", 2048, 9)
    assert prefs.model_upscale == "REALESRGAN_GENERAL_X4V3"  # the catalog's default upscaler
    assert preferences.job_model(prefs, Family("upscale")) == "REALESRGAN_GENERAL_X4V3"
    assert preferences.job_max_input_size(prefs) == 2048


def test_sizes_snap_to_256_and_models_per_family(prefs):
    from imageforge.addon import preferences
    from imageforge.contract.catalog import Family

    prefs.max_input_size = 1000
    assert prefs.max_input_size == 1024
    prefs.max_input_size = 300
    assert prefs.max_input_size == 256
    prefs.max_input_size = 99999  # Blender clamps to the hard maximum first
    assert prefs.max_input_size == 8192
    assert prefs.model_background == "BEN2_BASE"
    assert prefs.model_geometry == "MOGE2_VITB_NORMAL"
    prefs.model_geometry = "MOGE2_VITS_NORMAL"
    assert preferences.job_model(prefs, Family("geometry")) == "MOGE2_VITS_NORMAL"
    with pytest.raises(TypeError):
        prefs.model_geometry = "BEN2_BASE"  # not a geometry model: Blender's enum refuses it


def test_storage_root_default_and_saved_location(prefs, tmp_path):
    from imageforge.addon import blender_runtime, preferences

    assert preferences.storage_root() == Path(os.environ["IMAGEFORGE_STORAGE_ROOT"])
    blender_runtime.get_runtime().storage_root(tmp_path / "moved")  # what BlendJob's migrate flow calls to save
    assert prefs.storage_root == str(tmp_path / "moved")
    assert blender_runtime.get_runtime().storage_root() == (tmp_path / "moved").resolve()
    prefs.storage_root = ""


def test_preferences_survive_save_and_reload(prefs):
    config = Path(os.environ["BLENDER_USER_RESOURCES"]) / "config" / "userpref.blend"
    prefs.max_input_size = 1536
    prefs.model_upscale = "REALESRGAN_X4PLUS"
    prefs.resolution_level = 4
    prefs.device = "cpu"
    try:
        assert bpy.ops.wm.save_userpref() == {"FINISHED"}
        prefs.max_input_size = 4096
        prefs.model_upscale = "REALESRGAN_GENERAL_X4V3"
        assert bpy.ops.wm.read_userpref() == {"FINISHED"}  # unregisters the add-on's classes
        addon_utils.enable("imageforge", default_set=True)
        from imageforge.addon import preferences

        reloaded = preferences.get_preferences()
        assert (reloaded.max_input_size, reloaded.model_upscale) == (1536, "REALESRGAN_X4PLUS")
        assert (reloaded.resolution_level, reloaded.device) == (4, "cpu")
    finally:
        config.unlink(missing_ok=True)


def test_every_family_of_the_catalog_has_its_two_preferences_with_the_names_users_saved(prefs):
    """The model preferences are generated from the catalog's families: names, labels and stored keys are those
    of the hand-written properties they replace, so saved preferences load unchanged."""
    properties = type(prefs).bl_rna.properties
    expected = {
        "background": ("Background Removal", "Stored Background Model"),
        "geometry": ("Depth and Geometry", "Stored Geometry Model"),
        "upscale": ("Upscaling", "Stored Upscale Model"),
        "multiview": ("Multi-View Depth", "Stored Multi-View Model"),
        "inpaint": ("Inpainting", "Stored Inpainting Model"),
    }
    for family, (label, stored_label) in expected.items():
        assert properties[f"model_{family}"].name == label
        assert properties[f"model_{family}"].description == f"Model used for {label.lower()} jobs"
        assert properties[f"stored_model_{family}"].name == stored_label
        assert properties[f"stored_model_{family}"].is_hidden
    prefs.model_inpaint = "LAMA_FP16"
    assert prefs.stored_model_inpaint == "LAMA_FP16"


def test_a_job_s_parameters_take_what_the_preferences_decide_and_what_the_tool_gives(prefs, monkeypatch):
    from imageforge.addon import choices, preferences
    from imageforge.contract.jobs import CutoutParams, InpaintImageParams, NormalMode

    monkeypatch.setattr(choices, "current_platform", lambda: "linux")
    prefs.device, prefs.max_input_size, prefs.resolution_level = "cpu", 1024, 5
    prefs.model_geometry, prefs.model_inpaint = "MOGE2_VITS_NORMAL", "LAMA_FP16"
    made = preferences.job_parameters(CutoutParams, input="/x.png", normal_mode=NormalMode.OBJECT, max_input_size=512)
    assert (made.device.value, made.max_input_size, made.resolution_level) == (
        "cpu",
        512,
        5,
    )  # given beats the preference
    assert (made.geometry_model, made.background_model, made.inpaint_model) == (
        "MOGE2_VITS_NORMAL",
        "BEN2_BASE",
        "LAMA_FP16",
    )
    assert made.normal_mode is NormalMode.OBJECT and made.input == "/x.png"
    prefs.max_input_size = 2048
    inpaint = preferences.job_parameters(InpaintImageParams, input="/x.png")
    assert (inpaint.max_input_size, inpaint.model) == (1024, "LAMA_FP16")  # LaMa's own 1024 default, not the preference
