"""A job's set of result files, written one by one and deleted together if a later writer fails."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from ...contract.results import ResultName


class OutputSet:
    """A job's result files. Leaving the block with an exception deletes every file it wrote."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.result: dict[ResultName, str] = {}

    def write(self, name: ResultName, filename: str, writer: Callable[[Path], object]) -> None:
        self.result[name] = filename
        writer(self.directory / filename)

    def __enter__(self) -> OutputSet:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if kind is not None:
            for filename in self.result.values():
                (self.directory / filename).unlink(missing_ok=True)
            self.result.clear()
