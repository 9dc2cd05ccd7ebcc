"""Write results as a numbered PNG sequence: the lossless output, and the one that always keeps alpha.

The frames go into a hidden folder that is renamed to the result name when the last frame is written, so
a cancelled job never leaves a folder that looks like a complete sequence. Job results must name files,
so a job returns `first_file` (Blender opens an image sequence from its first frame).
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from types import TracebackType

import numpy as np

from ...contract.media_info import FRAME_DIGITS, FRAME_PREFIX
from .atomic import atomic_directory
from .png_stream import write_png


class PngSequenceWriter:
    """with PngSequenceWriter(job_dir / "foreground", bits=16) as writer: writer.write(number, pixels)

    Files are named `<prefix><number padded to `padding`>.png` (contract/media_info.py's frame_file_name: the
    names `imageforge run --into` gives frames too); numbers are the source's frame numbers (or 1, 2, ... for
    videos) so the result lines up with the source in Blender.
    """

    def __init__(self, directory: Path, *, prefix: str = FRAME_PREFIX, padding: int = FRAME_DIGITS, bits: int = 8):
        self.directory = Path(directory)
        self.prefix, self.padding, self.bits = prefix, padding, bits
        self.numbers: list[int] = []
        self._stack = ExitStack()
        self._temporary: Path | None = None

    def __enter__(self) -> PngSequenceWriter:
        self._temporary = self._stack.enter_context(atomic_directory(self.directory))
        return self

    def file_name(self, number: int) -> str:
        return f"{self.prefix}{number:0{self.padding}d}.png"

    def write(self, number: int, pixels: np.ndarray) -> None:
        """Write one frame ([0, 1] floats: grey, RGB or straight RGBA) at the sequence's bit depth."""
        if self._temporary is None:
            raise RuntimeError("PngSequenceWriter.write outside its with-block")
        if number in self.numbers:
            raise ValueError(f"Frame {number} was written twice")
        write_png(self._temporary / self.file_name(number), pixels, bits=self.bits)
        self.numbers.append(number)

    @property
    def first_file(self) -> Path:
        """The first frame's final path (valid after the with-block): what a job returns as its result."""
        return self.directory / self.file_name(min(self.numbers))

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> bool:
        if kind is None and not self.numbers:
            empty = ValueError(f"No frames were written to {self.directory.name}")
            self._stack.__exit__(ValueError, empty, None)
            raise empty
        return bool(self._stack.__exit__(kind, error, trace))
