"""`imageforge run JOB … --into DIR [--frames A-B]`: frames that many processes on many machines add up.

The chunk-safe output of the frame jobs (remove-background, upscale-image), the opposite of `--output`'s
"never merge" rule (cli/output_placement.py), for render farms (docs/farm.md):

- Each output frame is named by its **source** frame number, `frame_0137.png`, the names a whole run's PNG
  sequence gives (contract/media_info.py `frame_file_name`). `--frames 137-150` picks the frames numbered
  137 to 150 (inclusive; a video's frames are numbered from 1); without it `first_frame`/`frame_count` do.
- Several processes may write into DIR at once: each frame is copied under a hidden temporary name of its
  own, flushed, then linked into place, so a name only ever holds a whole frame and nobody's frame is
  replaced.
- A frame already there and complete (contract/png_integrity.py) is kept and not computed again: a chunk that died
  is simply run again, and a chunk whose frames are all there runs no model. A damaged one is replaced.
- Nothing else in DIR is touched. The first writer records what the frames are of in `.imageforge-frames.json`
  (the job and every parameter but the input's folder, the device and the range); a run with other settings
  is refused, so the frames of two settings never mix.
- Settings whose frames depend on earlier frames (`steady_edges`) are refused: chunks would not add up.

The frames are PNGs whatever `sequence_output` says; `imageforge farm assemble` (assemble-frames) makes the
video, or checks the sequence, from them.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..contract import InputError, JobSpec
from ..contract.jobs import JobId
from ..contract.media_info import MediaInfo, frame_file_name
from ..contract.parameters import field_docs
from ..contract.png_integrity import png_is_complete
from ..contract.results import ResultName

if TYPE_CHECKING:
    from blendjob import JobResult

RunJob = Callable[[str, dict[str, Any]], "JobResult"]
IDENTITY = ".imageforge-frames.json"
RANGE_PARAMETERS = ("first_frame", "frame_count")
NOT_IDENTITY = frozenset({"input", "device", "sequence_output", *RANGE_PARAMETERS})
ORDER_DEPENDENT = {"steady_edges": "it leans each matte on the previous frame's, so chunks would not add up"}
_TEMPORARY_TAG = ".imageforge-part-"
_RANGE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


def is_frame_job(spec: JobSpec[Any]) -> bool:
    """A job that runs frame by frame over a range: it takes `first_frame`, `frame_count` and `sequence_output`."""
    names = {field["name"] for field in field_docs(spec.parameters)}
    return {*RANGE_PARAMETERS, "sequence_output"} <= names


def parse_frame_numbers(text: str) -> tuple[int, int]:
    """`137-150` or `137` (OpenJD's and Flamenco's chunk strings) → (137, 150)."""
    match = _RANGE.match(text)
    if not match:
        raise InputError(f"--frames takes a frame number or a range such as 137-150, not '{text}'.")
    first, last = int(match.group(1)), int(match.group(2) or match.group(1))
    if last < first:
        raise InputError(f"--frames {text}: the last frame comes before the first.")
    return first, last


def check_frame_job(spec: JobSpec[Any], parameters: dict[str, Any], option: str) -> None:
    if not is_frame_job(spec):
        frame_jobs = ", ".join(sorted(job.value for job in JobId if is_frame_job(_spec(job))))
        raise InputError(f"{option} is for the jobs that run on every frame of a clip ({frame_jobs}).")
    for name, reason in ORDER_DEPENDENT.items():
        if parameters.get(name):
            raise InputError(f"{name} cannot run in chunks: {reason}; turn it off or run the clip on one machine.")


def _spec(job: JobId) -> JobSpec[Any]:
    from ..contract import JOB_SPECS

    return JOB_SPECS[job]


def identity(spec: JobSpec[Any], parameters: dict[str, Any]) -> dict[str, Any]:
    """What the frames in a folder are of: the job, its settings (parsed, defaults filled) and the input's name."""
    parsed = spec.parse(parameters)
    settings = {
        field["name"]: _plain(getattr(parsed, field["name"]))
        for field in field_docs(spec.parameters)
        if field["name"] not in NOT_IDENTITY
    }
    return {"job": spec.id.value, "input": Path(str(parameters["input"])).name, "parameters": settings}


def _plain(value: Any) -> Any:
    return getattr(value, "value", value)


@dataclass(frozen=True)
class FramesFolder:
    """The `--into` folder: checked, and holding frames of one job and settings only."""

    path: Path

    @classmethod
    def opened(cls, into: str, *, inputs: list[str], what: dict[str, Any]) -> FramesFolder:
        path = Path(os.path.abspath(os.path.expanduser(into)))
        for item in inputs:
            if _same(path, Path(item)) or _same(path, Path(item).parent) and not Path(item).exists():
                raise InputError(f"--into '{path}' is the job's input; choose another folder for the frames.")
        if path.exists() and not path.is_dir():
            raise InputError(f"--into '{path}' is a file; give a folder for the frames.")
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise InputError(f"--into '{path}' cannot be created ({error.strerror or error}).") from error
        if not os.access(path, os.W_OK | os.X_OK):
            raise InputError(f"--into '{path}' is not writable; choose a folder you can write to.")
        folder = cls(path)
        folder._claim(what)
        return folder

    def _claim(self, what: dict[str, Any]) -> None:
        """Record `what` as the folder's frames (first writer wins, atomically), or check it matches."""
        marker = self.path / IDENTITY
        if not marker.exists():
            temporary = self.path / f"{IDENTITY}{_TEMPORARY_TAG}{secrets.token_hex(4)}"
            temporary.write_text(json.dumps(what, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            try:
                os.link(temporary, marker)  # never replaces: two first writers agree on one marker
            except FileExistsError:
                pass
            except OSError:  # no hard links on this file system
                if not marker.exists():
                    os.rename(temporary, marker)
            finally:
                temporary.unlink(missing_ok=True)
        try:
            recorded = json.loads(marker.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise InputError(
                f"'{marker}' cannot be read ({error}); it records what the frames in '{self.path}' are of."
            ) from error
        if recorded != what:
            differing = sorted(
                key
                for key in {*recorded.get("parameters", {}), *what["parameters"]}
                if recorded.get("parameters", {}).get(key) != what["parameters"].get(key)
            )
            if recorded.get("job") != what["job"]:
                differing.insert(0, "job")
            if recorded.get("input") != what["input"]:
                differing.insert(0, "input")
            raise InputError(
                f"'{self.path}' holds frames of {recorded.get('job')} on '{recorded.get('input')}' with other "
                f"settings ({', '.join(differing) or 'format'}); use the same settings or another folder."
            )

    def complete(self, number: int) -> bool:
        return png_is_complete(self.path / frame_file_name(number))

    def place(self, source: Path, number: int) -> bool:
        """Copy one frame in atomically; False when a complete frame of that number was already there."""
        target = self.path / frame_file_name(number)
        if png_is_complete(target):
            return False
        temporary = self.path / f".{target.name}{_TEMPORARY_TAG}{secrets.token_hex(4)}"
        try:
            with open(source, "rb") as read, open(temporary, "xb") as written:
                shutil.copyfileobj(read, written, 1024 * 1024)
                written.flush()
                os.fsync(written.fileno())
            try:
                os.link(temporary, target)
                return True
            except FileExistsError:
                if png_is_complete(target):
                    return False  # another process placed it meanwhile
                os.replace(temporary, target)  # a damaged frame (not one of ours) is replaced whole
                return True
            except OSError:  # no hard links on this file system
                os.replace(temporary, target)
                return True
        finally:
            temporary.unlink(missing_ok=True)


def run_into(
    spec: JobSpec[Any],
    parameters: dict[str, Any],
    *,
    into: str,
    frames: str | None,
    run_job: RunJob,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """Make the frames of the range that DIR lacks; returns the summary `imageforge run` prints."""
    check_frame_job(spec, parameters, "--into")
    if frames is not None and any(name in parameters for name in RANGE_PARAMETERS):
        raise InputError("Give the frames either with --frames or with first_frame/frame_count, not both.")
    folder = FramesFolder.opened(into, inputs=[str(parameters["input"])], what=identity(spec, parameters))
    media = MediaInfo.read(run_job(JobId.INSPECT_INPUT.value, {"input": parameters["input"]}).file(ResultName.MEDIA))
    if media.kind == "still":
        raise InputError(
            f"'{Path(str(parameters['input'])).name}' is a still image; --into is for videos and sequences."
        )
    positions = _positions(media, parameters, frames)
    wanted = {position: media.numbers[position] for position in positions}
    missing = [position for position, number in wanted.items() if not folder.complete(number)]
    summary: dict[str, Any] = {"into": str(folder.path), "frames": len(wanted), "written": 0, "kept": 0}
    if wanted:
        summary["first"], summary["last"] = wanted[positions[0]], wanted[positions[-1]]
    if not missing:
        summary["kept"] = len(wanted)
        say(f"All {len(wanted)} frame(s) of the range are already in '{folder.path}'; nothing to do.")
        return summary
    run = {
        **parameters,
        "sequence_output": "png_sequence",
        "first_frame": missing[0],
        "frame_count": missing[-1] - missing[0] + 1,
    }
    result = run_job(spec.id.value, run)
    made = {name: result.file(name) for name in result.value if name != ResultName.PROVENANCE}
    (first_file,) = made.values()
    for position in range(missing[0], missing[-1] + 1):
        number = media.numbers[position]
        produced = first_file.parent / frame_file_name(number)
        if position in wanted and folder.place(produced, number):
            summary["written"] += 1
    summary["kept"] = len(wanted) - summary["written"]
    return summary


def _positions(media: MediaInfo, parameters: dict[str, Any], frames: str | None) -> list[int]:
    if frames is None:
        return list(
            media.positions(int(parameters.get("first_frame", 0) or 0), int(parameters.get("frame_count", 0) or 0))
        )
    first, last = parse_frame_numbers(frames)
    return [position for position, number in enumerate(media.numbers) if first <= number <= last]


def _same(one: Path, other: Path) -> bool:
    try:
        return one.resolve() == Path(os.path.abspath(other)).resolve()
    except OSError:
        return False


__all__ = ["FramesFolder", "check_frame_job", "identity", "is_frame_job", "parse_frame_numbers", "run_into"]
