"""The add-on's single BlendJob runtime (namespace `imageforge`), created on register."""

from __future__ import annotations

from blendjob import JobRuntime

from .client.runtime import make_runtime
from .preferences import storage_root

_runtime: JobRuntime | None = None


def get_runtime() -> JobRuntime:
    if _runtime is None:
        raise RuntimeError("ImageForge is not registered")
    return _runtime


def register() -> None:
    global _runtime
    _runtime = make_runtime(storage_root)
    # BlendJob compares timer callbacks by identity, but each attribute access builds a new bound method:
    # pin them once so unregister() really removes the timers (else they leak and bpy 4.5 hangs at exit).
    _runtime._poll_server = _runtime._poll_server
    _runtime._redraw_status_bars = _runtime._redraw_status_bars
    _runtime.register()


def unregister() -> None:
    global _runtime
    if _runtime is not None:
        _runtime.unregister()
        _runtime = None
