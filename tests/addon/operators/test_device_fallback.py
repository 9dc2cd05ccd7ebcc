"""A job that ran on CPU instead of the device asked for ends with a WARNING report, and the Server panel shows
why until the server restarts. Real Blender; the job's files (its provenance.json included) written as the
server writes them."""

from __future__ import annotations

import json

import bpy
import pytest
from job_server import run_job_operator
from recorded_health import polled, server_panel
from result_files import write_png_rgba
from scenes import image_object, load_photo, photo_pixels

WARNING = "NVIDIA CUDA failed while running BEN2 Base (out of memory); running it on CPU until the server restarts."


def test_a_fallback_ends_the_operator_with_a_warning_report(job_server, tmp_path, reports):
    pixels = photo_pixels(8, 6)
    image_object(load_photo(tmp_path / "photo.png", pixels))

    def produce(parameters, directory):
        write_png_rgba(directory / "foreground.png", pixels)
        provenance = {
            "models": [{"model": "BEN2_BASE", "label": "BEN2 Base", "requested_device": "cuda", "device": "cpu",
                        "provider": "CPUExecutionProvider", "providers": ["CPUExecutionProvider"], "runs": 1,
                        "model_seconds": 0.5}],
            "warnings": [WARNING],
        }  # fmt: skip
        (directory / "provenance.json").write_text(json.dumps(provenance), encoding="utf-8")
        return {"foreground": "foreground.png", "provenance": "provenance.json"}

    job_server.producers["remove-background"] = produce
    assert run_job_operator(bpy.ops.imageforge.remove_background) == {"FINISHED"}
    assert reports[-1] == ("WARNING", f"Ran on CPU: {WARNING}")
    assert [level for level, _ in reports] == ["INFO", "WARNING"]  # the result landed, then why it was slow
    from imageforge.addon import blender_runtime

    assert blender_runtime.get_runtime().message.endswith(f"(Ran on CPU: {WARNING})")  # the status bar's last word


@pytest.mark.parametrize("state", ["READY", "BUSY"])
def test_the_server_panel_shows_why_models_run_on_cpu_while_the_server_runs(server, state):
    warned = polled("ready")  # the server's snapshot after BEN2 ran on CPU where CUDA was asked for
    (sentence,) = warned["resources"]["models"]["device_warnings"]
    layout = server_panel(server, {**warned, "state": state, "message": state.title()})
    warning = [item for item in layout.items if item.kind == "label" and item.alert and item.text != state.title()]
    assert " ".join(item.text for item in warning) == sentence  # wrapped to the sidebar's width, nothing lost
    assert warning[0].icon == "ERROR" and len(warning) > 1 and all(len(item.text) <= 48 for item in warning)

    quiet = polled("busy")  # a server whose models all ran where they were asked to
    assert quiet["resources"]["models"]["device_warnings"] == []
    assert not any(item.alert for item in server_panel(server, {**quiet, "state": state}).items if item.kind == "label")
    # A new server start (Stopped, then Starting) reports no warnings: the line is gone until a job falls back.
    for fresh in ({"state": "STOPPED"}, {"state": "STARTING", "message": "Starting"}):
        assert sentence.split()[0] not in " ".join(server_panel(server, fresh).texts())
