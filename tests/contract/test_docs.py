"""docs/jobs.md and the contract name the same jobs, parameters and results."""

from __future__ import annotations

import re
from pathlib import Path

from imageforge.contract import JOB_SPECS
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
