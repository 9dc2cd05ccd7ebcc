"""`imageforge-build --platform <p>`: the Blender extension zip for one platform, built by Blender's own CLI.

The staged extension root is src/imageforge's contents (the add-on, `client/`, `contract/` and `server/`,
which the job server imports from the extension folder) without `cli/`, plus:
- `blender_manifest.toml` with `platforms = [<p>]` and `wheels = [<the BlendJob wheel>]` added;
- `wheels/blendjob-<version>-py3-none-any.whl` (Blender installs it for the add-on);
- `tools/uv[.exe]`, the platform's uv, which the add-on seeds into the Storage Root before setup.
Both come from vendor/ (`imageforge-vendor`). Blender's extension CLI (`blender_ext.py`, shipped in the bpy
wheel, standard library only) validates the staged folder and builds `dist/imageforge-<version>-<p>.zip`.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from .blender_environments import blender_environments
from .vendor import PLATFORMS, PROJECT_ROOT, blendjob_wheel, pinned_version, uv_executable

EXCLUDED = shutil.ignore_patterns("__pycache__", "*.pyc")
EXT_SCRIPT = ("scripts", "addons_core", "bl_pkg", "cli", "blender_ext.py")
EXT_VARIABLE = "IMAGEFORGE_BLENDER_EXT"


class BuildError(RuntimeError):
    """The package could not be built; the message says what is missing or what Blender's CLI said."""


def find_blender_ext(explicit: Path | None = None, project_root: Path = PROJECT_ROOT) -> Path:
    """Blender's extension CLI: given, from $IMAGEFORGE_BLENDER_EXT, this interpreter's bpy, or the newest
    Blender test environment's (.venv-blender-X-Y, blender_environments.py) that is synced."""
    candidates: list[Path] = []
    if explicit:
        candidates.append(Path(explicit))
    if os.environ.get(EXT_VARIABLE):
        candidates.append(Path(os.environ[EXT_VARIABLE]))
    spec = importlib.util.find_spec("bpy")  # locates the wheel without importing Blender
    if spec is not None and spec.origin:
        inside_bpy = Path(spec.origin).parent / "*" / Path(*EXT_SCRIPT)
        candidates += [Path(path) for path in sorted(glob.glob(str(inside_bpy)))]
    for environment in reversed(blender_environments(project_root)):
        pattern = environment.path / "lib" / "python3.*" / "site-packages" / "bpy" / "*" / Path(*EXT_SCRIPT)
        candidates += [Path(path) for path in sorted(glob.glob(str(pattern)))]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise BuildError(
        "Blender's extension CLI (blender_ext.py from the bpy wheel) was not found: run `bash tests/sync` "
        f"(it syncs the .venv-blender-* environments), or pass --blender-ext / set {EXT_VARIABLE}"
    )


def manifest_for(source: str, platform: str, wheel_name: str) -> str:
    """The repository manifest with this build's `platforms` and `wheels`, placed before the first table."""
    if re.search(r"^\s*(platforms|wheels)\s*=", source, flags=re.MULTILINE):
        raise BuildError("blender_manifest.toml must not set platforms or wheels: the build adds them")
    added = f'platforms = ["{platform}"]\nwheels = ["./wheels/{wheel_name}"]\n\n'
    table = re.search(r"^\[", source, flags=re.MULTILINE)
    position = table.start() if table else len(source)
    return source[:position] + added + source[position:]


def stage(destination: Path, platform: str, vendor: Path, project_root: Path = PROJECT_ROOT) -> Path:
    """Lay out the extension root for `platform` in `destination` (which must not exist)."""
    wheel = blendjob_wheel(vendor, pinned_version("blendjob", project_root))
    uv = uv_executable(vendor, platform)
    missing = [path for path in (wheel, uv) if not path.is_file()]
    if missing:
        names = ", ".join(str(path) for path in missing)
        raise BuildError(f"Missing from vendor/: {names}; run `uv run imageforge-vendor`")
    package = project_root / "src" / "imageforge"

    def ignore(directory: str, names: list[str]) -> set[str]:
        top_level_cli = {"cli"} if Path(directory) == package else set()
        return set(EXCLUDED(directory, names)) | top_level_cli  # the CLI is for developers, not Blender

    shutil.copytree(package, destination, ignore=ignore)
    manifest = (project_root / "blender_manifest.toml").read_text(encoding="utf-8")
    (destination / "blender_manifest.toml").write_text(manifest_for(manifest, platform, wheel.name), encoding="utf-8")
    (destination / "wheels").mkdir()
    shutil.copyfile(wheel, destination / "wheels" / wheel.name)
    (destination / "tools").mkdir()
    shutil.copyfile(uv, destination / "tools" / uv.name)
    (destination / "tools" / uv.name).chmod(0o755)
    return destination


def run_blender_ext(blender_ext: Path, *arguments: str) -> str:
    completed = subprocess.run(
        [sys.executable, str(blender_ext), *arguments], capture_output=True, text=True, check=False
    )
    output = (completed.stdout + completed.stderr).strip()
    if completed.returncode:
        raise BuildError(f"Blender's extension CLI failed ({' '.join(arguments[:1])}): {output}")
    return output


def build(
    platform: str,
    *,
    output_dir: Path,
    vendor: Path,
    blender_ext: Path | None = None,
    project_root: Path = PROJECT_ROOT,
) -> Path:
    """Validate and build `dist/imageforge-<version>-<platform>.zip`; returns its path."""
    if platform not in PLATFORMS:
        raise BuildError(f"Unknown platform {platform!r}; choose one of {', '.join(sorted(PLATFORMS))}")
    cli = find_blender_ext(blender_ext, project_root)
    manifest = tomllib.loads((project_root / "blender_manifest.toml").read_text(encoding="utf-8"))
    output = Path(output_dir).resolve() / f"{manifest['id']}-{manifest['version']}-{platform}.zip"
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="imageforge-build-") as temporary:
        root = stage(Path(temporary) / manifest["id"], platform, vendor, project_root)
        run_blender_ext(cli, "validate", str(root))
        output.unlink(missing_ok=True)
        run_blender_ext(cli, "build", "--source-dir", str(root), "--output-filepath", str(output))
    return output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="imageforge-build", description="Build the Blender extension zip.")
    parser.add_argument("--platform", required=True, choices=sorted(PLATFORMS))
    parser.add_argument("--output-dir", type=Path, default=PROJECT_ROOT / "dist")
    parser.add_argument("--vendor-dir", type=Path, default=PROJECT_ROOT / "vendor")
    parser.add_argument("--blender-ext", type=Path, help="Path of Blender's blender_ext.py")
    args = parser.parse_args(argv)
    try:
        path = build(args.platform, output_dir=args.output_dir, vendor=args.vendor_dir, blender_ext=args.blender_ext)
    except BuildError as error:
        print(f"imageforge-build: {error}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
