"""The fp32 CPU copy of an fp16 model file: derived once, verified against the original, kept beside it.

ONNX Runtime's CPU provider runs an fp16 file 1.10–1.30× slower than the same network in fp32 (see
fp32_graph.py). On first CPU use of an fp16 model the server writes `<name>.cpu-fp32-<hash>.onnx` beside the
original (`<hash>`: the first 16 hex digits of the original's SHA-256), runs both on one sample input, and
records the outcome in `<name>.onnx.cpu-fp32.json`. CPU sessions load the copy only when the record says
`ready` for the original's current hash; accelerators always load the original (their fp16 kernels are
the fast path). A new download (another hash) derives a new copy and removes the stale one.

The check: the copy's outputs may differ from the original's only by fp16 rounding. With `range` the span
of the original's finite output values (1 when flat), every output must satisfy
    max |copy − original| ≤ MAX_ABS_DIFF × range   and   mean |copy − original| ≤ MEAN_ABS_DIFF × range,
and be finite wherever the original is. A copy that fails is deleted and the record says `rejected` with
the figures, so the original keeps serving and the check is not repeated for that file. Models without
fp16 weights are recorded as `not-needed` (the record spares re-reading the file on every load).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeGuard

import numpy as np

from ...contract import Device
from .devices import PROVIDERS
from .fp32_graph import UnsupportedModel, rewrite_file

log = logging.getLogger(__name__)

TAG = "cpu-fp32"
RECORD_SUFFIX = f".{TAG}.json"
MAX_ABS_DIFF = 0.02  # × the original output's range
MEAN_ABS_DIFF = 0.002  # × the original output's range
SAMPLE_SIDE = 64  # symbolic spatial dimensions of the sample input; a symbolic first (batch) dimension is 1
SAMPLE_SEED = 20240601
IN_PROCESS_BYTES = 8 * 1024 * 1024  # larger files are rewritten in a child process (see _rewrite)


class CopyStatus(StrEnum):
    READY = "ready"  # the copy exists and passed the check: CPU sessions load it
    NOT_NEEDED = "not-needed"  # no fp16 weights: the original is the CPU graph
    REJECTED = "rejected"  # the rewrite failed or its outputs differ: the original serves


@dataclass(frozen=True)
class CopyRecord:
    source_sha256: str
    status: CopyStatus
    copy: str | None = None  # file name beside the original
    reason: str = ""
    checks: list[dict[str, Any]] = field(default_factory=list)  # per output: max/mean abs diff, range
    fp16_tensors: int = 0
    removed_casts: int = 0
    restored_constants: int = 0
    seconds: float = 0.0


def copy_path(source: Path, sha256: str) -> Path:
    return source.with_name(f"{source.stem}.{TAG}-{sha256[:16]}{source.suffix}")


def is_copy(path: Path | None) -> TypeGuard[Path]:
    """Whether `path` names a CPU copy (for messages saying which file ran)."""
    return path is not None and f".{TAG}-" in path.name


def record_path(source: Path) -> Path:
    return source.with_name(source.name + RECORD_SUFFIX)


def read_record(source: Path) -> CopyRecord | None:
    try:
        raw = json.loads(record_path(source).read_text(encoding="utf-8"))
        return CopyRecord(**{**raw, "status": CopyStatus(raw["status"])})
    except (OSError, ValueError, TypeError, KeyError):
        return None


def ready_copy(source: Path, sha256: str) -> Path | None:
    """The verified copy of this exact original, if one exists; never derives."""
    record = read_record(source)
    if record is None or record.source_sha256 != sha256 or record.status is not CopyStatus.READY:
        return None
    path = copy_path(source, sha256)
    return path if path.is_file() else None


_derive_lock = threading.Lock()


def cpu_graph(
    module: Any,
    source: Path,
    sha256: str,
    *,
    threads: int,
    announce: Callable[[], None] = lambda: None,
) -> Path:
    """The graph CPU sessions should load for `source`: its verified copy, derived now if never tried."""
    with _derive_lock:
        record = read_record(source)
        if record is None or record.source_sha256 != sha256:
            record = derive(module, source, sha256, threads=threads, announce=announce)
        if record is not None and record.status is CopyStatus.READY:
            path = copy_path(source, sha256)
            if path.is_file():
                return path
        return source


def derive(
    module: Any, source: Path, sha256: str, *, threads: int, announce: Callable[[], None] = lambda: None
) -> CopyRecord | None:
    """Write, check and record the copy of `source`; None (nothing recorded) when the original itself fails."""
    started = time.perf_counter()
    target = copy_path(source, sha256)
    _prune(source, keep=target)
    try:
        rewrite = _rewrite(source, target)
    except RuntimeError as error:  # a file protobuf cannot read: ONNX Runtime will say what is wrong with it
        log.warning("%s: no CPU copy (%s)", source.name, error)
        return _save(source, CopyRecord(sha256, CopyStatus.REJECTED, reason=f"the rewrite failed ({error})"))
    if rewrite["status"] == "unsupported":
        return _save(source, CopyRecord(sha256, CopyStatus.REJECTED, reason=rewrite["reason"]))
    if rewrite["status"] == "not-needed":
        return _save(source, CopyRecord(sha256, CopyStatus.NOT_NEEDED))
    announce()
    figures = {name: rewrite[name] for name in ("fp16_tensors", "removed_casts", "restored_constants")}
    try:
        original = _session(module, source, threads)
        sample = _sample(original)
        expected = original.run(None, sample)
        del original
    except UnsupportedModel as error:
        target.unlink(missing_ok=True)
        return _save(source, CopyRecord(sha256, CopyStatus.REJECTED, reason=f"no sample for the check: {error}"))
    except Exception as error:  # out of memory, a sample the model refuses: try again next time
        log.warning("%s: the original did not run on the check's sample (%r); no CPU copy this time.", source, error)
        target.unlink(missing_ok=True)
        return None
    try:
        actual = _session(module, target, threads).run(None, sample)
        checks, problem = compare(expected, actual)
    except Exception as error:
        checks, problem = [], f"the copy did not run ({error})"
    seconds = round(time.perf_counter() - started, 3)
    if problem:
        target.unlink(missing_ok=True)
        log.warning("%s: CPU copy rejected: %s", source.name, problem)
        return _save(source, CopyRecord(sha256, CopyStatus.REJECTED, None, problem, checks, seconds=seconds, **figures))
    log.info("%s: fp32 CPU copy %s verified in %.1f s", source.name, target.name, seconds)
    return _save(source, CopyRecord(sha256, CopyStatus.READY, target.name, "", checks, seconds=seconds, **figures))


def compare(expected: list[Any], actual: list[Any]) -> tuple[list[dict[str, Any]], str]:
    """Per-output figures and the first failed condition ('' when the copy passes), per the module docstring."""
    checks: list[dict[str, Any]] = []
    problem = ""
    if len(expected) != len(actual):
        return checks, f"the copy has {len(actual)} outputs, the original {len(expected)}"
    for index, (reference, candidate) in enumerate(zip(expected, actual, strict=True)):
        reference = np.asarray(reference, dtype=np.float64)
        candidate = np.asarray(candidate, dtype=np.float64)
        if reference.shape != candidate.shape:
            return checks, f"output {index} has shape {candidate.shape}, the original {reference.shape}"
        finite = np.isfinite(reference)
        if not np.isfinite(candidate[finite]).all():
            return checks, f"output {index} is not finite where the original is"
        values = reference[finite]
        span = float(values.max() - values.min()) if values.size else 0.0
        span = span if span > 0 else 1.0
        difference = np.abs(candidate[finite] - values) if values.size else np.zeros(1)
        check = {
            "output": index,
            "max_abs_diff": float(difference.max()),
            "mean_abs_diff": float(difference.mean()),
            "range": span,
        }
        checks.append(check)
        if not problem and check["max_abs_diff"] > MAX_ABS_DIFF * span:
            problem = f"output {index} differs by up to {check['max_abs_diff']:.4g} (range {span:.4g})"
        elif not problem and check["mean_abs_diff"] > MEAN_ABS_DIFF * span:
            problem = f"output {index} differs by {check['mean_abs_diff']:.4g} on average (range {span:.4g})"
    return checks, problem


def _rewrite(source: Path, target: Path) -> dict[str, Any]:
    """fp32_graph.rewrite_file, in a child process for a large model: protobuf holds the GIL while it parses
    and serialises (seconds for BEN2), and the server's HTTP thread must keep answering the client meanwhile.
    Small files (tens of milliseconds) are rewritten here."""
    if source.stat().st_size <= IN_PROCESS_BYTES:
        try:
            return rewrite_file(source, target)
        except Exception as error:  # as the child would report it
            raise RuntimeError(str(error) or type(error).__name__) from error
    package_parent = Path(__file__).resolve().parents[3]  # the folder that holds the `imageforge` package
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); "
        "from imageforge.server.inference.fp32_graph import main; main(sys.argv[2:])"
    )
    command = [sys.executable, "-c", code, str(package_parent), str(source), str(target)]
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        lines = completed.stderr.strip().splitlines() or [f"exit status {completed.returncode}"]
        raise RuntimeError(lines[-1])
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])  # fp32_graph.main's line
    return result


def _session(module: Any, path: Path, threads: int) -> Any:
    options = module.SessionOptions()
    options.intra_op_num_threads = threads
    return module.InferenceSession(str(path), sess_options=options, providers=[PROVIDERS[Device.CPU]])


def _sample(session: Any) -> dict[str, np.ndarray]:
    """A seeded uniform [0, 1) input for every model input; models with non-float inputs are not sampled."""
    generator = np.random.default_rng(SAMPLE_SEED)
    feeds = {}
    for item in session.get_inputs():
        if item.type not in ("tensor(float)", "tensor(float16)"):
            raise UnsupportedModel(f"input {item.name} is {item.type}")
        shape = [
            dim if isinstance(dim, int) and dim > 0 else (1 if index == 0 else SAMPLE_SIDE)
            for index, dim in enumerate(item.shape)
        ]
        dtype = np.float16 if item.type == "tensor(float16)" else np.float32
        feeds[item.name] = generator.random(shape, dtype=np.float32).astype(dtype)
    return feeds


def _prune(source: Path, *, keep: Path) -> None:
    for stale in source.parent.glob(f"{source.stem}.{TAG}-*{source.suffix}"):
        if stale != keep:
            stale.unlink(missing_ok=True)


def _write_atomically(path: Path, data: bytes) -> None:
    temporary = path.with_name(f"{path.name}.{os.getpid()}.part")
    try:
        with temporary.open("wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def _save(source: Path, record: CopyRecord) -> CopyRecord:
    payload = {**asdict(record), "status": record.status.value}
    _write_atomically(record_path(source), json.dumps(payload, indent=1).encode("utf-8"))
    return record
