"""What the sidebar panels draw for every server state and every tool input, recorded from their real draw()."""

from __future__ import annotations

from types import SimpleNamespace

import bpy
import pytest
import scenes
from recorded_health import polled, server_panel
from recording import draw

BUSY = polled("busy")  # an upscale job at 40 %, the upscaler loaded, downloads from the hub
READY = polled("ready")  # idle, BEN2 loaded on CPU although CUDA was asked for, downloads switched to the mirror


@pytest.mark.parametrize(
    ("snapshot", "installed", "headline", "operators"),
    [
        ({"state": "UNAVAILABLE"}, False, "Server not installed", ["imageforge.setup_server"]),
        ({"state": "STOPPED"}, False, "Server not installed", ["imageforge.setup_server"]),  # before the first poll
        ({"state": "STOPPED"}, True, "Stopped", ["imageforge.start_server"]),
        ({"state": "STARTING", "message": "Waiting for the previous server"}, True, "Starting…", []),
        (
            {"state": "ERROR", "message": "The server exited (code -9)"},
            True,
            "Server error",
            ["imageforge.start_server", "imageforge.open_server_log"],
        ),
    ],
)
def test_server_panel_states_without_a_running_server(server, monkeypatch, snapshot, installed, headline, operators):
    monkeypatch.setattr(server, "environment_ready", lambda root=None: installed)
    layout = server_panel(server, snapshot)
    assert layout.texts()[0] == headline
    assert layout.operator_ids() == operators
    assert "progress" not in [item.kind for item in layout.items]
    if snapshot["state"] == "ERROR":
        assert layout.texts()[1] == "The server exited (code -9)"
        status = [item for item in layout.items if item.kind == "label"][:2]  # headline and message
        assert all(item.alert for item in status)
    if snapshot["state"] == "STARTING":
        assert layout.texts()[1] == "Waiting for the previous server"


def test_server_panel_running_idle_with_models_and_mirror_note(server):
    layout = server_panel(server, READY)
    assert layout.texts()[0] == "Running"
    assert layout.operator_ids() == [
        "imageforge.restart_server",
        "imageforge.stop_server",
        "imageforge.unload_models",
    ]
    assert "Background: BEN2_BASE (cpu)" in layout.texts()
    assert layout.find("imageforge.unload_models").enabled
    assert layout.texts()[-1] == "Model downloads use the mirror"


def test_server_panel_busy_shows_the_jobs_progress_and_disables_unload(server):
    layout = server_panel(server, BUSY)
    assert layout.texts()[0] == "Running (Busy)"
    assert layout.operator_ids()[:2] == ["imageforge.restart_server", "imageforge.stop_server"]
    progress = next(item for item in layout.items if item.kind == "progress")
    assert (progress.options["factor"], progress.text) == (0.4, "Upscaling tile 3/8")
    assert layout.find("imageforge.cancel_job")
    assert "Upscale: REALESRGAN_X4PLUS (cpu)" in layout.texts()
    assert not layout.find("imageforge.unload_models").enabled
    assert "Model downloads use the mirror" not in layout.texts()  # a mirror is configured but not in use


@pytest.mark.parametrize(("polled_snapshot", "note"), [(READY, True), (BUSY, False)], ids=["mirror", "hub"])
def test_mirror_note_follows_the_download_sources_snapshot(server, polled_snapshot, note):
    from imageforge.addon.health_snapshot import uses_mirror

    snapshot = {"state": "STOPPED", "resources": {"downloads": polled_snapshot["resources"]["downloads"]}}
    assert uses_mirror(snapshot) is note
    assert uses_mirror({"resources": {"models": {"source": "mirror", "mirror": True}}}) is False  # not its resource
    assert ("Model downloads use the mirror" in server_panel(server, snapshot).texts()) is note


def test_loaded_models_show_the_device_that_really_runs_them(server):
    from imageforge.addon.health_snapshot import loaded_models

    loaded = [(model.family, model.model, model.device) for model in loaded_models(READY)]
    assert loaded == [("background", "BEN2_BASE", "cpu")]  # cuda asked, cpu ran
    assert loaded_models({"resources": {"models": {"sessions": [{"key": "BEN2_BASE"}]}}}) == []


def test_model_sizes_read_like_job_file_sizes(server, tmp_path):
    from imageforge.addon.choices import catalog
    from imageforge.addon.panels.model_rows import model_rows
    from imageforge.client.job_usage import format_bytes

    rows = model_rows(catalog(), tmp_path)
    sizes = {entry.key: entry.declared_size for entry in catalog().models}
    expected = {key: "size unknown" if size is None else format_bytes(size) for key, size in sizes.items()}
    assert rows and all(row.size == expected[row.key] for row in rows)


def test_unload_is_disabled_while_this_blender_runs_a_task(server):
    server.active_job = SimpleNamespace(controller=None)
    server.progress, server.message = 0.25, "Preparing Server"
    try:
        layout = server_panel(server, READY)
    finally:
        server.active_job = None
    assert not layout.find("imageforge.unload_models").enabled
    progress = next(item for item in layout.items if item.kind == "progress")
    assert (progress.options["factor"], progress.text) == (0.25, "Preparing Server")


def test_models_panel_lists_the_catalog_with_sizes_defaults_and_download(server, tmp_path):
    from imageforge.addon import preferences
    from imageforge.addon.panels.models import ModelsPanel

    prefs = preferences.get_preferences()
    prefs.storage_root = str(tmp_path)
    model = tmp_path / "models" / "tinier-upscale-models" / "realesrgan-x4plus.onnx"
    model.parent.mkdir(parents=True)
    with model.open("wb") as stream:
        stream.truncate(67051618)  # the declared size: ready as far as a redraw can tell
    try:
        server.server.snapshot = {"state": "STOPPED"}
        layout = draw(ModelsPanel, bpy.context)
    finally:
        prefs.storage_root = ""
    labels = layout.texts()
    assert "BEN2 Base (default)" in labels
    assert "209.0 MB · Apache-2.0" in labels  # 219,xxx,xxx bytes, in the binary units of every size shown
    downloads = [item.properties.model for item in layout.operators() if item.idname == "imageforge.download_model"]
    assert "BEN2_BASE" in downloads and "MOGE2_VITL_NORMAL" in downloads
    assert "REALESRGAN_X4PLUS" not in downloads  # ready on disk
    assert "Ready" in labels


def image_object(name: str, width: int, height: int) -> bpy.types.Object:
    """A plane showing a new `width` × `height` image named `name` (scenes.image_object), made active."""
    return scenes.image_object(bpy.data.images.new(name, width, height), name)


def test_tools_panel_greys_tools_out_without_an_image(server):
    from imageforge.addon.operators import availability
    from imageforge.addon.panels.tools import ToolsPanel

    server.server.snapshot = {"state": "READY"}
    bpy.context.view_layer.objects.active = None
    layout = draw(ToolsPanel, bpy.context)
    assert layout.items[0].kind == "label" and layout.items[0].icon == "ERROR"
    tools = layout.operators()
    # 12 image tools, Upscale Textures 2× and 4× (no object selected) and the video tool
    assert len(tools) >= 15 and not any(item.enabled for item in tools)
    assert availability.tool_reason(bpy.context) == availability.NO_IMAGE
    assert not bpy.ops.imageforge.remove_background.poll()


def test_tools_panel_with_an_image_texture_shows_upscale_sizes(server):
    from imageforge.addon import preferences
    from imageforge.addon.panels.tools import ToolsPanel

    server.server.snapshot = {"state": "READY"}
    image_object("Panel Photo", 3000, 1000).select_set(True)  # selected: its texture can be batch-upscaled
    preferences.get_preferences().max_input_size = 2048
    layout = draw(ToolsPanel, bpy.context)
    assert layout.items[0].text == "Panel Photo · 3000 × 1000"
    video_tool = "imageforge.camera_path_from_video"  # no video chosen: its own reason (test_camera_path.py)
    assert all(item.enabled for item in layout.operators() if item.idname != video_tool)
    assert layout.find("imageforge.upscale_image", scale="2").text == "Upscale 2× → 4096 × 1366"
    assert layout.find("imageforge.upscale_image", scale="4").text == "Upscale 4× → 8192 × 2732"
    assert layout.find("imageforge.draw_selection", action="CUTOUT", shape="LASSO", displace=True)
    assert layout.find("imageforge.draw_selection", action="PARALLAX", shape="BOX")
    assert bpy.ops.imageforge.remove_background.poll()


def test_tools_are_unavailable_until_the_server_is_set_up(server):
    from imageforge.addon.operators import availability
    from imageforge.addon.panels.tools import ToolsPanel

    image_object("Unset Photo", 8, 8)
    server.server.snapshot = {"state": "UNAVAILABLE"}
    layout = draw(ToolsPanel, bpy.context)
    assert not any(item.enabled for item in layout.operators())
    assert layout.texts()[-1] == availability.server_reason()
    assert "Set up the server" in layout.texts()[-1]
    assert not bpy.ops.imageforge.depth_plane.poll()


def test_image_editor_and_empty_images_are_found(server):
    from imageforge.addon.scene.active_image import ImageOrigin, find_active_image

    image = bpy.data.images.new("Editor Photo", 4, 4)
    found = find_active_image(SimpleNamespace(space_data=SimpleNamespace(type="IMAGE_EDITOR", image=image)))
    assert (found.image, found.origin) == (image, ImageOrigin.EDITOR)
    empty = bpy.data.objects.new("Image Empty", None)
    empty.empty_display_type = "IMAGE"
    empty.data = image
    found = find_active_image(SimpleNamespace(space_data=None, active_object=empty))
    assert (found.image, found.origin) == (image, ImageOrigin.EMPTY)
