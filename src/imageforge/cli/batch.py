"""`imageforge batch JOB INPUT... [key=value ...] --output DIR`: one job per input on one server start.

The server starts once (or is attached to, when one lingers) and keeps each model family's session loaded
between jobs (ModelManager), so N inputs pay one start and one model load. Inputs may mix stills, videos
and frame folders or patterns. Every input gets one JSON line on stdout as soon as it ends:

    {"input": "shots/a.png", "result": {"foreground": "/out/a_foreground.png", ...}}
    {"input": "shots/broken.png", "error": "'broken.png' is not a readable image ..."}

With `--into DIR` instead of `--output` (frame jobs), each input's frames go into `DIR/<input name>/` as `imageforge
run … --into` writes them (cli/frames_into.py): named by source frame number, whole ones kept, safe beside other
processes, and the line says `{"input": …, "into": {"frames": …, "written": …, "kept": …}}`.

A bad input is reported and the batch goes on; the exit status is 1 when any input failed. Results are
copied with cli/output_placement.py under names made from the input (`<stem>_<result file>`), so two
`photo.png` from different folders become `photo_foreground.png` and `photo_foreground (2).png`, and no
input or existing file is ever replaced. On a terminal, one progress bar covers the whole batch. Ctrl-C, SIGTERM
or SIGHUP cancel the running input's job and start no other (cli/cancellation.py; exit 130, 143, 129).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..client.job_runner import JobCancelledError, make_runtime, run_job
from ..client.setup import environment_ready, prepare_environment
from ..contract import ImageForgeError, InputError, job_spec
from ..contract.parameters import field_docs, with_absolute_paths
from .arguments import parse_assignments
from .cancellation import StopSignals
from .output_placement import OutputFolder
from .progress import ProgressPrinter

PLACEHOLDER = re.compile(r"[#%].*$")  # `shot_####.png`, `shot_%04d.png` → `shot_`


@dataclass(frozen=True)
class BatchItem:
    argument: str  # as the user typed it, echoed in the JSON line
    path: str  # absolute, what the server reads
    parameters: dict[str, Any]


def split_arguments(job: str, items: list[str]) -> tuple[list[str], dict[str, Any]]:
    """Inputs and `key=value` parameters, told apart by the key being one of the job's parameters."""
    names = {field["name"] for field in field_docs(job_spec(job).parameters)}
    inputs: list[str] = []
    assignments: list[str] = []
    for item in items:
        key = item.split("=", 1)[0]
        (assignments if "=" in item and key in names else inputs).append(item)
    parameters = parse_assignments(assignments)
    if "input" in parameters:
        raise InputError("Give the batch's inputs as arguments, not as input=...")
    if not inputs:
        raise InputError("Give at least one input: an image, a video or a folder of frames.")
    return inputs, parameters


def plan_items(job: str, inputs: list[str], parameters: dict[str, Any]) -> list[BatchItem]:
    """One item per input, each the job's typed parameters serialised once; the shared parameters are checked
    with the first input (a bad one fails the whole command before any job)."""
    spec = job_spec(job)
    shared = spec.parse({**parameters, "input": inputs[0]})
    items = []
    for argument in inputs:
        path = _absolute(argument)
        typed = with_absolute_paths(dataclasses.replace(shared, input=path), _absolute)
        items.append(BatchItem(argument, path, spec.request(typed)))
    return items


def _absolute(path: str) -> str:
    return os.path.abspath(os.path.expanduser(path))


def result_label(path: str) -> str:
    """The name an input's results are copied under: a file's stem, a folder's name, a pattern's prefix."""
    location = Path(path)
    if PLACEHOLDER.search(location.name) and not location.exists():
        return PLACEHOLDER.sub("", location.name).rstrip("._- ") or location.parent.name
    return location.stem if location.is_file() else location.name


def copy_named(files: dict[str, Path], job_folder: Path, output: OutputFolder, label: str) -> dict[str, Path]:
    """Copy a job's result files as `<label>_<name>` (a PNG sequence's folder whole); returns each landing."""
    relative = {name: path.relative_to(job_folder) for name, path in files.items()}
    sources = {parts.parts[0]: job_folder / parts.parts[0] for parts in relative.values()}
    placement = output.place(sources, names={top: f"{label}_{top}" for top in sources})
    return {name: placement.paths[parts.parts[0]].joinpath(*parts.parts[1:]) for name, parts in relative.items()}


class BatchProgress:
    """One bar over the whole batch: input i of n, the current job's own progress inside its share."""

    def __init__(self, count: int, printer: ProgressPrinter):
        self.count, self.printer = count, printer
        self.index, self.name = 0, ""

    def start(self, index: int, name: str) -> None:
        self.index, self.name = index, name

    def __call__(self, status: dict[str, Any]) -> None:
        share = min(max(float(status.get("progress") or 0.0), 0.0), 1.0)
        detail = str(status.get("message") or status.get("state") or "")
        self.printer(
            {
                "progress": (self.index + share) / self.count,
                "message": f"{self.index + 1}/{self.count} {self.name}: {detail}",
            }
        )


def into_folders(into: str, items: list[BatchItem]) -> list[str]:
    """Each input's own `--into` folder, `DIR/<label>`; a label two inputs share gets a number, as results do."""
    seen: dict[str, int] = {}
    folders = []
    for item in items:
        label = result_label(item.path)
        seen[label] = seen.get(label, 0) + 1
        folders.append(str(Path(into) / (label if seen[label] == 1 else f"{label} ({seen[label]})")))
    return folders


def batch(args: argparse.Namespace, storage_root: Path, say: Callable[[str], None]) -> int:
    inputs, parameters = split_arguments(args.job, args.items)
    items = plan_items(args.job, inputs, parameters)
    if bool(args.output) == bool(getattr(args, "into", None)):
        raise InputError("Give --output FOLDER (copies of each result) or --into DIR (frames for a farm), one of them.")
    if args.into:
        from .frames_into import check_frame_job

        check_frame_job(job_spec(args.job), parameters, "--into")
        folders = into_folders(args.into, items)
        output = None
    else:
        output = OutputFolder.checked(args.output, inputs=[item.path for item in items])  # before any work
    if not environment_ready(storage_root):
        prepare_environment(storage_root, report=say)
    runtime = make_runtime(storage_root)  # one server start for every input
    printer = ProgressPrinter()
    progress = BatchProgress(len(items), printer)

    def one(index: int, item: BatchItem) -> dict[str, Any]:
        progress.start(index, Path(item.argument).name)
        try:
            if output is None:
                from .frames_into import run_into

                summary = run_into(
                    job_spec(args.job), item.parameters, into=folders[index], frames=None, say=say,
                    run_job=lambda job, values: run_job(
                        runtime, job, values, on_progress=progress, cancel_requested=stop.requested
                    ),
                )  # fmt: skip
                return {"input": item.argument, "into": summary}
            done = run_job(runtime, args.job, item.parameters, on_progress=progress, cancel_requested=stop.requested)
            files = {name: done.file(name) for name in done.value}
            result = copy_named(files, Path(done.directory).resolve(), output, result_label(item.path))
        except JobCancelledError:
            raise
        except (ImageForgeError, RuntimeError, OSError) as failure:
            return {"input": item.argument, "error": str(failure)}
        finally:
            printer.finish()
            printer.last_line = ""
        return {"input": item.argument, "result": {name: str(path) for name, path in result.items()}}

    failures = 0
    with StopSignals(say) as stop:
        try:
            for index, item in enumerate(items):
                line = one(index, item)
                failures += "error" in line
                print(json.dumps(line, ensure_ascii=False), flush=True)
        except JobCancelledError:
            stop.raise_if_terminated()
            raise
        finally:
            runtime.server.detach()  # the shared server lingers for the next command, as after `run`
    if failures:
        say(f"{failures} of {len(items)} input(s) failed.")
    return 1 if failures else 0


__all__ = ["batch", "result_label", "split_arguments"]
