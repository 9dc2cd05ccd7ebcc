"""Where `--output` puts a job's result files: checked before the job runs, never destroying a file.

The rules (docs/jobs.md, openspec/0010):
- The output folder is checked before any work: it must not be a file, not be an input (a file, a frame
  folder, or a pattern's folder), and its nearest existing folder must be writable.
- A name already taken is never replaced silently: the whole result set moves to the first free numbered
  name, `upscale (2).png`, `depth (2).exr` with `depth_metadata (2).json`, one number for one run.
  `overwrite=True` replaces existing files instead, but never an input, never a folder, and a symbolic
  link is replaced as a link (its target is never written through).
- Every file is copied under a hidden temporary name in the output folder, flushed, and then linked or
  renamed into place; a full disk or a failed copy leaves nothing under a result name and no temporary.
- A set of files (a PNG sequence) lands as a folder of its own, renamed into place whole; it is never
  merged with an earlier run's folder.

`imageforge run` and `imageforge batch` share this; batch passes its own target names (`names=`) so that
two `photo.png` from different folders never collide.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..contract import ImageForgeError, InputError

_TEMPORARY_TAG = ".imageforge-part-"
_MAX_NUMBER = 9999


class OutputPlacementError(ImageForgeError):
    """A result could not be copied out; nothing was left under its name."""


@dataclass(frozen=True)
class Placement:
    """Where each result landed, and the names that were taken (so it moved to a numbered name)."""

    paths: dict[str, Path]
    taken: tuple[Path, ...] = ()


@dataclass
class OutputFolder:
    """A checked `--output` folder. Build it with `OutputFolder.checked(...)` before the job runs."""

    path: Path
    inputs: tuple[Path, ...] = ()
    overwrite: bool = False
    _input_ids: set[tuple[int, int]] = field(default_factory=set, repr=False)

    @classmethod
    def checked(
        cls, output: str | os.PathLike[str], *, inputs: Iterable[str | os.PathLike[str]] = (), overwrite: bool = False
    ) -> OutputFolder:
        """Check `output` (a folder, possibly not created yet) against the job's input paths; InputError if unfit."""
        path = Path(os.path.abspath(os.path.expanduser(os.fspath(output))))
        locations = tuple(_input_location(Path(os.path.abspath(os.fspath(item)))) for item in inputs)
        if path.exists() and not path.is_dir():
            raise InputError(f"--output '{path}' is a file; give a folder to copy the results into.")
        for location in locations:
            if _same_place(path, location):
                raise InputError(f"--output '{path}' is the job's input; choose another folder for the results.")
        existing = path
        while not existing.exists():
            existing = existing.parent
        if not existing.is_dir():
            raise InputError(f"--output '{path}' cannot be created: '{existing}' is a file.")
        if not os.access(existing, os.W_OK | os.X_OK):
            raise InputError(f"--output '{path}' is not writable; choose a folder you can write to.")
        folder = cls(path, locations, overwrite)
        folder._input_ids = {_identity(location) for location in locations if location.exists()}
        return folder

    def place(self, sources: Mapping[str, Path], *, names: Mapping[str, str] | None = None) -> Placement:
        """Copy each source (a file, or a folder of frames) into the output folder, all or nothing.

        `names` gives a key's target name (default: the source's own name). The set shares one free
        number when any of its names is taken.
        """
        if not sources:
            return Placement({})
        self.path.mkdir(parents=True, exist_ok=True)
        targets = {key: (names or {}).get(key) or Path(source).name for key, source in sources.items()}
        number, taken = self._free_number(sources, targets)
        planned = {
            key: self.path / _numbered(name, number, Path(sources[key]).is_dir()) for key, name in targets.items()
        }
        staged: dict[str, Path] = {}
        try:
            for key, source in sources.items():
                staged[key] = self._stage(Path(source), planned[key])
            for key, temporary in staged.items():
                self._commit(temporary, planned[key])
        finally:
            for temporary in staged.values():
                _remove(temporary)
        return Placement(planned, taken)

    def _free_number(self, sources: Mapping[str, Path], targets: Mapping[str, str]) -> tuple[int, tuple[Path, ...]]:
        taken = tuple(
            self.path / name for key, name in targets.items() if not self._may_use(self.path / name, Path(sources[key]))
        )
        if not taken:
            return 1, ()
        for number in range(2, _MAX_NUMBER + 1):
            if all(
                self._may_use(self.path / _numbered(name, number, Path(sources[key]).is_dir()), Path(sources[key]))
                for key, name in targets.items()
            ):
                return number, taken
        raise OutputPlacementError(f"'{self.path}' already holds {_MAX_NUMBER} copies of '{taken[0].name}'.")

    def _may_use(self, target: Path, source: Path) -> bool:
        """A free name; with overwrite, also an existing file (or link) that is not an input nor a folder."""
        try:
            status = target.lstat()
        except FileNotFoundError:
            return True
        if not self.overwrite or source.is_dir() or target.is_dir() and not target.is_symlink():
            return False
        return (status.st_dev, status.st_ino) not in self._input_ids and not any(
            _same_place(target, location) for location in self.inputs
        )

    def _stage(self, source: Path, target: Path) -> Path:
        """Copy `source` beside `target` under a hidden temporary name, flushed to disk."""
        temporary = target.with_name(f".{target.name}{_TEMPORARY_TAG}{secrets.token_hex(4)}")
        try:
            if source.is_dir():
                temporary.mkdir()
                for item in sorted(source.rglob("*")):
                    if item.is_dir():
                        (temporary / item.relative_to(source)).mkdir(exist_ok=True)
                    else:
                        _copy_file(item, temporary / item.relative_to(source))
            else:
                _copy_file(source, temporary)
        except OSError as error:
            _remove(temporary)
            raise OutputPlacementError(
                f"Could not write '{target}' ({_reason(error)}); nothing was left under that name, "
                f"and the result is still in '{source.parent}'."
            ) from error
        return temporary

    def _commit(self, temporary: Path, target: Path) -> None:
        if temporary.is_dir():
            if os.path.lexists(target):  # a folder is never merged or replaced
                raise OutputPlacementError(f"'{target}' appeared while the results were copied; run again.")
            os.rename(temporary, target)
        elif self.overwrite and os.path.lexists(target):
            os.replace(temporary, target)  # replaces a link itself, never the file it points to
        else:
            _link_without_replacing(temporary, target)


def _link_without_replacing(temporary: Path, target: Path) -> None:
    try:
        os.link(temporary, target)  # fails if the name exists: no window in which a file is replaced
    except FileExistsError as error:
        raise OutputPlacementError(f"'{target}' appeared while the results were copied; run again.") from error
    except OSError:  # a file system without hard links (FAT, some network shares)
        if os.path.lexists(target):
            raise OutputPlacementError(f"'{target}' appeared while the results were copied; run again.") from None
        os.rename(temporary, target)


def _copy_file(source: Path, destination: Path) -> None:
    """Copy content only (the mode follows the user's umask, not the private job folder's 0600)."""
    descriptor = os.open(destination, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    with open(descriptor, "wb") as written, open(source, "rb") as read:
        shutil.copyfileobj(read, written, 1024 * 1024)
        written.flush()
        os.fsync(written.fileno())


def _numbered(name: str, number: int, is_folder: bool) -> str:
    """`upscale.png` → `upscale (2).png`; a folder `upscale` → `upscale (2)`. Number 1 is the name itself."""
    if number == 1:
        return name
    stem, suffix = (name, "") if is_folder else (Path(name).stem, Path(name).suffix)
    return f"{stem} ({number}){suffix}"


def _input_location(path: Path) -> Path:
    """An input names a file or folder; a pattern that names no file (`frame_####.png`) names its folder."""
    return path if path.exists() else path.parent


def _identity(path: Path) -> tuple[int, int]:
    status = path.stat()
    return status.st_dev, status.st_ino


def _same_place(one: Path, other: Path) -> bool:
    try:
        return one.resolve() == other.resolve() or (one.exists() and other.exists() and os.path.samefile(one, other))
    except OSError:
        return False


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _reason(error: OSError) -> str:
    if error.errno in (errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", -1)):
        return "the disk is full"
    return error.strerror or str(error)


__all__ = ["OutputFolder", "OutputPlacementError", "Placement"]
