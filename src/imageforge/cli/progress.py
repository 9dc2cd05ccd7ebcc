"""Show job progress on stderr: a redrawn bar on a terminal, plain changed lines otherwise."""

from __future__ import annotations

import sys
from typing import Any, TextIO

BAR_WIDTH = 30


class ProgressPrinter:
    def __init__(self, stream: TextIO = sys.stderr):
        self.stream = stream
        self.interactive = stream.isatty()
        self.last_line = ""

    def __call__(self, status: dict[str, Any]) -> None:
        fraction = float(status.get("progress") or 0.0)
        message = str(status.get("message") or status.get("state") or "")
        if self.interactive:
            filled = int(fraction * BAR_WIDTH)
            line = f"\r[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {fraction:4.0%} {message[:60]:<60}"
        else:
            line = f"{fraction:4.0%} {message}"
        if line != self.last_line:
            self.stream.write(line if self.interactive else line + "\n")
            self.stream.flush()
            self.last_line = line

    def finish(self) -> None:
        if self.interactive and self.last_line:
            self.stream.write("\n")
            self.stream.flush()
