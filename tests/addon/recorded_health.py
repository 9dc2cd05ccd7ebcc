"""The server's health snapshots, as the add-on's poll keeps them, and the Server panel drawn from one.

The `/health` bodies in health_snapshots.json are the server's own: tests/server/test_health_snapshots.py
writes them with create_server()'s real resources (a kit model on a real ONNX Runtime session, the download
sources, the client registry) and fails when the file is no longer current. This Python (Blender's) has no
ONNX Runtime to produce them here. The snapshot the panels read is made from a body by the client's own
health reading (client/server_status.py read_health), run for real with the recorded body as the HTTP answer.
"""

from __future__ import annotations

import json
from pathlib import Path

import bpy
from recording import RecordingLayout, draw

HEALTH_SNAPSHOTS = Path(__file__).with_name("health_snapshots.json")


def polled(name: str) -> dict:
    """`busy`: an upscale job at 40 %, the upscaler loaded, downloads from the hub. `ready`: idle, BEN2 loaded
    on CPU although CUDA was asked for (its device warning kept), downloads switched to the mirror."""
    from blendjob.controller import ServerConnection

    from imageforge.client.server_seat import ServerSeat
    from imageforge.client.server_status import read_health

    body = json.loads(HEALTH_SNAPSHOTS.read_text(encoding="utf-8"))[name]

    class RecordedAnswer:
        def request(self, method: str, path: str, timeout: float) -> dict:
            assert (method, path) == ("GET", "/health")
            return body

    seat = ServerSeat(Path.cwd, Path.cwd)
    seat.connection = ServerConnection(48000, 4242, body["instance_id"], RecordedAnswer())
    read_health(seat, timeout=0.3)
    return seat.snapshot


def server_panel(runtime, snapshot: dict) -> RecordingLayout:
    """The Server panel as it draws with `snapshot` as the runtime's last poll."""
    from imageforge.addon.panels.server import ServerPanel

    runtime.server.snapshot = snapshot
    return draw(ServerPanel, bpy.context)
