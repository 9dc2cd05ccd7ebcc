"""docs/jobs.md and the contract name the same jobs, parameters and results."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import pytest

from imageforge.contract import JOB_SPECS, JobId
from imageforge.contract.cameras import CAMERAS_VERSION, FrameCamera, MultiviewCameras
from imageforge.contract.depth_metadata import DEPTH_METADATA_VERSION, DepthMetadata
from imageforge.contract.parameters import field_docs

DOC = (Path(__file__).resolve().parents[2] / "docs" / "jobs.md").read_text(encoding="utf-8")


def section(job_id: str) -> str:
    """The text under the heading that names this job (a heading may name several debug jobs)."""
    for match in re.finditer(r"^## (.+)$", DOC, flags=re.M):
        if job_id in [name.strip() for name in match.group(1).split(",")]:
            following = DOC.find("\n## ", match.end())
            return DOC[match.end() : following if following != -1 else len(DOC)]
    raise AssertionError(f"docs/jobs.md has no section for {job_id}")


def test_every_job_parameter_and_result_is_documented():
    shared = {"model", "device", "max_input_size"}
    for job_id, spec in JOB_SPECS.items():
        text = section(job_id.value)
        for field in field_docs(spec.parameters):
            if field["name"] not in shared:
                assert f"`{field['name']}`" in text, f"{job_id}: parameter {field['name']} undocumented"
        for result in spec.results:
            assert f"`{result}`" in text, f"{job_id}: result {result} undocumented"


def test_docs_name_no_job_the_contract_lacks():
    documented = set()
    for match in re.finditer(r"^## (.+)$", DOC, flags=re.M):
        documented.update(
            name.strip() for name in match.group(1).split(",") if re.fullmatch(r"[a-z0-9-]+", name.strip())
        )
    documented -= {"the job contract"}
    assert documented == {job_id.value for job_id in JOB_SPECS}


def result_table_names(text: str) -> set[str]:
    """The first cell of every row of the section's `| result | file |` tables."""
    names, in_table = set(), False
    for line in text.splitlines():
        if line.startswith("| result |"):
            in_table = True
        elif not line.startswith("|"):
            in_table = False
        elif in_table and (match := re.match(r"^\| `(\w+)` \|", line)):
            names.add(match.group(1))
    return names


def test_docs_tabulate_no_result_the_job_does_not_declare():
    tabulated = 0
    for job_id, spec in JOB_SPECS.items():
        names = result_table_names(section(job_id.value))
        assert names <= {str(name) for name in spec.results}, f"{job_id}: {names - set(spec.results)}"
        tabulated += len(names)
    assert tabulated >= 8  # the tables were found


@pytest.mark.parametrize(
    ("job_id", "document", "version"),
    [
        (JobId.GENERATE_DEPTH_PLANE_GEOMETRY, DepthMetadata, DEPTH_METADATA_VERSION),
        (JobId.GENERATE_MULTIVIEW_CAMERAS, MultiviewCameras, CAMERAS_VERSION),
        (JobId.GENERATE_MULTIVIEW_CAMERAS, FrameCamera, CAMERAS_VERSION),
    ],
)
def test_docs_give_every_metadata_field_and_the_layout_version(job_id, document, version):
    text = section(job_id.value)
    if document is not FrameCamera:
        assert f"(`{document.__name__}`, `version` {version})" in text
    for field in fields(document):
        assert f"`{field.name}`" in text or f'"{field.name}"' in text, f"{document.__name__}.{field.name}"
