"""The error hierarchy. Only the operator or CLI boundary turns these into reports or exit codes.

Every message is one sentence a Blender artist can act on; details go to the job log.
"""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

from .byte_counts import format_bytes


class ImageForgeError(Exception):
    """Base of every error ImageForge raises on purpose."""


class InputError(ImageForgeError):
    """The request or its input is wrong: a bad file, parameter or selection. Shown as a warning."""


class ResultError(ImageForgeError):
    """A job's result cannot be used as it is (files missing or inconsistent with the request): a failure of
    the job, not of the user's input. Shown as an error; nothing is changed."""


class ModelUnavailableError(ImageForgeError):
    """A model is unknown, not downloaded, or could not be fetched."""


class ResourceExhaustedError(ImageForgeError):
    """Memory, disk or a configured budget ran out; the message says what to lower."""


class DiskFullError(ResourceExhaustedError):
    """A disk ran out of space while ImageForge wrote to `folder`; the message says where, what is free, and
    how much the write needed (or had written when it ran out)."""

    def __init__(self, message: str, *, folder: Path, free: int | None):
        super().__init__(message)
        self.folder = folder
        self.free = free


def disk_full(folder: Path, doing: str, *, needed: int | None = None, written: int | None = None) -> DiskFullError:
    """One sentence: "The disk holding <folder> is full (0 B free) while writing result.png: 1.8 MB were written
    before it ran out; free some space …". `needed` (what the write still wanted) when it is known, else
    `written` (how far it came)."""
    free = free_bytes(folder)
    room = f" ({format_bytes(free)} free)" if free is not None else ""
    if needed is not None:
        amount = f": it needed {format_bytes(needed)} more"
    elif written:
        amount = f": {format_bytes(written)} were written before it ran out"
    else:
        amount = ""
    return DiskFullError(
        f"The disk holding {folder} is full{room} while {doing}{amount}; free some space or choose a Storage Root "
        "on a larger disk, then try again.",
        folder=folder,
        free=free,
    )


def is_disk_full(error: BaseException) -> bool:
    return isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT)


def disk_full_cause(error: BaseException) -> OSError | None:
    """The disk-full OSError behind `error` (itself, or what it was raised from or during), if there is one."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if is_disk_full(current):
            assert isinstance(current, OSError)
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def free_bytes(folder: Path) -> int | None:
    """Free bytes on the disk holding `folder` (or its nearest existing parent), None when it cannot be asked."""
    for candidate in (Path(folder), *Path(folder).parents):
        try:
            return shutil.disk_usage(candidate).free
        except OSError:
            continue
    return None
