"""Enabling and disabling the add-on under real Blender leaves nothing behind."""

from __future__ import annotations

import addon_utils
import bpy


def blender_state() -> dict:
    return {
        "operators": sorted(name for name in dir(bpy.ops.imageforge)),
        "preferences": "imageforge" in bpy.context.preferences.addons,
        "classes": hasattr(bpy.types, "ImageForgePreferences"),
        "status_bar": [
            function.__module__
            for function in getattr(bpy.types.STATUSBAR_HT_header.draw, "_draw_funcs", ()) or ()
            if function.__module__.startswith(("blendjob", "imageforge"))
        ],
    }


def test_register_and_unregister_twice_leave_nothing_behind():
    before = blender_state()
    assert before["operators"] == []
    for _ in range(2):
        addon_utils.enable("imageforge", default_set=True)
        enabled = blender_state()
        assert enabled["preferences"]
        assert {"start_server", "stop_server", "restart_server", "setup_server"} <= set(enabled["operators"])
        from imageforge import runtime

        poll = runtime.get_runtime()._poll_server
        assert bpy.app.timers.is_registered(poll)
        assert enabled["status_bar"] == ["blendjob.runtime"]
        addon_utils.disable("imageforge", default_set=True)
        assert not bpy.app.timers.is_registered(poll)
        assert blender_state() == before


def test_preferences_defaults_and_storage_root(addon, tmp_path):
    from imageforge import preferences

    prefs = preferences.get_preferences()
    assert prefs.device == "auto"
    assert prefs.max_input_size == 2048
    assert preferences.storage_root() == __import__("pathlib").Path(__import__("os").environ["IMAGEFORGE_STORAGE_ROOT"])
    prefs.storage_root = str(tmp_path)
    assert preferences.storage_root() == tmp_path.resolve()
    assert addon.runtime.get_runtime().storage_root() == tmp_path.resolve()
