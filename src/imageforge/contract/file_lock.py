"""An exclusive advisory lock on a file, across processes: the house's one way to serialise two processes (the
client's server starts, the job server's and the CLI's updates of the verified-model cache).

The lock belongs to the open file: closing it (the end of the `with` block, or the process ending) releases it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from .private_storage import PRIVATE_FILE_MODE

RETRY_SECONDS = 0.05  # Windows' byte-range lock has no blocking form: how often to try again


@contextlib.contextmanager
def exclusive_file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created private if missing) until the block ends; waits for it.

    Raises OSError when the file cannot be created or opened (a read-only folder).
    """
    with os.fdopen(os.open(path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE), "r+b") as stream:
        if sys.platform == "win32":
            import msvcrt

            stream.seek(0)
            while True:
                try:
                    msvcrt.locking(stream.fileno(), msvcrt.LK_NBLCK, 1)
                    break
                except OSError:
                    time.sleep(RETRY_SECONDS)
        else:
            import fcntl

            fcntl.flock(stream, fcntl.LOCK_EX)
        yield
