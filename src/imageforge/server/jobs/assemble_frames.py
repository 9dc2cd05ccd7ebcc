"""assemble-frames: the frames chunks of a frame job left in one folder, turned into the job's deliverable.

On a farm each chunk runs `imageforge run JOB … --into FOLDER` (cli/frames_into.py), which leaves PNG frames
named by their source frame number. This job checks that every frame of the range is there and decodes whole
(a missing or damaged frame is named, and the job fails), then, with `sequence_output=video`, writes the one
video a single run of the job would have written: the same writer (job_steps/frame_output.py), the source
frames' own timestamps, its audio, frame rate and pixel aspect. With `png_sequence` the folder is the
deliverable and the job only checks it. Frames are read one at a time, so memory stays one frame.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from ...contract.errors import InputError
from ...contract.jobs import ASSEMBLE_FRAMES, AssembleFramesParams, SequenceOutput
from ...contract.media_info import frame_file_name
from ...contract.png_integrity import png_is_complete
from ...contract.results import ResultName
from ..job_context import JobContext, JobResults
from ..job_runners import runs
from ..job_steps.frame_output import FrameResultWriter
from ..job_steps.progress import JobProgress, JobStages, Stage
from ..media import MediaKind, open_input, write_json
from ..media.stills import StillInfo, probe_still, read_still

SUMMARY = "summary.json"
SHOWN = 6  # missing or damaged frames named in the message; the log lists them all
LISTING = Stage("Checking frames", 5)  # every frame there
VERIFYING = Stage("Checking frames", 90)  # png_sequence: every frame decoded
ENCODING = Stage("Encoding frames", 90)  # video: every frame encoded


@runs(ASSEMBLE_FRAMES)
def run_assemble_frames(context: JobContext, params: AssembleFramesParams) -> JobResults:
    checking = params.sequence_output is SequenceOutput.PNG_SEQUENCE
    progress = JobProgress(context, JobStages(LISTING, VERIFYING if checking else ENCODING))
    source = open_input(params.input)
    if source.kind is MediaKind.STILL:
        raise InputError(f"'{source.path.name}' is a still image; assemble-frames needs the video or sequence.")
    positions = source.frame_range(params.first_frame, params.frame_count)
    folder = Path(params.frames)
    if not folder.is_dir():
        raise InputError(f"Cannot find the frames folder '{folder}'; give the folder the chunks wrote into.")
    numbers = source.numbers[positions.start : positions.stop]
    progress.enter(LISTING, f"Checking {len(numbers)} frame(s)")
    missing = [number for number in numbers if not (folder / frame_file_name(number)).is_file()]
    if missing:
        context.log(f"Missing frames: {', '.join(frame_file_name(number) for number in missing)}", level="WARNING")
        raise InputError(
            f"{len(missing)} of {len(numbers)} frame(s) are missing from '{folder}': {_named(missing)}; "
            "run the chunks that make them again."
        )
    first = _probe(folder, numbers[0])
    size, alpha, bits = (first.width, first.height), first.has_alpha, first.sample_kind.png_bits
    summary = {"frames": len(numbers), "first": numbers[0], "last": numbers[-1], "size": list(size)}
    context.log(f"Frames: {len(numbers)} of {size[0]}×{size[1]} ({bits}-bit{', alpha' if alpha else ''})")
    if checking:
        _check_all(lambda done, message: progress.within(VERIFYING, done, message), folder, numbers, size)
        write_json(Path(context.directory) / SUMMARY, summary)
        return {ResultName.SUMMARY: SUMMARY}

    output = FrameResultWriter(
        context,
        source,
        result=ResultName.VIDEO,
        sequence_output=SequenceOutput.VIDEO,
        size=size,
        alpha=alpha,
        bits=bits,
        trimmed=positions.start > 0,
    )
    with output:
        for done, slot in enumerate(source.frame_slots(positions, note=context.log)):
            progress.within(ENCODING, done / len(numbers), f"Encoding frame {done + 1}/{len(numbers)}")
            try:
                pixels = _read(folder, slot.number, size)
            except InputError:  # name every unusable frame from here on in one message, not only this one
                _check_all(lambda _done, message: progress.here(message), folder, numbers[done:], size)
                raise
            output.write(slot, pixels)
        progress.writing()
    write_json(Path(context.directory) / SUMMARY, summary)
    return {**output.files, ResultName.SUMMARY: SUMMARY}


def _check_all(
    report: Callable[[float, str], None], folder: Path, numbers: tuple[int, ...], size: tuple[int, int]
) -> None:
    """Decode every frame (a truncated PNG fails here); one InputError names every frame that does not."""
    damaged: list[tuple[int, str]] = []
    for done, number in enumerate(numbers):
        report(done / len(numbers), f"Checking frame {done + 1}/{len(numbers)}")
        try:
            _read(folder, number, size)
        except InputError as error:
            damaged.append((number, str(error)))
    if damaged:
        detail = damaged[0][1].rstrip(".")
        raise InputError(
            f"{len(damaged)} frame(s) in '{folder}' cannot be used: {_named([number for number, _ in damaged])} "
            f"({detail}); delete them and run their chunks again."
        )


def _read(folder: Path, number: int, size: tuple[int, int]) -> np.ndarray:
    """The frame's [0, 1] pixels, decoded whole; InputError when it cannot be read or has another size."""
    path = folder / frame_file_name(number)
    if not png_is_complete(path):
        raise InputError(f"'{path.name}' is truncated or damaged")
    info = _probe(folder, number)
    if (info.width, info.height) != size:
        raise InputError(f"'{info.path.name}' is {info.width}×{info.height}, the first frame {size[0]}×{size[1]}")
    return read_still(info).pixels


def _probe(folder: Path, number: int) -> StillInfo:
    return probe_still(folder / frame_file_name(number))


def _named(numbers: list[int]) -> str:
    names = ", ".join(frame_file_name(number) for number in numbers[:SHOWN])
    return names + (f" and {len(numbers) - SHOWN} more" if len(numbers) > SHOWN else "")
