"""Atomic output: a result name only ever names a complete file.

Every writer writes to a hidden temporary name beside the result (same folder, so the final rename never
crosses file systems) and renames it with `os.replace` once the file is complete. If writing fails or the
job is cancelled mid-write, the temporary is deleted and the exception propagates: the add-on never picks
up half a PNG because a name it expected exists.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


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
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
