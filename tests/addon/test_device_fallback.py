"""A job that ran on CPU instead of the device asked for ends with a WARNING report, and the Server panel shows
why until the server restarts. Real Blender; the job's files (its provenance.json included) written as the
server writes them."""

from __future__ import annotations

import json

import bpy
import pytest
from job_server import run_job_operator
from result_files import write_png_rgba
from scenes import image_object, load_photo, photo_pixels

WARNING = "NVIDIA CUDA failed while running BEN2 Base (out of memory); running it on CPU until the server restarts."


@pytest.fixture
def reports(monkeypatch):
    """Every report the ImageForge job operators make, in order, as (level, message); Blender still gets them."""
    from imageforge.addon.operators.base import ImageForgeJobOperator

    made: list[tuple[str, str]] = []
    original = ImageForgeJobOperator.report_outcome

    def report_outcome(self, level, message):
        made.append((level, message))
        original(self, level, message)

    monkeypatch.setattr(ImageForgeJobOperator, "report_outcome", report_outcome)
    return made


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


def models_resource(device_warnings: list[str]) -> dict:
    """The "models" resource as ModelManager.snapshot() writes it after a fallback (model_manager.py)."""
    return {
        "loaded": [{"family": "background", "model": "BEN2_BASE", "requested_device": "cuda", "device": "cpu",
                    "provider": "CPUExecutionProvider", "providers": ["CPUExecutionProvider"], "load_seconds": 1.0,
                    "runs": 1, "fallback": None}],
        "devices": ["cuda", "cpu"],
        "unavailable": {},
        "onnxruntime": {"version": "1.23.2", "variant": "onnxruntime-gpu", "providers": ["CUDAExecutionProvider"]},
        "detecting": False,
        "threads": 6,
        "cpu_only": ["BEN2_BASE"],
        "device_warnings": device_warnings,
    }  # fmt: skip


@pytest.fixture
def server(addon, monkeypatch):
    from imageforge.addon import blender_runtime

    active = blender_runtime.get_runtime()
    monkeypatch.setattr(active, "environment_ready", lambda root=None: True)
    saved = active.server.snapshot
    yield active
    active.server.snapshot = saved


def drawn_server_panel(server, snapshot):
    from recording import draw

    from imageforge.addon.panels.server import ServerPanel

    server.server.snapshot = snapshot
    return draw(ServerPanel, bpy.context)


@pytest.mark.parametrize("state", ["READY", "BUSY"])
def test_the_server_panel_shows_why_models_run_on_cpu_while_the_server_runs(server, state):
    snapshot = {"state": state, "message": state.title(), "resources": {"models": models_resource([WARNING])}}
    layout = drawn_server_panel(server, snapshot)
    warning = [item for item in layout.items if item.kind == "label" and item.alert and item.text != state.title()]
    assert " ".join(item.text for item in warning) == WARNING  # wrapped to the sidebar's width, nothing lost
    assert warning[0].icon == "ERROR" and len(warning) > 1 and all(len(item.text) <= 48 for item in warning)

    quiet = drawn_server_panel(server, {"state": state, "resources": {"models": models_resource([])}})
    assert not any(item.alert for item in quiet.items if item.kind == "label")
    # A new server start (Stopped, then Starting) reports no warnings: the line is gone until a job falls back.
    for fresh in ({"state": "STOPPED"}, {"state": "STARTING", "message": "Starting"}):
        assert WARNING.split()[0] not in " ".join(drawn_server_panel(server, fresh).texts())
