"""Where a COLMAP export (colmap.zip, docs/jobs.md) is unpacked: a folder of `sparse/0/*.txt` and `images/`, the
layout COLMAP and the Gaussian-splatting trainers read.

The job folder is cleaned up by the retention policy, so the archive is unpacked somewhere that lasts: the
folder the user chose, or `<clip> COLMAP` beside the saved .blend file. Only the model's own members are
written (a name outside `sparse/` and `images/`, absolute, or climbing with `..` is refused before anything is
written), into a staging folder first, then moved in place member by member, so a broken archive leaves the
folder as it was.

A folder the user picked may hold files of their own: an export never replaces a file it did not write. Each
export lists what it wrote in `imageforge-colmap.json`; a later export into the same folder replaces those files
and removes the ones the new model no longer has (fewer frames), so `images/` never mixes two exports. Any
other file in `sparse/` or `images/` stops the export before the job runs, and again before anything is
written, with a sentence naming it.

No bpy here.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from ...contract import InputError

MEMBERS = ("sparse", "images")
REQUIRED = ("sparse/0/cameras.txt", "sparse/0/images.txt", "sparse/0/points3D.txt")
MANIFEST = "imageforge-colmap.json"


def default_folder(blend_file: str, label: str) -> Path | None:
    """`<clip> COLMAP` beside the saved .blend file; None when it is not saved."""
    return Path(blend_file).parent / f"{label} COLMAP" if blend_file else None


def check_destination(folder: Path) -> None:
    """Refuse a folder whose `sparse/` or `images/` hold files an earlier export did not write."""
    foreign = _foreign_files(folder, _written_before(folder))
    if foreign:
        others = f" and {len(foreign) - 1} other file(s)" if len(foreign) > 1 else ""
        raise InputError(
            f"The COLMAP Folder '{folder}' already holds '{foreign[0]}'{others} that ImageForge did not write; "
            "choose an empty folder (an export never replaces files of yours)."
        )


def unpack_colmap(archive: Path, folder: Path) -> Path:
    """The archive's COLMAP model and images into `folder` (created); files of an earlier export there are
    replaced or removed, anyone else's refused."""
    try:
        with zipfile.ZipFile(archive) as opened:
            names = [info.filename for info in opened.infolist() if not info.is_dir()]
            for name in names:
                _check_member(name, archive)
            missing = [name for name in REQUIRED if name not in names]
            if missing:
                raise InputError(f"The COLMAP export '{archive.name}' lacks {', '.join(missing)}.")
            check_destination(folder)
            earlier = _written_before(folder)
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=folder, prefix=".colmap-") as staging:
                opened.extractall(staging, names)
                for name in names:
                    target = folder / name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.move(str(Path(staging) / name), target)
            for name in sorted(earlier - set(names)):  # the earlier export's frames this model no longer has
                (folder / name).unlink(missing_ok=True)
            (folder / MANIFEST).write_text(json.dumps({"files": sorted(names)}, indent=1) + "\n", encoding="utf-8")
    except zipfile.BadZipFile as error:
        raise InputError(f"The COLMAP export '{archive.name}' is not a readable ZIP archive ({error}).") from error
    return folder


def _written_before(folder: Path) -> set[str]:
    """The members an earlier export wrote into `folder` (its manifest); empty when there is none or it is bad."""
    try:
        files = json.loads((folder / MANIFEST).read_text(encoding="utf-8")).get("files", [])
    except (OSError, ValueError, AttributeError):
        return set()
    return {name for name in files if isinstance(name, str) and _is_member(name)}


def _foreign_files(folder: Path, ours: set[str]) -> list[str]:
    found: list[str] = []
    for member in MEMBERS:
        top = folder / member
        if top.is_symlink() or top.is_file():
            found.append(member)
        elif top.is_dir():
            for path in sorted(top.rglob("*")):
                name = path.relative_to(folder).as_posix()
                if (path.is_symlink() or not path.is_dir()) and name not in ours:
                    found.append(name)
    return found


def _is_member(name: str) -> bool:
    path = PurePosixPath(name)
    return not (path.is_absolute() or ".." in path.parts or "\\" in name or not path.parts) and path.parts[0] in MEMBERS


def _check_member(name: str, archive: Path) -> None:
    if not _is_member(name):
        raise InputError(f"The COLMAP export '{archive.name}' holds a file outside its model: '{name}'.")
