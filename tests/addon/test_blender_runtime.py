"""The add-on's runtime: post-setup hook, bundled uv seeding, and the pinned timers."""

from __future__ import annotations

import importlib.machinery
import os
import sys
import types

import bpy
from blendjob.maintenance import SetupController


def test_runtime_uses_the_post_setup_hook_and_pinned_timers(addon):
    from imageforge.addon import blender_runtime

    rt = blender_runtime.get_runtime()
    assert rt.post_setup is blender_runtime.download_default_models_after_setup
    assert rt.namespace == "imageforge"
    assert bpy.app.timers.is_registered(rt._poll_server)
    assert rt._poll_server is rt._poll_server  # pinned: the same object on every access


def test_post_setup_hook_is_the_clients_model_download(addon):
    from imageforge.addon import blender_runtime
    from imageforge.client import model_setup

    assert getattr(model_setup, blender_runtime.DOWNLOAD_FUNCTION) is model_setup.download_required_models


def test_post_setup_hook_calls_the_client_download_function_when_it_exists(addon, monkeypatch):
    from imageforge.addon import blender_runtime

    calls = []
    module = types.ModuleType(blender_runtime.DOWNLOADS_MODULE)
    module.__spec__ = importlib.machinery.ModuleSpec(blender_runtime.DOWNLOADS_MODULE, None)
    monkeypatch.setitem(sys.modules, blender_runtime.DOWNLOADS_MODULE, module)
    blender_runtime.download_default_models_after_setup(object())  # no download function: nothing happens
    setattr(module, blender_runtime.DOWNLOAD_FUNCTION, calls.append)
    controller = object()
    blender_runtime.download_default_models_after_setup(controller)
    assert calls == [controller]


def test_setup_seeds_the_bundled_uv_only_when_installing(addon, monkeypatch, tmp_path):
    from imageforge.addon import blender_runtime

    tools = tmp_path / "extension" / "tools"
    tools.mkdir(parents=True)
    (tools / "uv").write_bytes(b"#!/bin/sh\necho uv 0.13.9\n")
    monkeypatch.setattr(blender_runtime, "BUNDLED_TOOLS", tools)
    installed = []
    monkeypatch.setattr(SetupController, "install", lambda self: installed.append(self.target))
    target = tmp_path / "server"
    controller = blender_runtime.get_runtime().setup_controller(target)
    assert not (target / "tools").exists()  # creating the controller (a dialog could still be cancelled)
    target.mkdir()
    controller.install()
    seeded = target / "tools" / "uv"
    assert installed == [target.resolve()]
    assert seeded.read_bytes() == (tools / "uv").read_bytes()
    assert os.access(seeded, os.X_OK)
    assert blender_runtime.seed_bundled_uv(target, tools) is None  # already there: left alone
