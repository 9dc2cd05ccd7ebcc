"""inspect-input: what a job's input is, read from its headers, for the side that has no decoders.

The farm commands (cli/farm.py) split a clip into chunks before any work: they need its frame count and the
number each output frame is named by. The result is contract/media_info.py's MediaInfo; no model is loaded,
and a video is probed as every frame job probes it (its stored frame count, or its packets counted).
"""

from __future__ import annotations

from pathlib import Path

from ...contract.jobs import INSPECT_INPUT, InspectInputParams
from ...contract.results import ResultName
from ..job_context import JobContext, JobResults
from ..job_runners import runs
from ..job_steps.progress import READING, JobProgress, JobStages
from ..media import open_input, write_json

MEDIA = "media.json"


STAGES = JobStages(READING)


@runs(INSPECT_INPUT)
def run_inspect_input(context: JobContext, params: InspectInputParams) -> JobResults:
    progress = JobProgress(context, STAGES)
    progress.enter(READING)
    source = open_input(params.input)
    context.log(f"Input: {source.summary}")
    progress.writing()
    write_json(Path(context.directory) / MEDIA, source.describe().to_json())
    return {ResultName.MEDIA: MEDIA}
