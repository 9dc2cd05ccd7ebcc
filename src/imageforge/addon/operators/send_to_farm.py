"""Send to Farm…: the Frames panel's tools, written as a render-farm job for the active strip, clip or sequence.

Blender never talks to the farm and never needs its credentials: the operator writes what the farm's own tools
submit, and says where it wrote it and the command that submits it (docs/farm.md):

- Deadline / OpenJD: a job bundle (farm/openjd.py) → `deadline bundle submit FOLDER`.
- Flamenco: the job type `imageforge.js` and `flamenco-job.json`, the body of `POST /api/v3/jobs` on the Manager.

The job is the Frames tool's with the current settings (the model, device and input size of the preferences,
the scale), on the frames the tool would process (the clip's, or the scene range's); its result is the PNG
sequence the tool makes here, or one video. No server is started: nothing runs here.
"""

from __future__ import annotations

import json
import platform
import re
import shlex
from pathlib import Path
from typing import Any

import bpy

from ...contract import InputError, JobId
from ...contract.catalog import Family
from ...contract.media_info import FRAME_PREFIX
from ...farm.farm_job import FarmJob
from .. import preferences
from ..scene.frame_sources import NO_FRAMES, FrameRange, FrameSource, find_frame_source, frame_source_datablock
from ..scene.video_source import NUMBERED
from .frame_jobs import frame_range_property

FLAMENCO_SUBMISSION = "flamenco-job.json"
TOOLS: dict[str, tuple[JobId, Family, dict[str, Any]]] = {
    "REMOVE_BACKGROUND": (JobId.REMOVE_BACKGROUND, Family("background"), {"output_kind": "foreground"}),
    "UPSCALE_2": (JobId.UPSCALE_IMAGE, Family("upscale"), {"scale": 2}),
    "UPSCALE_4": (JobId.UPSCALE_IMAGE, Family("upscale"), {"scale": 4}),
}


class IMAGEFORGE_OT_send_to_farm(bpy.types.Operator):
    """Write a render-farm job (Deadline/OpenJD bundle or Flamenco job) that runs a Frames tool on every frame \
of the active strip, movie clip or image sequence"""

    bl_idname = "imageforge.send_to_farm"
    bl_label = "Send to Farm…"
    bl_options = {"REGISTER"}

    tool: bpy.props.EnumProperty(
        name="Tool",
        items=(
            ("REMOVE_BACKGROUND", "Remove Background", "Remove the background of every frame"),
            ("UPSCALE_2", "Upscale 2×", "Upscale every frame 2×"),
            ("UPSCALE_4", "Upscale 4×", "Upscale every frame 4×"),
        ),
        default="REMOVE_BACKGROUND",
    )
    farm: bpy.props.EnumProperty(
        name="Farm",
        items=(
            ("OPENJD", "Deadline (OpenJD)", "An Open Job Description bundle for Deadline Cloud or any OpenJD farm"),
            ("FLAMENCO", "Flamenco", "The ImageForge job type and the job to submit to a Flamenco Manager"),
        ),
        default="OPENJD",
    )
    frame_range: frame_range_property()
    deliver: bpy.props.EnumProperty(
        name="Result",
        items=(
            ("PNG_SEQUENCE", "PNG Sequence", "The frames, lossless with alpha (what the tool makes here)"),
            ("VIDEO", "Video", "One video in the source's codec family, frame rate and audio"),
        ),
        default="PNG_SEQUENCE",
    )
    chunk_size: bpy.props.IntProperty(name="Chunk Size", description="Frames per farm task", default=10, min=1,
                                      max=10000)  # fmt: skip
    directory: bpy.props.StringProperty(
        name="Write To",
        description="Folder for the farm job, the frames and the result (default: beside the source); "
        "every worker must reach it",
        subtype="DIR_PATH",
        default="",
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if frame_source_datablock(context) is None:
            cls.poll_message_set(NO_FRAMES)
            return False
        return True

    def invoke(self, context: bpy.types.Context, _event: Any) -> set[str]:
        return context.window_manager.invoke_props_dialog(self, width=420)

    def execute(self, context: bpy.types.Context) -> set[str]:
        try:
            source = find_frame_source(context, FrameRange(self.frame_range))
            job = self.farm_job(source)
            message = self.write(job)
        except (InputError, OSError) as error:
            self.tell("WARNING", str(error))
            return {"CANCELLED"}
        self.tell("INFO", message)
        return {"FINISHED"}

    def tell(self, level: str, message: str) -> None:
        self.report({level}, message)

    def farm_job(self, source: FrameSource) -> FarmJob:
        job_id, family, settings = TOOLS[self.tool]
        prefs = preferences.get_preferences()
        settings = {
            **settings,
            "sequence_output": "video" if self.deliver == "VIDEO" else "png_sequence",
            "model": preferences.job_model(prefs, family),
            "device": preferences.job_device(prefs).value,
            "max_input_size": preferences.job_max_input_size(prefs),
        }
        if settings["model"] is None:
            del settings["model"]
        first, last = frame_numbers(source)
        base = Path(bpy.path.abspath(self.directory)) if self.directory else source.path.parent
        folder = base / f"{_safe(source.name)}.{job_id.value}"
        return FarmJob(
            job=job_id.value,
            settings=settings,
            input=source.job_input,
            frames_folder=str(folder / "frames"),
            output_folder=str(folder),
            first=first,
            last=last,
            chunk_size=self.chunk_size,
            video=self.deliver == "VIDEO",
            name=f"ImageForge {job_id.value} {source.name}",
        )

    def write(self, job: FarmJob) -> str:
        folder = Path(job.output_folder)
        if self.farm == "OPENJD":
            from ...farm.openjd import write_bundle

            bundle = write_bundle(job, folder / "openjd-bundle")
            return (
                f"Wrote the farm job ({job.chunks()} task(s) of {job.chunk_size} frame(s), frames {job.frame_range}) "
                f"to '{bundle}'; submit it with: deadline bundle submit {shlex.quote(str(bundle))}"
            )
        from ...farm.flamenco import JOB_TYPE_NAME, job_settings, write_job_type

        folder.mkdir(parents=True, exist_ok=True)
        script = write_job_type(folder)
        submission = {
            "name": job.title,
            "type": JOB_TYPE_NAME,
            "priority": 50,
            "submitter_platform": _platform(),
            "settings": job_settings(job),
            "metadata": {"blend": bpy.data.filepath or "unsaved"},
        }
        path = folder / FLAMENCO_SUBMISSION
        path.write_text(json.dumps(submission, indent=2) + "\n", encoding="utf-8")
        return (
            f"Wrote the Flamenco job ({job.chunks()} task(s), frames {job.frame_range}) to '{path}'; copy "
            f"'{script.name}' into the Manager's scripts/ folder once, then submit it with: curl -X POST "
            f"http://MANAGER:8080/api/v3/jobs -H 'Content-Type: application/json' -d @{shlex.quote(str(path))}"
        )


def frame_numbers(source: FrameSource) -> tuple[int, int]:
    """The numbers of the first and last frame the tool would process (a movie's from 1, a sequence's own)."""
    if source.movie:
        return source.first_frame + 1, source.first_frame + source.frame_count
    numbered = NUMBERED.match(source.path.name)
    if numbered is None:
        raise InputError(f"'{source.path.name}' has no frame number; the farm needs a numbered sequence.")
    prefix, _digits, extension = numbered.groups()
    pattern = re.compile(rf"^{re.escape(prefix)}(\d+){re.escape(extension)}$", re.IGNORECASE)
    numbers = sorted(int(hit.group(1)) for entry in source.path.parent.iterdir() if (hit := pattern.match(entry.name)))
    chosen = numbers[source.first_frame : source.first_frame + source.frame_count]
    if not chosen:
        raise InputError(f"'{source.name}' has no frames on disk in '{source.path.parent}'.")
    return chosen[0], chosen[-1]


def _safe(name: str) -> str:
    return re.sub(r"[^\w.-]+", "_", name).strip("._") or FRAME_PREFIX.rstrip("_")


def _platform() -> str:
    return {"Darwin": "darwin", "Windows": "windows"}.get(platform.system(), "linux")


CLASSES = (IMAGEFORGE_OT_send_to_farm,)
