"""The fp32 CPU copy of an fp16 model file: derived once, verified against the original, kept beside it.

ONNX Runtime's CPU provider runs an fp16 file slower than the same network in fp32: it casts around every
fp16 operator and leaves GELU unfused (fp32_graph.py; measured in docs/benchmarks.md, "fp16 files on CPU").
On first CPU use of an fp16 model the server writes `<name>.cpu-fp32-<hash>.onnx` beside the original
(`<hash>`: the first 16 hex digits of the original's SHA-256), runs both on one sample input, and records the
outcome in `<name>.onnx.cpu-fp32.json`. CPU sessions load the copy only when the record says
`ready` for the original's current hash; accelerators always load the original (their fp16 kernels are
the fast path). A new download (another hash) derives a new copy and removes the stale one.

The check: the copy's outputs may differ from the original's only by fp16 rounding. With `range` the span
of the original's finite output values (1 when flat) and `step` the fp16 resolution at each of its values
(the distance to the next fp16 number: the finest difference the original itself can express), every output
must satisfy
    max |copy − original| ≤ MAX_ABS_DIFF × range + MAX_FP16_STEPS × the largest step,
    mean |copy − original| ≤ MEAN_ABS_DIFF × range + MEAN_FP16_STEPS × the mean step,
and be finite wherever the original is. The step term matters for outputs whose range is a few hundred fp16
steps or less (a random-weight BEN2's matte spans 0.043 around 0.5); a wrong copy (other weights, a lost node)
is off by a sizeable part of the range, far above a step. A copy that fails is deleted and the record says
`rejected` with the figures, so the original keeps serving and the check is not repeated for that file (until
the acceptance rule changes: contract/cpu_copies.py). Models without fp16 weights are recorded as `not-needed`
(the record spares re-reading the file on every load).

Large files are rewritten in a child process of the server environment (server/child_python.py). A rewrite
that fails to run at all (its child killed, out of memory, a module missing, a disk too full for the copy) says
nothing about the file: nothing is recorded, the job log says why the original runs, and the next server process
tries again. A ready record also holds the copy's size, time and SHA-256: a copy deleted, cut short or changed
since its check is derived again, never loaded.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, TypeGuard

import numpy as np

from ...contract.cpu_copies import (
    ACCEPTANCE_RULE,
    RECORD_SUFFIX,
    TAG,
    CopyRecord,
    CopyStatus,
    copy_path,
    read_record,
    record_path,
)
from ...contract.model_files import sha256_of
from ..child_python import child_command
from .fp32_graph import UnsupportedModel, rewrite_file

# ONNX Runtime's CPU provider: the copy is verified where it will run. The same name as inference/devices.py's
# PROVIDERS[Device.CPU] (tests/server/cpu_copies checks), held here so this package needs nothing of inference/.
CPU_PROVIDER = "CPUExecutionProvider"

__all__ = ["RECORD_SUFFIX", "CopyRecord", "CopyStatus", "copy_path", "cpu_graph", "read_record", "record_path"]

log = logging.getLogger(__name__)

MAX_ABS_DIFF = 0.02  # × the original output's range
MEAN_ABS_DIFF = 0.002  # × the original output's range
MAX_FP16_STEPS = 8.0  # × the largest fp16 step at the original's values
MEAN_FP16_STEPS = 1.0  # × the mean fp16 step at the original's values
SAMPLE_SIDE = 64  # symbolic spatial dimensions of the sample input; a symbolic first (batch) dimension is 1
SAMPLE_SEED = 20240601
IN_PROCESS_BYTES = 8 * 1024 * 1024  # larger files are rewritten in a child process (see _rewrite)


class RewriteDidNotRun(RuntimeError):
    """The rewrite did not run to a verdict (its child died, memory ran out): says nothing about the file, so
    nothing is recorded."""


def is_copy(path: Path | None) -> TypeGuard[Path]:
    """Whether `path` names a CPU copy (for messages saying which file ran)."""
    return path is not None and f".{TAG}-" in path.name


def ready_copy(source: Path, sha256: str) -> Path | None:
    """The verified copy of this exact original, if one exists intact; never derives."""
    record = read_record(source)
    if record is None or record.source_sha256 != sha256 or record.status is not CopyStatus.READY:
        return None
    path = copy_path(source, sha256)
    return path if _intact(record, path) else None


def _intact(record: CopyRecord, path: Path) -> bool:
    """Whether `path` is still the copy that was verified: the recorded size and times, else the recorded SHA-256
    (a copy cut short or damaged after its check must never be loaded in place of a good original)."""
    try:
        info = path.stat()
    except OSError:
        return False
    if not record.copy_sha256:  # recorded before copies were identified: its existence is all there is
        return True
    if _stat_identity(info) == (record.copy_bytes, record.copy_mtime_ns, record.copy_ctime_ns):
        return True
    return info.st_size == record.copy_bytes and sha256_of(path) == record.copy_sha256


def _stat_identity(info: os.stat_result) -> tuple[int, int, int]:
    """Size, modification and (POSIX) change time: a rewrite in place changes the change time even when a tool
    restores the modification time."""
    return info.st_size, info.st_mtime_ns, info.st_ctime_ns if os.name != "nt" else 0


_derive_lock = threading.Lock()
_failed_here: dict[tuple[Path, str], str] = {}  # (file, sha256) -> why this process's child failed to run


def copy_note(source: Path) -> str:
    """Why a CPU session runs the fp16 original (for the job log), or '' when there is nothing to say."""
    failed = next((why for (path, _sha), why in _failed_here.items() if path == source), "")
    if failed:
        return f"no fp32 CPU copy this time: {failed}; the next server start tries again"
    record = read_record(source)
    if record is not None and record.status is CopyStatus.REJECTED and record.current:
        return f"its fp32 CPU copy was rejected: {record.reason}"
    return ""


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
        stale = record is None or record.source_sha256 != sha256 or not record.current
        if not stale and record is not None and record.status is CopyStatus.READY:
            stale = not _intact(record, copy_path(source, sha256))  # deleted or damaged since: derived again
        if stale and (source, sha256) not in _failed_here:
            record = derive(module, source, sha256, threads=threads, announce=announce)
        if record is not None and record.status is CopyStatus.READY:
            path = copy_path(source, sha256)
            if _intact(record, path):
                return path
        return source


def derive(
    module: Any, source: Path, sha256: str, *, threads: int, announce: Callable[[], None] = lambda: None
) -> CopyRecord | None:
    """Write, check and record the copy of `source`; None (nothing recorded) when the original itself fails or
    the rewrite's child process did not run."""
    started = time.perf_counter()
    target = copy_path(source, sha256)
    _prune(source, keep=target)
    try:
        rewrite = _rewrite(source, target)
    except RewriteDidNotRun as error:
        log.warning("%s: no CPU copy this time: the rewrite did not run (%s)", source.name, error)
        _failed_here[(source, sha256)] = f"the rewrite did not run: {error}"
        target.unlink(missing_ok=True)
        return None
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
    size, modified, changed = _stat_identity(target.stat())
    record = CopyRecord(sha256, CopyStatus.READY, target.name, "", checks, seconds=seconds, **figures)
    return _save(
        source,
        replace(record, copy_bytes=size, copy_mtime_ns=modified, copy_ctime_ns=changed, copy_sha256=sha256_of(target)),
    )


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
        steps = fp16_steps(values) if values.size else np.zeros(1)
        check = {
            "output": index,
            "max_abs_diff": float(np.max(difference)),
            "mean_abs_diff": float(difference.mean()),
            "range": span,
            "max_limit": MAX_ABS_DIFF * span + MAX_FP16_STEPS * float(np.max(steps)),
            "mean_limit": MEAN_ABS_DIFF * span + MEAN_FP16_STEPS * float(steps.mean()),
        }
        checks.append(check)
        if not problem and check["max_abs_diff"] > check["max_limit"]:
            problem = (
                f"output {index} differs by up to {check['max_abs_diff']:.4g} "
                f"(limit {check['max_limit']:.4g}, range {span:.4g})"
            )
        elif not problem and check["mean_abs_diff"] > check["mean_limit"]:
            problem = (
                f"output {index} differs by {check['mean_abs_diff']:.4g} on average "
                f"(limit {check['mean_limit']:.4g}, range {span:.4g})"
            )
    return checks, problem


def fp16_steps(values: np.ndarray) -> np.ndarray:
    """The fp16 resolution at each value: the gap to the next fp16 number of its magnitude (inf beyond fp16)."""
    with np.errstate(over="ignore"):
        magnitudes = np.abs(values).astype(np.float16)
    steps: np.ndarray = np.spacing(magnitudes).astype(np.float64)
    return steps


def _rewrite(source: Path, target: Path) -> dict[str, Any]:
    """fp32_graph.rewrite_file, in a child process for a large model: protobuf holds the GIL while it parses
    and serialises (seconds for BEN2), and the server's HTTP thread must keep answering the client meanwhile.
    Small files (tens of milliseconds) are rewritten here. Raises RuntimeError for a file the rewrite cannot
    read (a verdict on the file) and RewriteDidNotRun when it never got to one."""
    if source.stat().st_size <= IN_PROCESS_BYTES:
        try:
            result = rewrite_file(source, target)
        except MemoryError as error:
            raise RewriteDidNotRun("out of memory") from error
        except OSError as error:  # reading the file or writing the copy failed (a full disk): nothing about the file
            raise RewriteDidNotRun(str(error)) from error
        except Exception as error:  # as the child would report it
            raise RuntimeError(str(error) or type(error).__name__) from error
    else:
        result = _rewrite_in_child(source, target)
    if result["status"] == "unreadable":
        raise RuntimeError(result["reason"])
    return result


def _rewrite_in_child(source: Path, target: Path) -> dict[str, Any]:
    command = child_command("imageforge.server.cpu_copies.fp32_graph", [str(source), str(target)])
    try:
        completed = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as error:
        raise RewriteDidNotRun(str(error)) from error
    lines = completed.stdout.strip().splitlines()
    try:
        result: dict[str, Any] = json.loads(lines[-1])  # fp32_graph.main's verdict line
    except (IndexError, ValueError):
        result = {}
    if completed.returncode != 0 or "status" not in result:
        errors = completed.stderr.strip().splitlines() or [f"exit status {completed.returncode}"]
        raise RewriteDidNotRun(errors[-1])
    return result


def _session(module: Any, path: Path, threads: int) -> Any:
    options = module.SessionOptions()
    options.intra_op_num_threads = threads
    return module.InferenceSession(str(path), sess_options=options, providers=[CPU_PROVIDER])


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
    _failed_here.pop((source, record.source_sha256), None)
    record = replace(record, rule=ACCEPTANCE_RULE)
    payload = {**asdict(record), "status": record.status.value}
    _write_atomically(record_path(source), json.dumps(payload, indent=1).encode("utf-8"))
    return record
