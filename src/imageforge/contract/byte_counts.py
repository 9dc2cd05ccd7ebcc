"""Byte counts, counted and shown one way everywhere.

`folder_bytes`: what a folder holds (job folders for retention and the panel, a failed job's outputs for a
disk-full message). `format_bytes`: binary units labelled GB/MB/kB, as Blender and Windows show sizes, and as the
preference's Maximum Total Size (GB × 1024³) counts them: a 5 GB limit reads 5.0 GB.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Container
from pathlib import Path


def folder_bytes(folder: Path, *, leaving_out: Container[str] = ()) -> int:
    """Bytes of the regular files inside a folder (links not followed), without the top-level files named in
    `leaving_out`.

    A running job renames files atomically in its folder, so an entry listed a moment ago may be gone: such
    entries (and subfolders that vanish before they are listed) are skipped, never an error.
    """
    total = 0
    for directory, _folders, names in os.walk(folder):  # os.walk skips folders it cannot list
        for name in names:
            if name in leaving_out and Path(directory) == Path(folder):
                continue
            try:
                info = os.lstat(os.path.join(directory, name))
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                total += info.st_size
    return total


def format_bytes(size: int) -> str:
    for unit, scale in (("GB", 1024**3), ("MB", 1024**2)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size / 1024:.0f} kB" if size >= 1024 else f"{size} B"
