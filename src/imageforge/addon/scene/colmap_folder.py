"""Where a COLMAP export (colmap.zip, docs/jobs.md) is unpacked: a folder of `sparse/0/*.txt` and `images/`, the
layout COLMAP and the Gaussian-splatting trainers read.

The job folder is cleaned up by the retention policy, so the archive is unpacked somewhere that lasts: the
folder the user chose, or `<clip> COLMAP` beside the saved .blend file. Only the model's own members are
written (a name outside `sparse/` and `images/`, absolute, or climbing with `..` is refused before anything is
written), into a staging folder first, then moved in place member by member, so a broken archive leaves the
folder as it was.

No bpy here.
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from ...contract import InputError

MEMBERS = ("sparse", "images")
REQUIRED = ("sparse/0/cameras.txt", "sparse/0/images.txt", "sparse/0/points3D.txt")


def default_folder(blend_file: str, label: str) -> Path | None:
    """`<clip> COLMAP` beside the saved .blend file; None when it is not saved."""
    return Path(blend_file).parent / f"{label} COLMAP" if blend_file else None


def unpack_colmap(archive: Path, folder: Path) -> Path:
    """The archive's COLMAP model and images into `folder` (created; files of the same name replaced)."""
    try:
        with zipfile.ZipFile(archive) as opened:
            names = [info.filename for info in opened.infolist() if not info.is_dir()]
            for name in names:
                _check_member(name, archive)
            missing = [name for name in REQUIRED if name not in names]
            if missing:
                raise InputError(f"The COLMAP export '{archive.name}' lacks {', '.join(missing)}.")
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=folder, prefix=".colmap-") as staging:
                opened.extractall(staging, names)
                for name in names:
                    target = folder / name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.move(str(Path(staging) / name), target)
    except zipfile.BadZipFile as error:
        raise InputError(f"The COLMAP export '{archive.name}' is not a readable ZIP archive ({error}).") from error
    return folder


def _check_member(name: str, archive: Path) -> None:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or "\\" in name or not path.parts or path.parts[0] not in MEMBERS:
        raise InputError(f"The COLMAP export '{archive.name}' holds a file outside its model: '{name}'.")
