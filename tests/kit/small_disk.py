"""A real file system that fills up: a tmpfs of a few hundred kilobytes mounted for one test.

    with small_disk(tmp_path / "disk", 512 * 1024) as folder: ...

Mounting needs root (CAP_SYS_ADMIN); elsewhere the test is skipped with the reason. The mount is private to
its user (mode 0700, as a storage root must be) and lazily unmounted afterwards, even if a file is still open.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def small_disk(folder: Path, size: int) -> Iterator[Path]:
    if getattr(os, "geteuid", lambda: -1)() != 0 or shutil.which("mount") is None:
        pytest.skip("a small real file system needs root to mount a tmpfs")
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "imageforge-test", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)
