"""What each `imageforge` sub-command does. Errors propagate to main's boundary."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..client.environment import default_storage_root
from ..client.job_runner import JobCancelledError, make_runtime, run_job
from ..client.server_runtimes import LABELS as RUNTIME_LABELS
from ..client.server_runtimes import check_runtime, chosen_runtime, environment_of
from ..client.setup import environment_ready, package_source, prepare_environment
from ..contract import JOB_SPECS, InputError, JobSpec, job_spec
from ..contract.parameters import field_docs, path_parameters, with_absolute_paths
from ..contract.provenance import Provenance
from ..contract.results import ResultName
from .arguments import parse_assignments
from .cancellation import StopSignals, TerminatedError
from .device_report import print_warnings, result_summary
from .progress import ProgressPrinter

# What only some commands need is imported inside them: `run` attached to a lingering server is mostly this
# process's start-up (issue 16: a second run within the linger time costs <= 0.3 s more than its job).
if TYPE_CHECKING:
    from blendjob import JobResult

    from ..client.model_exchange import FileTransfer
    from ..client.retention import RetentionPlan
    from .output_placement import OutputFolder

__all__ = [
    "JobCancelledError",
    "TerminatedError",
    "batch",
    "farm_assemble",
    "farm_flamenco_job_type",
    "farm_flamenco_settings",
    "farm_openjd",
    "farm_setup_worker",
    "job_files",
    "jobs",
    "models_convert",
    "models_download",
    "models_export",
    "models_import",
    "models_list",
    "models_verify",
    "run",
    "setup",
]


def _storage_root(args: argparse.Namespace) -> Path:
    return Path(args.storage_root).expanduser().resolve() if args.storage_root else default_storage_root()


def _say(message: str) -> None:
    print(message, file=sys.stderr)


def setup(args: argparse.Namespace) -> int:
    if args.export_wheelhouse:
        return _export_wheelhouse(args)
    root = _storage_root(args)
    prepare_environment(
        root,
        report=_say,
        force=args.force,
        index=args.index,
        wheelhouse=Path(args.wheelhouse) if args.wheelhouse else None,
        python_mirror=args.python_mirror,
        python_archive=Path(args.python_archive) if args.python_archive else None,
        runtime=args.runtime,
    )
    _say(f"Packages from: {package_source(root) or 'not recorded (set up by an older version)'}")
    _say(f"ONNX Runtime: {RUNTIME_LABELS[chosen_runtime(root)]}")
    return 0


def _export_wheelhouse(args: argparse.Namespace) -> int:
    from ..client.package_indexes import index_order
    from ..client.wheelhouse import export_wheelhouse, platform_pins

    if not args.platform:
        raise InputError("--export-wheelhouse needs --platform windows, macos or linux.")
    runtime = args.runtime or "default"
    system, machine = {"windows": ("Windows", "AMD64"), "linux": ("Linux", "x86_64")}.get(
        args.platform, ("Darwin", "arm64")
    )
    check_runtime(runtime, system=system, machine=machine)
    pins = platform_pins(args.platform, environment_of(runtime))
    folder = Path(args.export_wheelhouse)
    wheels = export_wheelhouse(folder, args.platform, index_order(args.index), pins=pins, report=print)
    _say(f"{len(wheels)} wheels for {args.platform} in {args.export_wheelhouse}, each with its pinned SHA-256; "
         f"on the offline machine: imageforge setup --wheelhouse {args.export_wheelhouse}")  # fmt: skip
    return 0


def run(args: argparse.Namespace) -> int:
    spec, parameters, given = _typed_parameters(args)
    if args.into:
        if args.output:
            raise InputError("--into writes frames for a farm and --output copies a job's results; give one of them.")
        from .frames_into import run_into

        root = _storage_root(args)
        summary = run_into(
            spec,
            _given(spec, parameters, given),
            into=args.into,
            frames=args.frames,
            run_job=lambda job, values: _run_on_server(root, job, values),
            say=_say,
        )
        print(json.dumps(summary, indent=2))
        return 0
    if args.frames:
        raise InputError("--frames picks the frames of an --into run; give --into DIR too (or use first_frame).")
    output = None
    if args.overwrite and not args.output:
        raise InputError("--overwrite only applies to the files --output copies; give --output FOLDER too.")
    if args.output:  # checked before the job runs, not after hours of video
        from .output_placement import OutputFolder

        inputs = [getattr(parameters, name) for name in path_parameters(spec.parameters) if getattr(parameters, name)]
        output = OutputFolder.checked(args.output, inputs=inputs, overwrite=args.overwrite)
    result = _run_on_server(_storage_root(args), spec.id.value, spec.request(parameters))
    provenance = Provenance.of_result(result)
    print_warnings(provenance, _say)
    files = {name: result.file(name) for name in result.value}
    if output is not None:
        files = _copy_results(files, Path(result.directory).resolve(), output)
    print(json.dumps(result_summary(files, provenance), indent=2))
    return 0


def _copy_results(files: dict[str, Path], job_folder: Path, output: OutputFolder) -> dict[str, Path]:
    """Copy the result files into the output folder; returns where each result's file landed.

    A result in a subfolder of the job folder is the first file of a set (a PNG sequence names its first
    frame): the whole subfolder is copied as one folder, and the copy of that first file is returned.
    """
    relative = {name: path.relative_to(job_folder) for name, path in files.items()}
    sources = {parts.parts[0]: job_folder / parts.parts[0] for parts in relative.values()}
    placement = output.place(sources)
    if placement.taken:
        taken = ", ".join(f"'{path}'" for path in placement.taken)
        _say(f"{taken} already existed; the results were written beside, with a number (--overwrite replaces files).")
    return {name: placement.paths[parts.parts[0]].joinpath(*parts.parts[1:]) for name, parts in relative.items()}


def _run_on_server(root: Path, job_type: str, parameters: dict[str, Any]) -> JobResult:
    """Run one job on the folder's shared server (attaching, or starting one), then leave it to linger; a stop
    signal cancels the job (cli/cancellation.py)."""
    if not environment_ready(root):
        prepare_environment(root, report=_say)
    runtime = make_runtime(root)
    printer = ProgressPrinter()
    with StopSignals(_say) as stop:
        try:
            return run_job(runtime, job_type, parameters, on_progress=printer, cancel_requested=stop.requested)
        except JobCancelledError:
            stop.raise_if_terminated()
            raise
        finally:
            printer.finish()
            runtime.server.detach()


def farm_assemble(args: argparse.Namespace) -> int:
    from .farm import assemble

    spec, parameters = _checked_parameters(args)
    root = _storage_root(args)
    summary = assemble(
        spec,
        parameters,
        into=args.into,
        output=args.output,
        run_job=lambda job, values: _run_on_server(root, job, values),
        say=_say,
        frames=args.frames,
    )
    print(json.dumps(summary, indent=2))
    return 0


def _farm_job(args: argparse.Namespace) -> Any:
    from .farm import farm_job, inspect

    spec, parameters = _checked_parameters(args)
    root = _storage_root(args)
    media = inspect(parameters, lambda job, values: _run_on_server(root, job, values))
    return farm_job(
        spec, parameters, media, chunk_size=args.chunk_size, into=args.into, output=args.output,
        frames=args.frames, name=args.name,
    )  # fmt: skip


def farm_openjd(args: argparse.Namespace) -> int:
    from .farm import write_openjd

    print(json.dumps(write_openjd(_farm_job(args), args.out, say=_say), indent=2))
    return 0


def farm_flamenco_settings(args: argparse.Namespace) -> int:
    from ..farm.flamenco import job_settings

    job = _farm_job(args)
    print(json.dumps({"name": job.title, "type": "imageforge", "settings": job_settings(job)}, indent=2))
    return 0


def farm_flamenco_job_type(args: argparse.Namespace) -> int:
    from ..farm.flamenco import write_job_type

    path = write_job_type(Path(args.directory).expanduser())
    _say(f"Wrote {path}; restart the Flamenco Manager (or reload its job types) to offer 'ImageForge frames'.")
    print(path)
    return 0


def farm_setup_worker(args: argparse.Namespace) -> int:
    from .farm import setup_worker, studio_folder

    spec, parameters = _checked_parameters(args)
    root = _storage_root(args)
    summary = setup_worker(
        spec,
        parameters,
        root=root,
        prepare=lambda: None if environment_ready(root) else (prepare_environment(root, report=_say), None)[1],
        run_job=lambda job, values: _run_on_server(root, job, values),
        say=_say,
        models_from=studio_folder(os.environ.get("IMAGEFORGE_MODEL_MIRROR")),
    )
    print(json.dumps(summary, indent=2))
    return 0


def _typed_parameters(args: argparse.Namespace) -> tuple[JobSpec[Any], Any, set[str]]:
    """The job's spec, its typed parameters from the `key=value` words (checked before any server starts; path
    parameters and mask files made absolute, since the server's working folder is the storage root), and the
    names the user gave."""
    spec = job_spec(args.job)
    given = parse_assignments(args.parameters)
    return spec, with_absolute_paths(spec.parse(given), _absolute), set(given)


def _given(spec: JobSpec[Any], parameters: Any, given: set[str]) -> dict[str, Any]:
    """The fields the user gave, as the typed parameters serialise them (what a farm job records and repeats)."""
    request = spec.request(parameters)
    return {name: request[name] for name in given}


def _checked_parameters(args: argparse.Namespace) -> tuple[JobSpec[Any], dict[str, Any]]:
    """The job's spec and the parameters the user gave, checked and serialised once (see `_typed_parameters`)."""
    spec, parameters, given = _typed_parameters(args)
    return spec, _given(spec, parameters, given)


def _absolute(path: str) -> str:
    return os.path.abspath(os.path.expanduser(path))


def batch(args: argparse.Namespace) -> int:
    from .batch import batch as run_batch

    return run_batch(args, _storage_root(args), _say)


def jobs(_args: argparse.Namespace) -> int:
    for spec in JOB_SPECS.values():
        print(f"{spec.id.value}  ({spec.label})")
        for field in field_docs(spec.parameters):
            default = "required" if field["required"] else f"default {json.dumps(field['default'])}"
            print(f"    {field['name']}: {field['type']}, {default} — {field['doc']}")
        print(f"    results: {', '.join(spec.results)}")
    return 0


def models_list(args: argparse.Namespace) -> int:
    from ..contract.catalog import load_catalog
    from ..contract.cpu_copies import read_record
    from ..contract.model_files import file_path, model_status

    root = _storage_root(args)
    for entry in load_catalog(storage_root=root).models:
        size = f"{entry.declared_size / 1e6:.0f} MB" if entry.declared_size else "size unknown"
        state = model_status(root, entry).summary
        records = (read_record(file_path(root, entry, model_file)) for model_file in entry.files)
        copies = "; ".join(record.summary for record in records if record is not None and record.summary)
        state = f"{state} ({copies})" if copies else state
        marker = "*" if entry.default else " "
        print(f"{marker} {entry.key:<26} {entry.family:<10} {size:>12}  {entry.license:<13} {state}")
    return 0


def models_download(args: argparse.Namespace) -> int:
    from ..contract.catalog import load_catalog

    root = _storage_root(args)
    load_catalog(storage_root=root).get(args.key)  # unknown keys fail here with the list of valid ones
    result = _run_on_server(root, "download-model", {"model": args.key})
    print(result.file(ResultName.MANIFEST).read_text(encoding="utf-8"))
    return 0


def models_convert(args: argparse.Namespace) -> int:
    """Convert a model on this machine through the job server (convert-model); prints the new file's path."""
    from ..contract.conversions import load_conversions

    conversions = load_conversions()
    conversion = conversions.get(args.key)  # unknown keys fail here with the list of valid ones
    _say(
        f"Converting {conversion.label}: a converter environment (about "
        f"{conversions.environment.approximate_bytes / 1e9:.1f} GB, once), the official weights (about "
        f"{conversion.approximate_download_bytes / 1e6:.0f} MB), then an export of several minutes; Ctrl-C cancels."
    )
    result = _run_on_server(_storage_root(args), "convert-model", {"model": args.key})
    report = json.loads(result.file(ResultName.CONVERSION).read_text(encoding="utf-8"))
    _say(f"{report['model']} is ready and is now {conversion.result.purpose}.")
    print(report["path"])
    return 0


def models_verify(args: argparse.Namespace) -> int:
    from ..contract.catalog import load_catalog
    from ..contract.model_files import model_status

    root = _storage_root(args)
    failures = 0
    for entry in load_catalog(storage_root=root).models:
        for item in model_status(root, entry, use_cache=False).files:
            if item.state.value != "missing":
                print(f"{item.state.value:<10} {entry.key} {item.file.path}")
                failures += not item.ready
    if failures:
        _say(f"{failures} file(s) damaged; 'imageforge models download KEY' fetches them again.")
    return 1 if failures else 0


def models_export(args: argparse.Namespace) -> int:
    from ..client.model_exchange import export_models

    return _exchange_summary(export_models(_storage_root(args), Path(args.folder), report=print), "exported")


def models_import(args: argparse.Namespace) -> int:
    from ..client.model_exchange import import_models

    return _exchange_summary(import_models(_storage_root(args), Path(args.folder), report=print), "imported")


def _exchange_summary(transfers: list[FileTransfer], verb: str) -> int:
    """One line per file came before; then the count, and exit 1 when a file was damaged or none was found."""
    from ..client.model_exchange import TransferState

    damaged = [item for item in transfers if item.state is TransferState.DAMAGED]
    done = sum(item.state in (TransferState.COPIED, TransferState.ALREADY_THERE) for item in transfers)
    if not transfers:
        _say(f"No model files {verb}: none is ready here, or the folder holds none of the catalog's.")
    else:
        _say(f"{done} file(s) {verb} and verified" + (f"; {len(damaged)} damaged, not copied." if damaged else "."))
    return 1 if damaged or not transfers else 0


def job_files(args: argparse.Namespace) -> int:
    """Apply the retention policy: through the folder's running server (it refuses while a job runs), or
    directly while holding the storage lock, so that no server starts meanwhile. Both routes delete by one rule
    (client/retention.py) and report what really went."""
    from blendjob.storage import StorageLock

    from ..client.retention import (
        Deletion,
        RetentionPolicy,
        delete_folders,
        jobs_folder_problem,
        plan_retention,
        scan_job_folders,
        server_deletion,
    )
    from ..client.storage_holder import acquire_or_explain
    from ..contract import ImageForgeError

    root = _storage_root(args)
    if (problem := jobs_folder_problem(root)) is not None:
        raise ImageForgeError(problem)
    policy = RetentionPolicy(max_age_days=args.max_age_days, max_total_bytes=int(args.max_total_gb * 1024**3))

    def plan() -> RetentionPlan:
        return plan_retention(scan_job_folders(root), policy, protected_paths=[Path(p) for p in args.protect])

    runtime = make_runtime(root)
    connection = runtime.server.attach_running()
    if connection is not None:
        try:
            planned = plan()
            deletion = Deletion(())
            if not args.dry_run and planned.delete:
                cleared = connection.client.clear_job_files([f.job_id for f in planned.delete])
                deletion = server_deletion(planned, cleared)
        finally:
            runtime.server.detach()
    else:
        lock = StorageLock()
        try:
            acquire_or_explain(lock, root, "clean up job files")
        except RuntimeError as error:
            raise ImageForgeError(str(error)) from error
        try:
            planned = plan()
            deletion = Deletion(()) if args.dry_run else delete_folders(planned, root)
        finally:
            lock.release()
    kept = len(planned.keep) + len(planned.protected) + len(deletion.kept)
    kept_bytes = planned.kept_bytes + sum(folder.bytes for folder, _ in deletion.kept)
    if args.dry_run:
        for folder in planned.delete:
            print(f"would delete {folder.job_id}  {folder.bytes / 1e6:.1f} MB")
        done, verb, freed = len(planned.delete), "would free", planned.freed_bytes
    else:
        for folder in deletion.deleted:
            print(f"deleted {folder.job_id}  {folder.bytes / 1e6:.1f} MB")
        for folder, reason in deletion.kept:
            print(f"kept {folder.job_id}: {reason}")
        done, verb, freed = len(deletion.deleted), "freed", deletion.freed_bytes
    print(
        f"{done} folder(s), {verb} {freed / 1e6:.1f} MB; "
        f"kept {kept} ({len(planned.protected)} protected), {kept_bytes / 1e6:.1f} MB"
    )
    return 0
