"""An Open Job Description job bundle (`jobtemplate-2023-09`) for a frame job: what Deadline Cloud submits with
`deadline bundle submit BUNDLE`, and what any OpenJD runtime (`openjd run`) runs.

Three steps, each running `imageforge` on a worker:

1. **Set up** (one task): the worker's server environment and the job's model, verified, and the input read
   (`imageforge farm setup-worker`): a farm that cannot run the job fails here, with one sentence, before any
   chunk runs.
2. **Frames** (a chunked task parameter over the frame numbers, `--chunk-size` frames a task): `imageforge run
   JOB … --into FRAMES --frames {{Task.Param.Frame}}`. A worker that has not set up yet sets itself up in its
   first chunk, as `imageforge run` always does (its own storage root, server environment and verified model).
3. **Assemble** (one task, after every chunk): `imageforge farm assemble`, the video of a single run (or the
   check that every frame of the sequence is there).

Paths are PATH job parameters (objectType and dataFlow set) so a farm maps them per operating system and Job
Attachments know what to move; their values are in `parameter_values.yaml` (a template may only default a PATH
to a path relative to itself), the other parameters default to this job's values; the command (`ImageForge`)
and the studio's model mirror (`ModelMirror`, for `IMAGEFORGE_MODEL_MIRROR`) are job parameters too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .farm_job import COMMAND, FarmJob
from .yaml_text import to_yaml

SPECIFICATION = "jobtemplate-2023-09"
TEMPLATE = "template.yaml"
PARAMETER_VALUES = "parameter_values.yaml"
CHUNK_SECONDS = 0  # no runtime target: the chunk size is the TD's choice


def template(job: FarmJob) -> dict[str, Any]:
    """The job template: parameters with this job's values as defaults, three steps."""
    tool = ["{{Param.ImageForge}}"]
    source = "input={{Param.Input}}"
    settings = job.setting_words()
    assemble = ["farm", "assemble", job.job, source, *settings, "--into", "{{Param.FramesFolder}}"]
    assemble += ["--frames", "{{Param.Frames}}"]
    if job.video:
        assemble += ["--output", "{{Param.OutputFolder}}"]
    return {
        "specificationVersion": SPECIFICATION,
        "extensions": ["TASK_CHUNKING"],
        "name": job.title[:128],
        "description": f"ImageForge {job.job} on {Path(job.input).name}, frames {job.frame_range}, in chunks.",
        "parameterDefinitions": _parameters(job),
        "jobEnvironments": [
            {
                "name": "ImageForge settings",
                "description": "Where workers take model files from (empty: the hub, or the worker's own setting).",
                "variables": {"IMAGEFORGE_MODEL_MIRROR": "{{Param.ModelMirror}}"},
            }
        ],
        "steps": [
            {
                "name": "Set up",
                "description": "Prepare ImageForge on a worker and read the input, before any chunk runs.",
                "script": {"actions": {"onRun": _action(tool, ["farm", "setup-worker", job.job, source, *settings])}},
            },
            {
                "name": "Frames",
                "description": "Each task makes its chunk of frames into the shared frames folder.",
                "dependencies": [{"dependsOn": "Set up"}],
                "parameterSpace": {
                    "taskParameterDefinitions": [
                        {
                            "name": "Frame",
                            "type": "CHUNK[INT]",
                            "range": "{{Param.Frames}}",
                            "chunks": {
                                "defaultTaskCount": "{{Param.ChunkSize}}",
                                "targetRuntimeSeconds": CHUNK_SECONDS,
                                "rangeConstraint": "CONTIGUOUS",
                            },
                        }
                    ]
                },
                "script": {
                    "actions": {
                        "onRun": _action(
                            tool,
                            ["run", job.job, source, *settings, "--into", "{{Param.FramesFolder}}"]
                            + ["--frames", "{{Task.Param.Frame}}"],
                        )
                    }
                },
            },
            {
                "name": "Assemble",
                "description": "The video a single run makes, or the check that every frame is there.",
                "dependencies": [{"dependsOn": "Frames"}],
                "script": {"actions": {"onRun": _action(tool, assemble)}},
            },
        ],
    }


def _parameters(job: FarmJob) -> list[dict[str, Any]]:
    input_kind = "DIRECTORY" if Path(job.input).is_dir() else "FILE"
    parameters: list[dict[str, Any]] = [
        _path("Input", "The video or frame sequence (a folder, or a pattern such as shot_####.png)", job.input,
              input_kind, "IN", "CHOOSE_INPUT_FILE" if input_kind == "FILE" else "CHOOSE_DIRECTORY"),
        _path("FramesFolder", "Shared folder the chunks write frames into (frame_0001.png…)", job.frames_folder,
              "DIRECTORY", "OUT", "CHOOSE_DIRECTORY"),
    ]  # fmt: skip
    if job.video:
        parameters.append(
            _path("OutputFolder", "Where the assembled video goes (never replacing a file)", job.output_folder,
                  "DIRECTORY", "OUT", "CHOOSE_DIRECTORY")
        )  # fmt: skip
    parameters += [
        {
            "name": "Frames",
            "type": "STRING",
            "description": "Frame numbers to make, e.g. 1-240 (a video's frames are numbered from 1)",
            "default": job.frame_range,
            "minLength": 1,
        },
        {
            "name": "ChunkSize",
            "type": "INT",
            "description": "Frames per task",
            "default": job.chunk_size,
            "minValue": 1,
            "maxValue": 10000,
        },
        {
            "name": "ImageForge",
            "type": "STRING",
            "description": "The imageforge command on the workers",
            "default": COMMAND,
            "minLength": 1,
        },
        {
            "name": "ModelMirror",
            "type": "STRING",
            "description": "Studio model mirror (shared folder or file: URL), IMAGEFORGE_MODEL_MIRROR; empty: hub",
            "default": "",
        },
    ]
    return parameters


def _path(name: str, description: str, value: str, kind: str, flow: str, control: str) -> dict[str, Any]:
    """A PATH parameter; its value is in parameter_values.yaml (a template's PATH default must be relative)."""
    return {
        "name": name,
        "type": "PATH",
        "description": description,
        "objectType": kind,
        "dataFlow": flow,
        "userInterface": {"control": control, "label": name},
    }


def _action(tool: list[str], args: list[str]) -> dict[str, Any]:
    return {"command": tool[0], "args": args}


def parameter_values(job: FarmJob) -> dict[str, Any]:
    """`parameter_values.yaml`: the values this bundle was written with (the template's defaults, restated)."""
    values: dict[str, Any] = {"Input": job.input, "FramesFolder": job.frames_folder, "Frames": job.frame_range}
    if job.video:
        values["OutputFolder"] = job.output_folder
    values["ChunkSize"] = job.chunk_size
    return {"parameterValues": [{"name": name, "value": value} for name, value in values.items()]}


def run_arguments(job: FarmJob) -> list[str]:
    """`-p Name=value` for `openjd run`, which reads no parameter_values.yaml."""
    return [
        word for item in parameter_values(job)["parameterValues"] for word in ("-p", f"{item['name']}={item['value']}")
    ]


def write_bundle(job: FarmJob, folder: Path) -> Path:
    """Write `template.yaml` and `parameter_values.yaml` into `folder` (created); returns the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / TEMPLATE).write_text(to_yaml(template(job)), encoding="utf-8")
    (folder / PARAMETER_VALUES).write_text(to_yaml(parameter_values(job)), encoding="utf-8")
    return folder


__all__ = ["PARAMETER_VALUES", "TEMPLATE", "parameter_values", "run_arguments", "template", "write_bundle"]
