"""A Storage Root that others can write is refused in Blender too: Start and Set Up say which folder and what to do,
and the Server panel shows the same sentence; nothing in the folder is created, run or "repaired"."""

from __future__ import annotations

import os

import bpy
import pytest

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX modes")


def test_start_and_the_server_panel_refuse_a_root_others_can_write(server, tmp_path):
    from imageforge.addon import preferences
    from imageforge.addon.panels.server import current_server_view

    tmp_path.chmod(0o755)
    root = tmp_path / "shared root"
    root.mkdir()
    root.chmod(0o777)
    prefs = preferences.get_preferences()
    prefs.storage_root = str(root)
    try:
        with pytest.raises(RuntimeError) as start:  # headless bpy raises an operator's ERROR report
            bpy.ops.imageforge.start_server()
        server.server.poll(available=True)  # the panel's poll timer after Start
        view = current_server_view()
        with pytest.raises(RuntimeError) as setup:
            bpy.ops.imageforge.setup_server("EXEC_DEFAULT", directory=str(root))
    finally:
        server.server.auto_start = False
        prefs.storage_root = ""
    sentence = (
        f"The Storage Root {root} can be written by other users (mode 0777), so they could change what ImageForge "
        f"runs; make it private (chmod 700 '{root}') and, if others may have changed it, set the server up again "
        "(imageforge setup --force, or Set Up Server… in Blender), or choose another Storage Root."
    )
    assert (view.headline, view.message) == ("Server error", sentence)
    assert str(start.value).strip() == str(setup.value).strip() == f"Error: {sentence}"
    assert list(root.iterdir()) == [] and root.stat().st_mode & 0o777 == 0o777
