"""Sorting ONNX Runtime failures: which are the caller's mistake, which mean memory ran out.

ONNX Runtime raises plain `Exception` subclasses whose class names and texts are the only signal, and
DirectML on Chinese Windows sends GBK-encoded messages that Python cannot decode, so the failure arrives as
a `UnicodeDecodeError` with no text at all. Field reports show that in practice it is memory or a device
reset, so it is treated as memory exhaustion: the one message that tells the user what to lower.
"""

from __future__ import annotations

import re

MEMORY_MESSAGE = "GPU or system memory exhausted: lower Maximum AI Input Size."

_MEMORY_MARKERS = (
    "out of memory",
    "outofmemory",
    "failed to allocate",
    "bad_alloc",
    "bad allocation",
    "alloc_failed",  # CUBLAS_STATUS_ALLOC_FAILED, CUDNN_STATUS_ALLOC_FAILED
    "cudaerrormemoryallocation",
    "e_outofmemory",
    "8007000e",  # HRESULT E_OUTOFMEMORY (DirectML)
    "887a0005",  # DXGI_ERROR_DEVICE_REMOVED: the driver reset, usually after exhausting video memory
    "device removed",
    "device_removed",
)

_ORT_PREFIX = re.compile(r"^\[ONNXRuntimeError\] : \d+ : \w+ : ")

# DirectML reports "80070057 the parameter is incorrect" for device trouble, not for a bad feed.
_DEVICE_MARKERS = ("80070057", "parameter is incorrect")


def is_memory_exhaustion(error: BaseException) -> bool:
    if isinstance(error, MemoryError | UnicodeDecodeError):
        return True
    text = f"{type(error).__name__} {error}".lower()
    return any(marker in text for marker in _MEMORY_MARKERS)


def is_caller_error(error: BaseException) -> bool:
    """A wrong feed (missing input, wrong rank or dtype) fails on every device: never a reason to fall back."""
    if isinstance(error, UnicodeDecodeError) or is_memory_exhaustion(error):
        return False
    if isinstance(error, TypeError | ValueError | KeyError):
        return True
    text = str(error).lower()
    return type(error).__name__ == "InvalidArgument" and not any(marker in text for marker in _DEVICE_MARKERS)


def describe(error: BaseException) -> str:
    """A short, single-line cause for logs and warnings (ONNX Runtime messages span several lines)."""
    if isinstance(error, UnicodeDecodeError):
        return "the driver sent an unreadable error message"
    text = _ORT_PREFIX.sub("", str(error))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    text = lines[0].rstrip(".") if lines else type(error).__name__
    return text if len(text) <= 160 else text[:157] + "..."
