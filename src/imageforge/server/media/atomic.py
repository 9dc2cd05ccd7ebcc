"""Atomic output: a result name only ever names a complete file.

Every writer writes to a hidden temporary name beside the result (same folder, so the final rename never
crosses file systems) and renames it with `os.replace` once the file is complete. If writing fails or the
job is cancelled mid-write, the temporary is deleted and the exception propagates: the add-on never picks
up half a PNG because a name it expected exists. A full disk becomes a `DiskFullError` measured before the
temporary goes: the folder, what is free, and how much of the file had been written.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ...contract.byte_counts import folder_bytes
from ...contract.errors import disk_full, is_disk_full


def temporary_name(final: Path) -> Path:
    """A hidden sibling of `final` that keeps its extension (some encoders choose by extension)."""
    return final.with_name(f".{final.stem}.partial-{uuid.uuid4().hex[:8]}{final.suffix}")


@contextmanager
def atomic_file(final: Path) -> Iterator[Path]:
    """Yield a temporary path to write; on success it becomes `final`, on any exception it is deleted."""
    final = Path(final)
    temporary = temporary_name(final)
    try:
        yield temporary
        if not temporary.is_file():
            raise FileNotFoundError(f"The writer produced no file for {final.name}")
        os.replace(temporary, final)
    except OSError as error:
        full = _disk_full(error, final, temporary)
        temporary.unlink(missing_ok=True)
        if full is None:
            raise
        raise full from error
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


@contextmanager
def atomic_directory(final: Path) -> Iterator[Path]:
    """Like `atomic_file` for a folder of files (a PNG sequence): the folder appears whole or not at all."""
    final = Path(final)
    temporary = temporary_name(final)
    temporary.mkdir()
    try:
        yield temporary
        if final.exists():
            shutil.rmtree(final)
        os.replace(temporary, final)
    except OSError as error:
        full = _disk_full(error, final, temporary)
        shutil.rmtree(temporary, ignore_errors=True)
        if full is None:
            raise
        raise full from error
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise


def _disk_full(error: OSError, final: Path, temporary: Path) -> Exception | None:
    if not is_disk_full(error):
        return None
    written = folder_bytes(temporary) if temporary.is_dir() else _size(temporary)
    return disk_full(final.parent, f"writing {final.name}", written=written)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
