"""`imageforge` console script: argument parsing and the error boundary (one line, exit code)."""

from __future__ import annotations

import argparse
import sys

from ..contract import ImageForgeError, InputError
from ..contract.conversions import load_conversions
from . import commands

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_CANCELLED = 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="imageforge", description="ImageForge's local AI image jobs, headless.")
    parser.add_argument("--storage-root", help="Server folder (default: $IMAGEFORGE_STORAGE_ROOT or ~/.imageforge)")
    parser.add_argument("--debug", action="store_true", help="Show tracebacks")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="Run one job on the job server and print its result as JSON")
    run.add_argument("job", help="Job id, e.g. remove-background (see `imageforge jobs`)")
    run.add_argument("parameters", nargs="*", metavar="key=value", help="Job parameters (values parsed as JSON)")
    run.add_argument(
        "--output",
        help="Copy the result files into this folder (a taken name gets a numbered one, e.g. 'upscale (2).png')",
    )
    run.add_argument(
        "--overwrite", action="store_true", help="With --output: replace existing files (never an input or a folder)"
    )
    run.add_argument(
        "--into",
        metavar="DIR",
        help="Frame jobs: write each frame as DIR/frame_<source number>.png, safely beside other processes "
        "writing into DIR; frames already there are kept (a farm chunk; see docs/farm.md)",
    )
    run.add_argument(
        "--frames", metavar="A-B", help="With --into: the frames numbered A to B (a video's from 1), e.g. 137-150"
    )
    run.set_defaults(handler=commands.run)

    batch = sub.add_parser(
        "batch",
        help="Run one job on many inputs with one server start and one model load; one JSON line per input",
    )
    batch.add_argument("job", help="Job id, e.g. remove-background")
    batch.add_argument(
        "items", nargs="+", metavar="INPUT or key=value", help="Inputs (stills, videos, frame folders) and parameters"
    )
    batch.add_argument("--output", help="Folder for the results (names never collide nor replace)")
    batch.add_argument(
        "--into",
        metavar="DIR",
        help="Frame jobs: each input's frames into DIR/<input name>/ as `run --into` writes them (docs/farm.md)",
    )
    batch.set_defaults(handler=commands.batch)

    farm = sub.add_parser("farm", help="Run the frame jobs on a render farm (OpenJD/Deadline, Flamenco)")
    farm_sub = farm.add_subparsers(dest="farm_command", required=True)
    assemble = farm_sub.add_parser(
        "assemble", help="Check the chunks' frames and make the deliverable (the video a single run makes)"
    )
    assemble.add_argument("job", help="The frame job the chunks ran, e.g. upscale-image")
    assemble.add_argument("parameters", nargs="*", metavar="key=value", help="The chunks' job parameters")
    assemble.add_argument("--into", required=True, metavar="DIR", help="The folder the chunks wrote into")
    assemble.add_argument("--output", metavar="FOLDER", help="Where the assembled video goes (never replaced)")
    assemble.add_argument("--frames", metavar="A-B", help="The frames numbered A to B (default: the job's range)")
    assemble.set_defaults(handler=commands.farm_assemble)
    openjd = farm_sub.add_parser("openjd", help="Write an Open Job Description bundle (Deadline Cloud) for a frame job")
    flamenco = farm_sub.add_parser("flamenco-settings", help="Print the Flamenco job settings for a frame job")
    for writer in (openjd, flamenco):
        writer.add_argument("job", help="A frame job, e.g. remove-background")
        writer.add_argument("parameters", nargs="*", metavar="key=value", help="Its parameters (input=… required)")
        writer.add_argument("--chunk-size", type=int, default=10, help="Frames per task (default 10)")
        writer.add_argument("--frames", metavar="A-B", help="Frame numbers to make (default: the job's range)")
        writer.add_argument("--into", metavar="DIR", help="Shared frames folder (default: beside the input)")
        writer.add_argument("--output", metavar="FOLDER", help="Where the video goes (default: beside the input)")
        writer.add_argument("--name", default="", help="The farm's name for the job")
    openjd.add_argument("--out", required=True, metavar="BUNDLE", help="The bundle folder to write")
    openjd.set_defaults(handler=commands.farm_openjd)
    flamenco.set_defaults(handler=commands.farm_flamenco_settings)
    job_type = farm_sub.add_parser(
        "flamenco-job-type", help="Write imageforge.js, the Flamenco job type, into DIR (the Manager's scripts/)"
    )
    job_type.add_argument("directory", metavar="DIR")
    job_type.set_defaults(handler=commands.farm_flamenco_job_type)
    setup_worker = farm_sub.add_parser(
        "setup-worker", help="Make this worker ready for a frame job (environment, model, input), before any chunk"
    )
    setup_worker.add_argument("job")
    setup_worker.add_argument("parameters", nargs="*", metavar="key=value")
    setup_worker.set_defaults(handler=commands.farm_setup_worker)

    jobs = sub.add_parser("jobs", help="List jobs and their parameters")
    jobs.set_defaults(handler=commands.jobs)

    setup = sub.add_parser("setup", help="Prepare the server's Python environment in the storage root")
    setup.add_argument("--force", action="store_true", help="Rebuild even when it looks ready")
    setup.add_argument(
        "--index", help="Package index to try first: pypi, tsinghua, aliyun, tencent, ustc or a URL (then the rest)"
    )
    setup.add_argument("--wheelhouse", metavar="DIR", help="Install from this folder of wheels only, no network")
    setup.add_argument("--python-mirror", metavar="URL", help="Where to download Python 3.12 from first")
    setup.add_argument("--python-archive", metavar="FILE", help="A python-build-standalone archive (.tar.gz) to use")
    setup.add_argument(
        "--export-wheelhouse", metavar="DIR", help="Instead: download the pinned wheels of --platform into DIR"
    )
    setup.add_argument("--platform", choices=["windows", "macos", "linux"], help="With --export-wheelhouse")
    setup.add_argument(
        "--runtime",
        choices=["default", "openvino"],
        help="ONNX Runtime build: the platform's (default) or Intel OpenVINO's (x86-64 Linux and Windows); "
        "kept for later commands, a change rebuilds the environment",
    )
    setup.set_defaults(handler=commands.setup)

    job_files = sub.add_parser(
        "job-files", help="Delete old job folders (age and total-size limits), keeping protected files"
    )
    job_files.add_argument("--max-age-days", type=float, default=30.0, help="Delete folders older than this")
    job_files.add_argument("--max-total-gb", type=float, default=5.0, help="Then delete the oldest beyond this")
    job_files.add_argument(
        "--protect", action="append", default=[], metavar="PATH", help="A file that must stay (repeatable)"
    )
    job_files.add_argument("--dry-run", action="store_true", help="Only list what would be deleted")
    job_files.set_defaults(handler=commands.job_files)

    models = sub.add_parser("models", help="List, download, convert or verify models")
    models_sub = models.add_subparsers(dest="models_command", required=True)
    models_sub.add_parser("list", help="Catalog models and whether they are ready").set_defaults(
        handler=commands.models_list
    )
    download = models_sub.add_parser("download", help="Download one model through the job server")
    download.add_argument("key", help="Catalog key, e.g. BEN2_BASE")
    download.set_defaults(handler=commands.models_download)
    convert = models_sub.add_parser(
        "convert",
        help="Make a model on this machine (DA3 with cameras, SAM 2.1) through the job server; prints its path",
    )
    convert.add_argument("key", help=", ".join(item.key for item in load_conversions().conversions))
    convert.set_defaults(handler=commands.models_convert)
    models_sub.add_parser("verify", help="Re-hash every downloaded model file").set_defaults(
        handler=commands.models_verify
    )
    export = models_sub.add_parser(
        "export", help="Copy the downloaded models into a folder (a share, a drive) for machines without a hub"
    )
    export.add_argument("folder", help="Folder to write (the mirror layout: IMAGEFORGE_MODEL_MIRROR can name it)")
    export.set_defaults(handler=commands.models_export)
    imported = models_sub.add_parser(
        "import", help="Copy the models a folder holds into the storage root, each verified by size and SHA-256"
    )
    imported.add_argument("folder", help="A folder 'imageforge models export' wrote")
    imported.set_defaults(handler=commands.models_import)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        status: int = args.handler(args)
        return status
    except KeyboardInterrupt:
        print("imageforge: cancelled", file=sys.stderr)
        return EXIT_CANCELLED
    except commands.TerminatedError as error:
        print(f"imageforge: {error}", file=sys.stderr)
        return 128 + error.signum  # as if the signal had ended it: 143 for SIGTERM, 129 for SIGHUP
    except commands.JobCancelledError as error:
        print(f"imageforge: {error}", file=sys.stderr)
        return EXIT_CANCELLED
    except InputError as error:
        _report(args, error)
        return EXIT_USAGE
    except (ImageForgeError, RuntimeError, OSError) as error:
        _report(args, error)
        return EXIT_FAILED


def _report(args: argparse.Namespace, error: BaseException) -> None:
    if args.debug:
        import traceback  # only with --debug

        traceback.print_exception(error)
    print(f"imageforge: {error}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
