"""Enabling and disabling the add-on under real Blender leaves nothing behind."""

from __future__ import annotations

import addon_utils
import bpy

MENUS = ("IMAGE_MT_image", "VIEW3D_MT_object_context_menu", "SEQUENCER_MT_context_menu", "STATUSBAR_HT_header")


def blender_state() -> dict:
    return {
        "operators": sorted(name for name in dir(bpy.ops.imageforge)),
        "preferences": "imageforge" in bpy.context.preferences.addons,
        "classes": sorted(name for name in dir(bpy.types) if name.startswith(("IMAGEFORGE_", "ImageForge"))),
        "menus": {
            menu: [
                function.__module__
                for function in getattr(getattr(bpy.types, menu).draw, "_draw_funcs", ()) or ()
                if function.__module__.startswith(("blendjob", "imageforge"))
            ]
            for menu in MENUS
        },
    }


def test_register_and_unregister_twice_leave_nothing_behind():
    before = blender_state()
    assert before["operators"] == []
    for _ in range(2):
        addon_utils.enable("imageforge", default_set=True)
        enabled = blender_state()
        assert enabled["preferences"]
        assert "imageforge_video_path" in bpy.types.Scene.bl_rna.properties  # Camera Path from Video's input
        assert {"start_server", "stop_server", "restart_server", "setup_server"} <= set(enabled["operators"])
        assert {"remove_background", "upscale_image", "refine_selection", "cutout", "depth_plane"} <= set(
            enabled["operators"]
        )
        assert {"IMAGEFORGE_PT_server", "IMAGEFORGE_PT_server_image", "IMAGEFORGE_PT_tools_image"} <= set(
            enabled["classes"]
        )
        assert enabled["menus"] == {
            "IMAGE_MT_image": ["imageforge.addon.menus"],
            "VIEW3D_MT_object_context_menu": ["imageforge.addon.menus"],
            "SEQUENCER_MT_context_menu": ["imageforge.addon.menus"],
            "STATUSBAR_HT_header": ["blendjob.runtime"],
        }
        from imageforge.addon import blender_runtime
        from imageforge.addon.operators import base

        active = blender_runtime.get_runtime()
        assert base.ImageForgeJobOperator.job_runtime is active
        poll, redraw = active._poll_server, active._redraw_status_bars
        assert bpy.app.timers.is_registered(poll)
        bpy.app.timers.register(redraw)  # what a job's progress update does; it must go on unregister too
        addon_utils.disable("imageforge", default_set=True)
        assert not bpy.app.timers.is_registered(poll)
        assert not bpy.app.timers.is_registered(redraw)
        assert base.ImageForgeJobOperator.job_runtime is None
        assert "imageforge_video_path" not in bpy.types.Scene.bl_rna.properties
        assert blender_state() == before


def test_job_operators_show_in_search_and_poll_fast():
    from imageforge.addon.operators import CLASSES
    from imageforge.addon.operators.base import JOB_POLL_INTERVAL, ImageForgeJobOperator

    job_operators = [cls for cls in CLASSES if issubclass(cls, ImageForgeJobOperator)]
    assert len(job_operators) >= 13  # today's 13; a new tool module adds its own
    for cls in job_operators:
        assert "INTERNAL" not in cls.bl_options and "REGISTER" in cls.bl_options, cls.bl_idname
        assert cls.poll_interval == JOB_POLL_INTERVAL < 0.25


def test_preferences_defaults_and_storage_root(addon, tmp_path):
    from imageforge.addon import blender_runtime, preferences

    assert preferences.ImageForgePreferences.bl_idname == addon.__name__ == "imageforge"  # the root package
    prefs = preferences.get_preferences()
    assert prefs.device == "auto"
    assert prefs.max_input_size == 2048
    assert preferences.storage_root() == __import__("pathlib").Path(__import__("os").environ["IMAGEFORGE_STORAGE_ROOT"])
    prefs.storage_root = str(tmp_path)
    assert preferences.storage_root() == tmp_path.resolve()
    assert blender_runtime.get_runtime().storage_root() == tmp_path.resolve()
