"""Write a frame while the model runs on the next one: the frame loop's encode and cache writes, off its path.

A frame job's per-frame cost beyond the model is mostly writing: the PNG or video encode and the frame cache's
copy, each a full pass over the result. They release the GIL (zlib, x264, NumPy), so one writer thread runs
them beside the model's next run. Order is kept (one thread, one frame at a time), and memory stays bounded:
at most one frame waits to be written while the next is computed (`submit` first waits for the previous write).
A frame too large to hold twice (`MAX_OVERLAP_BYTES`) is written in line, as before. An error in a write
surfaces at the next `submit` or at `close`, so a failed write still fails the job and a cancel still waits for
the frame being written before the result's partial file is removed.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType

import numpy as np

MAX_OVERLAP_BYTES = 256 * 1024**2  # a 4K RGBA float frame is 127 MiB; 8K ones are written in line


class WriteBehind:
    """with WriteBehind() as behind: behind.submit(write, pixels) … (every write done when the block ends)."""

    def __init__(self, *, enabled: bool = True):
        self.enabled = enabled
        self._pool: ThreadPoolExecutor | None = None
        self._pending: Future[None] | None = None

    def submit(self, write: Callable[[], None], pixels: np.ndarray) -> None:
        """Run `write` (which writes `pixels`) after the previous write, in the writer thread when it may."""
        self.wait()
        if not self.enabled or pixels.nbytes > MAX_OVERLAP_BYTES:
            write()
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="imageforge-frame-writer")
        self._pending = self._pool.submit(write)

    def wait(self) -> None:
        """Wait for the write in flight; its error, if any, is raised here."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def __enter__(self) -> WriteBehind:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        try:
            self.wait()
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)


__all__ = ["MAX_OVERLAP_BYTES", "WriteBehind"]
