"""The health snapshot's ImageForge resources: the server's real snapshots read back exactly, older ones still read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from imageforge.contract import InputError
from imageforge.contract.health import ClientsHealth, DownloadsHealth, DownloadSource, ModelsHealth

# What the server's real health code writes (tests/server/test_health_snapshots.py keeps the file current).
RECORDED = json.loads((Path(__file__).resolve().parents[1] / "addon" / "health_snapshots.json").read_text())
KINDS = {"models": ModelsHealth, "downloads": DownloadsHealth, "clients": ClientsHealth}


@pytest.mark.parametrize("name", sorted(RECORDED))
@pytest.mark.parametrize("resource", sorted(KINDS))
def test_the_servers_snapshots_read_back_exactly(name, resource):
    written = RECORDED[name]["resources"][resource]
    assert written["version"] == 1
    assert KINDS[resource].from_json(written).to_json() == written


def test_what_the_panels_read_is_typed():
    models = ModelsHealth.from_json(RECORDED["ready"]["resources"]["models"])
    assert [(model.family, model.model, model.device) for model in models.loaded] == [
        ("background", "BEN2_BASE", "cpu")
    ]
    assert models.devices == ("cpu",) and models.onnxruntime is not None
    assert DownloadsHealth.from_json(RECORDED["ready"]["resources"]["downloads"]).source is DownloadSource.MIRROR


def test_a_snapshot_from_before_version_reads_with_the_fields_added_later_empty():
    models = dict(RECORDED["busy"]["resources"]["models"])
    del models["version"], models["device_warnings"]
    assert ModelsHealth.from_json(models).device_warnings == ()
    clients = dict(RECORDED["busy"]["resources"]["clients"])
    del clients["version"], clients["idle_seconds"]
    assert ClientsHealth.from_json(clients).idle_seconds == 0.0


@pytest.mark.parametrize(
    ("resource", "change", "message"),
    [
        (
            "models",
            {"devices": ["cpu", 7]},
            "The models snapshot: devices must be a list of strings (found ['cpu', 7]).",
        ),
        (
            "models",
            {"version": 2},
            "The models snapshot has layout version 2, newer than this ImageForge reads (1); update the add-on.",
        ),  # fmt: skip
        ("downloads", {"source": "ftp"}, "The downloads snapshot: source must be one of hub, mirror (found 'ftp')."),
        ("clients", {"clients": [{"pid": 1}]}, "The clients snapshot, clients #1: client_id is missing."),
    ],
)
def test_a_wrong_field_is_one_sentence(resource, change, message):
    with pytest.raises(InputError) as caught:
        KINDS[resource].from_json({**RECORDED["busy"]["resources"][resource], **change})
    assert str(caught.value) == message
