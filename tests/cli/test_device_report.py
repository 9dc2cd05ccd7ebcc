"""What `imageforge run` says of a job's provenance: devices, device warnings and input warnings."""

from __future__ import annotations

import json
from pathlib import Path

from imageforge.cli.device_report import print_warnings, result_summary
from imageforge.contract.provenance import Provenance

LETTERBOX = "DA3 Small (depth only) takes 504×504 pictures only, so the 64×48 frames were letterboxed (padded)."


def test_input_warnings_reach_the_result_json_and_stderr(tmp_path: Path):
    path = tmp_path / "provenance.json"
    path.write_text(json.dumps({"models": [], "warnings": ["CUDA failed."], "input_warnings": [LETTERBOX]}))
    provenance = Provenance.read(path)
    assert provenance.input_warnings == (LETTERBOX,)
    summary = result_summary({"cameras": tmp_path / "cameras.json"}, provenance)
    assert summary["input_warnings"] == [LETTERBOX] and summary["warnings"] == ["CUDA failed."]
    said: list[str] = []
    print_warnings(provenance, said.append)
    assert said == ["imageforge: warning: CUDA failed.", f"imageforge: warning: {LETTERBOX}"]


def test_a_provenance_without_input_warnings_reads_as_none(tmp_path: Path):
    path = tmp_path / "provenance.json"
    path.write_text('{"models": [], "warnings": [], "input_warnings": "not a list"}')
    assert Provenance.read(path).input_warnings == ()
    assert "input_warnings" not in result_summary({}, Provenance.read(path))
