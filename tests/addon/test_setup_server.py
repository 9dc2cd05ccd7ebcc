"""Set Up Server runs ImageForge's installer (client/setup_process.py) with the Package Index and Wheelhouse
preferences, and the Server panel says where the packages came from. The slow test runs the real command with
this Blender's Python against a loopback index over the real Linux wheelhouse tests/sync exported."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

WHEELHOUSE = Path(__file__).resolve().parents[2] / ".cache" / "server-wheelhouse"


def preferences():
    import bpy

    return bpy.context.preferences.addons["imageforge"].preferences


def test_set_up_server_runs_our_installer_with_the_package_index_preference(addon, tmp_path):
    from imageforge.addon import blender_runtime

    runtime = blender_runtime.get_runtime()
    prefs = preferences()
    command = runtime.install_command("official", root=tmp_path)
    assert Path(command[1]).name == "setup_process.py" and "--index" not in command  # Automatic: the default order
    assert runtime.install_command("mirror", root=tmp_path)[-2:] == ["--index", "tsinghua"]  # BlendJob's Use Mirror
    prefs.package_index = "ALIYUN"
    assert runtime.install_command("official", root=tmp_path)[-2:] == ["--index", "aliyun"]
    prefs.package_index = "CUSTOM"
    prefs.package_index_url = " https://pypi.studio.example/simple "
    prefs.wheelhouse = str(tmp_path / "wheels")
    command = runtime.install_command("official", root=tmp_path)
    assert command[-4:] == ["--index", "https://pypi.studio.example/simple", "--wheelhouse", str(tmp_path / "wheels")]
    prefs.package_index, prefs.package_index_url, prefs.wheelhouse = "AUTOMATIC", "", ""
    assert runtime.install_command("official", root=tmp_path)[-2:] == ["--runtime", "default"]
    prefs.server_runtime = "OPENVINO"  # this machine is x86-64 Linux: the preference is offered
    assert runtime.install_command("mirror", root=tmp_path)[-4:] == ["--runtime", "openvino", "--index", "tsinghua"]
    prefs.server_runtime = "DEFAULT"


def test_the_server_panel_line_names_where_the_packages_came_from():
    from imageforge.addon.panels.server_view import package_source_line

    assert package_source_line("https://pypi.tuna.tsinghua.edu.cn/simple") == "Packages from pypi.tuna.tsinghua.edu.cn"
    assert package_source_line("wheelhouse /mnt/share/wheels") == "Packages from a wheelhouse"
    assert package_source_line("the local package cache") == "Packages from the local package cache"
    assert package_source_line(None) is None


@pytest.mark.slow
def test_set_up_server_installs_from_the_chosen_index_with_every_other_index_dead(addon, tmp_path):
    from tests.kit.package_index import SimpleIndex, dead_url

    from imageforge.addon import blender_runtime
    from imageforge.addon.panels.server_view import package_source_line
    from imageforge.client.setup import package_source

    assert any(WHEELHOUSE.glob("*.whl")), f"run `bash tests/sync` first: {WHEELHOUSE} has no wheels"
    prefs = preferences()
    root = tmp_path / "storage"
    with SimpleIndex(WHEELHOUSE) as studio:
        prefs.package_index, prefs.package_index_url = "CUSTOM", studio.url
        try:
            command = blender_runtime.get_runtime().install_command("official", root=root)
        finally:
            prefs.package_index, prefs.package_index_url = "AUTOMATIC", ""
        dead = dead_url()
        environment = {**os.environ, "UV_CACHE_DIR": str(tmp_path / "uv-cache"), "IMAGEFORGE_PACKAGE_INDEX": dead,
                       "UV_INDEX_URL": dead, "PIP_INDEX_URL": dead, "UV_PYTHON_DOWNLOADS": "never"}  # fmt: skip
        completed = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=600)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert package_source(root) == studio.url
    assert package_source_line(package_source(root)) == f"Packages from 127.0.0.1:{studio.port}"
    status = json.loads((root / "install-status.json").read_text())
    assert status["progress"] == 1.0 and status["message"].startswith("Server environment is ready")
    assert "Packages from" not in completed.stderr and "Server environment is ready" in completed.stdout
