"""The single entry point through which every adapter runs a model.

It separates the long-lived session from the memory one job borrowed: the arena is shrunk only after the
last run of a job (last tile, frame or view), so tiles reuse memory while the next job starts small, and
only for an arena the session really owns (asking for a missing one fails the run).

An accelerator that fails while running (a dynamic CoreML partition, a DirectML device error, CUDA out of
memory) costs the job nothing but speed: the session is replaced by a CPU session, the same inputs run
again, and the model stays on CPU until the server restarts, because such failures repeat. The job hears
about it through `warn`. Memory that runs out on CPU as well becomes one actionable message.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ...contract import Device, ImageForgeError, ResourceExhaustedError
from .devices import OrtRuntime
from .failures import MEMORY_MESSAGE, describe, is_caller_error, is_memory_exhaustion
from .session_factory import CreatedSession, SessionRequest, create_session

log = logging.getLogger(__name__)

SHRINK_ENTRY = "memory.enable_memory_arena_shrinkage"

Warn = Callable[[str], None]


@dataclass
class LoadedSession:
    """One cached model: what was asked for and the session that currently serves it (it may change to CPU)."""

    runtime: OrtRuntime
    request: SessionRequest
    created: CreatedSession | None
    on_cpu_fallback: Callable[[str], None] = lambda message: None
    runs: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def current(self) -> CreatedSession:
        if self.created is None:
            raise ImageForgeError(f"{self.request.title} was unloaded while a job still used it.")
        return self.created

    def release(self) -> None:
        with self.lock:
            self.created = None


def run(loaded: LoadedSession, feeds: Mapping[str, Any], *, last_run: bool, warn: Warn | None = None) -> dict[str, Any]:
    """Run `feeds` through the model; returns {output name: array}. `last_run` marks a job's final run."""
    with loaded.lock:
        created = loaded.current()
        try:
            return _run_once(loaded, created, feeds, last_run)
        except Exception as error:
            if is_caller_error(error):
                raise
            if created.device is Device.CPU:
                if is_memory_exhaustion(error):
                    raise ResourceExhaustedError(MEMORY_MESSAGE) from error
                raise
            message = (
                f"{created.device.label} failed while running {loaded.request.title} ({describe(error)}); "
                "running it on CPU until the server restarts."
            )
            log.warning("%s: %s", message, repr(error))  # a string: a kept log record must not pin the session
        # The error's traceback pinned the session; both are gone now, so the accelerator's memory is freed
        # before the CPU copy of the weights loads.
        loaded.created = None
        del created
        loaded.created = create_session(loaded.runtime, replace(loaded.request, device=Device.CPU))
        loaded.created = replace(loaded.created, fallback=message)
        loaded.on_cpu_fallback(message)
        if warn is not None:
            warn(message)
        try:
            return _run_once(loaded, loaded.created, feeds, last_run)
        except Exception as error:
            if is_memory_exhaustion(error):
                raise ResourceExhaustedError(MEMORY_MESSAGE) from error
            raise


def run_options(runtime: OrtRuntime, created: CreatedSession, *, last_run: bool) -> Any | None:
    """Run options for this run: the arena shrink request on a job's last run only, else none."""
    if not last_run or created.shrink is None:
        return None
    options = runtime.module.RunOptions()
    options.add_run_config_entry(SHRINK_ENTRY, created.shrink)
    return options


def _run_once(
    loaded: LoadedSession, created: CreatedSession, feeds: Mapping[str, Any], last_run: bool
) -> dict[str, Any]:
    session = created.session
    names: list[str] = [output.name for output in session.get_outputs()]
    values = session.run(names, dict(feeds), run_options(loaded.runtime, created, last_run=last_run))
    loaded.runs += 1
    return dict(zip(names, values, strict=True))
