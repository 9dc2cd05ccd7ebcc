"""The storage root is private to its user: folders 0700, files 0600, whatever the user's umask.

Job folders hold the user's images and results, and the root holds the server's token; the threat model is
another local user (openspec/0010). The client creates the root with `make_private_folder`; the server
process runs with `PRIVATE_UMASK`, so every job folder, output, log and model file it creates is private, and
`make_storage_private` tightens what an earlier version (or the client's umask) left readable.
Windows has no POSIX modes: there a user's profile folder already keeps others out, and these are no-ops.
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from .storage_trust import check_storage_root

PRIVATE_FOLDER_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
PRIVATE_UMASK = 0o077
PRIVATE_SUBFOLDERS = ("jobs", "models")


class StorageNotWritableError(RuntimeError):
    """The storage root cannot be created or written (a read-only drive, no permission, a full disk); the
    message says so in one sentence that names the folder and what to do."""


def make_writable_private_folder(path: Path) -> Path:
    """`make_private_folder`, then proof that this process can create a file there (a probe, removed at once).

    Raises StorageNotWritableError instead of the bare OSError a read-only root would give on its first write
    (the start lock, the environment, a job folder), so the user reads which folder and what to do."""
    try:
        make_private_folder(path)
        handle, probe = tempfile.mkstemp(prefix=".write-probe-", dir=path)
        os.close(handle)
        os.unlink(probe)
    except OSError as error:
        raise StorageNotWritableError(unwritable_sentence(Path(path), error)) from error
    return Path(path)


def unwritable_sentence(root: Path, error: OSError) -> str:
    """One sentence for an OSError met while writing into the storage root `root`."""
    if error.errno == errno.EROFS:
        why = "is on a read-only drive"
    elif error.errno in (errno.EACCES, errno.EPERM):
        why = "cannot be written by this user"
    elif error.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        why = "is on a full disk"
    else:
        why = f"cannot be written ({error.strerror or error})"
    return (
        f"The Storage Root {root} {why}; choose a folder you can write to as Storage Root in the add-on's "
        "preferences (or --storage-root), or free that folder, then try again."
    )


def make_private_folder(path: Path) -> Path:
    """Create `path` (and missing parents inside it) as 0700, independent of the umask; returns it.

    Then the result is checked to be ours and writable by nobody else (contract/storage_trust.py): another user
    may have created it first, between a check of the folder above and this creation."""
    path = Path(path)
    if path.exists():
        check_storage_root(path)  # tighten only what nobody else could have written: never repair that
    missing = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    path.mkdir(parents=True, exist_ok=True)
    for folder in (path, *missing):
        _chmod(folder, PRIVATE_FOLDER_MODE)
    check_storage_root(path)
    return path


def make_storage_private(storage_root: Path) -> None:
    """Tighten the root, its `jobs/` and `models/` folders and the root's own files (logs, records) in place.

    Folders below stay as they are: nobody else can pass through a 0700 root. Links are left alone, as is
    everything on a read-only root or owned by someone else (`models list` may read a shared root).
    """
    root = Path(storage_root)
    if os.name == "nt" or not root.is_dir():
        return
    _chmod(root, PRIVATE_FOLDER_MODE)
    for name in PRIVATE_SUBFOLDERS:
        _chmod(root / name, PRIVATE_FOLDER_MODE)
    for entry in root.iterdir():
        if entry.is_file() and not entry.is_symlink():
            _chmod(entry, PRIVATE_FILE_MODE)


def _chmod(path: Path, mode: int) -> None:
    if os.name == "nt":
        return
    try:
        status = path.lstat()
        if not path.is_symlink() and status.st_uid == os.geteuid() and status.st_mode & 0o777 != mode:
            path.chmod(mode)
    except OSError:  # missing, read-only file system, or not ours: nothing to tighten
        pass
