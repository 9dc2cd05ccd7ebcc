"""`imageforge farm …`: the frame jobs on a render farm (docs/farm.md).

- `farm openjd JOB input=… key=value… [--chunk-size N] --out BUNDLE`: an Open Job Description bundle
  (farm/openjd.py) for Deadline Cloud (`deadline bundle submit BUNDLE`) or any OpenJD runtime.
- `farm flamenco-job-type DIR`: writes `imageforge.js`, the Flamenco job type, where a Manager reads job types.
- `farm setup-worker JOB input=… key=value…`: what a farm's set-up task runs: this worker's server environment,
  the job's model (downloaded or taken from the studio's mirror, verified) and the input, proven by making the
  first frame; any failure is one sentence and a non-zero exit, before any chunk runs.
- `farm assemble JOB input=… key=value… --into DIR [--frames A-B] [--output FOLDER]`: after every chunk
  (`imageforge run JOB … --into DIR --frames A-B`) has run, check that DIR holds every frame of the range and
  make the deliverable:
  with `sequence_output=video` (the frame jobs' default) the one video a single run would have made, copied
  to FOLDER as `<result>.<ext>` (`upscale.mp4`) without replacing anything (cli/output_placement.py); with
  `png_sequence` DIR itself is the deliverable and is only checked.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..contract import ImageForgeError, InputError, JobSpec
from ..contract.jobs import JobId
from ..contract.media_info import MediaInfo
from ..contract.results import ResultName
from ..farm.farm_job import FarmJob
from .frames_into import IDENTITY, RANGE_PARAMETERS, FramesFolder, check_frame_job, identity, parse_frame_numbers

if TYPE_CHECKING:
    from blendjob import JobResult

RunJob = Callable[[str, dict[str, Any]], "JobResult"]


def assemble(
    spec: JobSpec[Any],
    parameters: dict[str, Any],
    *,
    into: str,
    output: str | None,
    run_job: RunJob,
    say: Callable[[str], None],
    frames: str | None = None,
) -> dict[str, Any]:
    """Run assemble-frames on the chunks' folder; returns what `imageforge farm assemble` prints."""
    check_frame_job(spec, parameters, "farm assemble")
    folder = Path(into).expanduser().absolute()
    if not (folder / IDENTITY).is_file():
        raise InputError(f"'{folder}' holds no frames made with --into; give the folder the chunks wrote into.")
    FramesFolder.opened(str(folder), inputs=[str(parameters["input"])], what=identity(spec, parameters))
    if frames is not None:
        parameters = {**parameters, **positions_of(inspect(parameters, run_job), frames)}
    parsed = spec.parse(parameters)
    wants_video = parsed.sequence_output.value == "video"
    if wants_video and output is None:
        raise InputError("Give --output FOLDER for the assembled video (or sequence_output=png_sequence to check).")
    placement = None
    if output is not None:
        from .output_placement import OutputFolder

        placement = OutputFolder.checked(output, inputs=[str(parameters["input"]), str(folder)])
    request = {
        "input": parameters["input"],
        "frames": str(folder),
        "sequence_output": parsed.sequence_output.value,
        **{name: parameters[name] for name in RANGE_PARAMETERS if name in parameters},
    }
    result = run_job(JobId.ASSEMBLE_FRAMES.value, request)
    summary: dict[str, Any] = json.loads(result.file(ResultName.SUMMARY).read_text(encoding="utf-8"))
    summary["into"] = str(folder)
    if wants_video and placement is not None:
        video = result.file(ResultName.VIDEO)
        (name,) = (str(name) for name in spec.expected_results(parsed))
        landed = placement.place({"video": video}, names={"video": f"{name}{video.suffix}"})
        if landed.taken:
            say(f"'{landed.taken[0]}' already existed; the video was written beside it, with a number.")
        summary["video"] = str(landed.paths["video"])
    return summary


class WorkerSetupError(ImageForgeError):
    """This machine cannot run the job: the message says what to fix, in one sentence."""


NETWORK_FILE_SYSTEMS = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "smbfs", "fuse.sshfs", "afs", "ceph", "glusterfs", "fuse.glusterfs", "lustre"}
)


def inspect(parameters: dict[str, Any], run_job: RunJob) -> MediaInfo:
    """The input's frames, as the server reads them (inspect-input)."""
    result = run_job(JobId.INSPECT_INPUT.value, {"input": parameters["input"]})
    return MediaInfo.read(result.file(ResultName.MEDIA))


def positions_of(media: MediaInfo, frames: str) -> dict[str, int]:
    """`first_frame`/`frame_count` of the frames numbered A-B."""
    first, last = parse_frame_numbers(frames)
    positions = [index for index, number in enumerate(media.numbers) if first <= number <= last]
    if not positions:
        raise InputError(
            f"The input has no frame numbered {first} to {last}; its frames are {media.numbers[0]}-{media.numbers[-1]}."
        )
    return {"first_frame": positions[0], "frame_count": len(positions)}


def farm_job(
    spec: JobSpec[Any],
    parameters: dict[str, Any],
    media: MediaInfo,
    *,
    chunk_size: int,
    into: str | None,
    output: str | None,
    frames: str | None,
    name: str = "",
) -> FarmJob:
    """The submission of a frame job: its settings fixed, the frame numbers, the shared folders (default: beside
    the input, `<input name>.<job>/frames` and `<input name>.<job>/`)."""
    check_frame_job(spec, parameters, "A farm job")
    parsed = spec.parse(parameters)
    if frames is not None:
        first, last = parse_frame_numbers(frames)
    else:
        positions = media.positions(parsed.first_frame, parsed.frame_count)
        first, last = media.numbers[positions.start], media.numbers[positions.stop - 1]
    source = Path(str(parameters["input"]))
    beside = source.parent / f"{source.name if source.is_dir() else source.stem}.{spec.id.value}"
    settings = {key: value for key, value in parameters.items() if key not in ("input", *RANGE_PARAMETERS)}
    return FarmJob(
        job=spec.id.value,
        settings=settings,
        input=str(source),
        frames_folder=os.path.abspath(into) if into else str(beside / "frames"),
        output_folder=os.path.abspath(output) if output else str(beside),
        first=first,
        last=last,
        chunk_size=chunk_size,
        video=parsed.sequence_output.value == "video",
        name=name or f"ImageForge {spec.id.value} {source.name}",
    )


def check_local_storage(root: Path, *, mounts: Path = Path("/proc/self/mounts")) -> None:
    """Refuse a storage root on a network file system: its server, lock and leases are one machine's."""
    try:
        lines = mounts.read_text(encoding="utf-8").splitlines()
    except OSError:
        return  # not Linux (macOS, Windows): nothing to read; docs/farm.md says to keep the root local
    resolved, best, kind = str(Path(root).resolve()), "", ""
    for line in lines:
        parts = line.split()
        if len(parts) >= 3:
            point = parts[1].replace("\\040", " ")
            if (resolved == point or resolved.startswith(point.rstrip("/") + "/")) and len(point) > len(best):
                best, kind = point, parts[2]
    if kind in NETWORK_FILE_SYSTEMS:
        raise WorkerSetupError(
            f"The storage root '{root}' is on a network file system ({kind}); its server and lock belong to one "
            "machine, so give each worker a local one (IMAGEFORGE_STORAGE_ROOT)."
        )


def setup_worker(
    spec: JobSpec[Any],
    parameters: dict[str, Any],
    *,
    root: Path,
    prepare: Callable[[], None],
    run_job: RunJob,
    say: Callable[[str], None],
    models_from: Path | None = None,
) -> dict[str, Any]:
    """Make this worker ready for the job, proven by making its first frame (in a job folder, then left there).
    `models_from` (the studio's model folder, when the mirror is a folder): its files are imported, verified, first,
    so no worker asks the hub for what the studio already has."""
    check_frame_job(spec, parameters, "farm setup-worker")
    started = time.perf_counter()
    check_local_storage(root)
    try:
        prepare()
    except (ImageForgeError, RuntimeError, OSError, ImportError) as error:
        raise WorkerSetupError(f"This worker cannot set up ImageForge in '{root}': {error}") from error
    environment = time.perf_counter() - started
    if models_from is not None:
        import_studio_models(root, models_from, say)
    media = inspect(parameters, run_job)
    if media.kind == "still":
        raise InputError(f"'{Path(str(parameters['input'])).name}' is a still image; a farm job needs a clip.")
    first = int(parameters.get("first_frame", 0) or 0)
    probe = {**parameters, "sequence_output": "png_sequence", "first_frame": first, "frame_count": 1}
    try:
        result = run_job(spec.id.value, probe)
    except (ImageForgeError, RuntimeError, OSError) as error:
        raise WorkerSetupError(f"This worker cannot run {spec.id.value}: {error}") from error
    frame = time.perf_counter() - started - environment
    summary = {
        "storage_root": str(root),
        "environment_seconds": round(environment, 2),
        "first_frame_seconds": round(frame, 2),
        "frames": media.frame_count,
        "result": str(result.directory),
    }
    say(f"This worker is ready for {spec.id.value}: environment {environment:.1f} s, first frame {frame:.1f} s.")
    return summary


def studio_folder(mirror: str | None) -> Path | None:
    """The local folder `IMAGEFORGE_MODEL_MIRROR` names (a path or a file: URL), or None for an HTTP mirror."""
    if not mirror or not mirror.strip():
        return None
    text = mirror.strip()
    if text.startswith("file:"):
        from urllib.parse import unquote, urlparse

        return Path(unquote(urlparse(text).path))
    return None if "://" in text else Path(text)


def import_studio_models(root: Path, folder: Path, say: Callable[[str], None]) -> None:
    from ..client.model_exchange import ExchangeError, TransferState, import_models

    if not folder.is_dir():
        raise WorkerSetupError(f"The studio's model folder '{folder}' cannot be found from this worker.")
    try:
        transfers = import_models(root, folder)
    except ExchangeError as error:
        raise WorkerSetupError(f"The studio's model folder cannot be used: {error}") from error
    damaged = [item for item in transfers if item.state is TransferState.DAMAGED]
    if damaged:
        raise WorkerSetupError(
            f"{len(damaged)} model file(s) in '{folder}' do not match the catalog's size and SHA-256 "
            f"({damaged[0].line.strip()}); export them again."
        )
    copied = sum(item.state is TransferState.COPIED for item in transfers)
    say(f"Models from '{folder}': {copied} copied, {len(transfers) - copied} already here, all verified.")


def write_openjd(job: FarmJob, bundle: str, *, say: Callable[[str], None]) -> dict[str, Any]:
    import shlex

    from ..farm.openjd import TEMPLATE, run_arguments, write_bundle

    folder = write_bundle(job, Path(bundle).expanduser().absolute())
    local = shlex.join(["openjd", "run", str(folder / TEMPLATE), *run_arguments(job)])
    say(
        f"Wrote the OpenJD bundle '{folder}' ({job.chunks()} chunk(s) of {job.chunk_size} frame(s), frames "
        f"{job.frame_range}). Submit it with: deadline bundle submit {shlex.quote(str(folder))}  (or run it on this "
        f"machine: {local})"
    )
    return {
        "bundle": str(folder),
        "chunks": job.chunks(),
        "frames": job.frame_range,
        "into": job.frames_folder,
    }


__all__ = ["WorkerSetupError", "assemble", "check_local_storage", "farm_job", "inspect", "setup_worker", "write_openjd"]
