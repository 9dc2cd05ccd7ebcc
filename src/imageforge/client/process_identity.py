"""Is this pid still the server we recorded? Prove it from the OS before waiting on it or signalling it.

A pid alone names whatever process has it now: after a server is killed (`kill -9`, a crash, a reboot) its
`server-process.json` stays, and the pid may be reused by an unrelated process, which a Stop or Restart would
then have sent SIGTERM. So the record carries the process's start time as the OS reports it, and a recorded
process counts as ours only while the same pid still has that start time (openspec/0024):

- Linux: `/proc/<pid>/stat` field 22 (clock ticks since boot) with the boot id, so a reboot cannot collide;
  a zombie (state Z or X) has exited, unless another of its threads still runs: a main thread that ended before
  the rest (or a process being torn down thread by thread after SIGKILL) shows Z while its other threads still
  hold its descriptors, the storage lock among them. Signals go through a pidfd opened *before* the start time
  is re-read, so the process proven is the process signalled, with no window for reuse in between.
- macOS: `proc_pidinfo(PROC_PIDTBSDINFO)`'s start seconds and microseconds (libproc, through ctypes).
- Windows: `GetProcessTimes`' creation time, read through a handle that also terminates it (an open handle
  keeps the pid from being reused).
Elsewhere no identity can be read: a record there is never proven, so never signalled.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

POLL_SECONDS = 0.05
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


@dataclass(frozen=True)
class ProcessIdentity:
    """A pid and the OS's start-time token for it: together unique on this machine."""

    pid: int
    started: str


def identity_of(pid: int) -> ProcessIdentity | None:
    """The identity of the running process `pid`, or None when there is none (or it has exited: a zombie)."""
    if pid <= 0:
        return None
    try:
        if sys.platform.startswith("linux"):
            started = _linux_start(pid)
        elif sys.platform == "darwin":
            started = _macos_start(pid)
        elif sys.platform == "win32":
            started = _windows_start(pid)
        else:
            return None
    except OSError:
        return None
    return ProcessIdentity(pid, started) if started is not None else None


class RecordedServerProcess:
    """A server this client did not start (found in the process record), followed only while proven.

    `poll()` is None while the recorded pid still has the recorded start time, else 0 (it ended, or the pid now
    names another process); `terminate()` and `kill()` signal it only while proven.
    """

    def __init__(self, identity: ProcessIdentity) -> None:
        self.identity = identity
        self.pid = identity.pid
        self.ended = False  # no exit code: a process this client did not start cannot be waited for by it

    def proven(self) -> bool:
        return identity_of(self.pid) == self.identity

    def poll(self) -> int | None:
        self.ended = self.ended or not self.proven()
        return 0 if self.ended else None

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0.0)
            time.sleep(POLL_SECONDS)
        return 0

    def terminate(self) -> bool:
        return send_if_proven(self.identity, signal.SIGTERM)

    def kill(self) -> bool:
        return send_if_proven(self.identity, getattr(signal, "SIGKILL", signal.SIGTERM))


def send_if_proven(identity: ProcessIdentity, signum: int) -> bool:
    """Send `signum` to the process only if it is still `identity`; true when sent."""
    if sys.platform == "win32":
        return _windows_terminate(identity)
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is not None:
        try:
            descriptor = pidfd_open(identity.pid)
        except ProcessLookupError:
            return False
        except OSError:
            descriptor = None  # an older kernel: prove, then signal by pid (a window of microseconds)
        if descriptor is not None:
            try:
                if identity_of(identity.pid) != identity:
                    return False
                signal.pidfd_send_signal(descriptor, signum)
                return True
            except ProcessLookupError:
                return False
            finally:
                os.close(descriptor)
    if identity_of(identity.pid) != identity:
        return False
    try:
        os.kill(identity.pid, signum)
    except ProcessLookupError:
        return False
    return True


def holds_listening_port(pid: int, port: int) -> bool | None:
    """Whether process `pid` holds the socket listening on loopback `port` (Linux: its descriptors against
    /proc/net/tcp); None where that cannot be read. Tells a server whose credentials file does not match (it
    still listens: others may use it) from one whose port another program took (it serves nobody)."""
    try:
        inodes = set()
        for name in ("tcp", "tcp6"):
            for line in Path(f"/proc/net/{name}").read_text(encoding="ascii").splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                    inodes.add(f"socket:[{fields[9]}]")
        held = {os.readlink(entry) for entry in Path(f"/proc/{pid}/fd").iterdir()}
    except (OSError, ValueError, IndexError):
        return None
    return bool(inodes & held)


# -- the OS readers ----------------------------------------------------------------------------------------------


def _linux_start(pid: int) -> str | None:
    raw = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    fields = raw[raw.rindex(")") + 2 :].split()  # the name may hold spaces and brackets: read after the last ")"
    if fields[0] in {"Z", "X"} and not _other_thread_runs(pid):
        return None
    return f"{_boot_id()}:{fields[19]}"  # field 22 of the whole line: start time, clock ticks since boot


def _other_thread_runs(pid: int) -> bool:
    """True while a thread of `pid` other than a finished main thread has not exited."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError, ValueError):
            raw = (task / "stat").read_text(encoding="ascii", errors="replace")
            if raw[raw.rindex(")") + 2 :].split()[0] not in {"Z", "X"}:
                return True
    return False


def _boot_id() -> str:
    try:
        return BOOT_ID.read_text(encoding="ascii").strip()
    except OSError:
        return ""


class _BsdInfo(ctypes.Structure):  # <sys/proc_info.h> struct proc_bsdinfo
    _fields_ = [
        ("pbi_flags", ctypes.c_uint32),
        ("pbi_status", ctypes.c_uint32),
        ("pbi_xstatus", ctypes.c_uint32),
        ("pbi_pid", ctypes.c_uint32),
        ("pbi_ppid", ctypes.c_uint32),
        ("pbi_ids", ctypes.c_uint32 * 6),  # uid, gid, ruid, rgid, svuid, svgid
        ("rfu_1", ctypes.c_uint32),
        ("pbi_comm", ctypes.c_char * 16),
        ("pbi_name", ctypes.c_char * 32),
        ("pbi_counts", ctypes.c_uint32 * 5),  # nfiles, pgid, pjobc, e_tdev, e_tpgid
        ("pbi_nice", ctypes.c_int32),
        ("pbi_start_tvsec", ctypes.c_uint64),
        ("pbi_start_tvusec", ctypes.c_uint64),
    ]


PROC_PIDTBSDINFO = 3
SZOMB = 5


def _macos_start(pid: int) -> str | None:
    libproc = ctypes.CDLL("/usr/lib/libproc.dylib", use_errno=True)
    info = _BsdInfo()
    size = libproc.proc_pidinfo(pid, PROC_PIDTBSDINFO, ctypes.c_uint64(0), ctypes.byref(info), ctypes.sizeof(info))
    if size != ctypes.sizeof(info) or info.pbi_pid != pid or info.pbi_status == SZOMB:
        return None
    return f"{info.pbi_start_tvsec}.{info.pbi_start_tvusec:06d}"


PROCESS_TERMINATE = 0x1
PROCESS_QUERY_LIMITED_INFORMATION = 0x1000
STILL_ACTIVE = 259


def _windows_handle(pid: int, access: int) -> tuple[ctypes.CDLL, int | None]:
    kernel = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]  # Windows only
    kernel.OpenProcess.restype = ctypes.c_void_p
    kernel.GetProcessTimes.argtypes = [ctypes.c_void_p, *[ctypes.POINTER(ctypes.c_uint64)] * 4]
    kernel.GetExitCodeProcess.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32)]
    kernel.TerminateProcess.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    kernel.CloseHandle.argtypes = [ctypes.c_void_p]
    handle = kernel.OpenProcess(access | PROCESS_QUERY_LIMITED_INFORMATION, False, pid)
    return kernel, handle or None


def _windows_created(kernel: ctypes.CDLL, handle: int) -> str | None:
    code = ctypes.c_uint32()
    if not kernel.GetExitCodeProcess(handle, ctypes.byref(code)) or code.value != STILL_ACTIVE:
        return None
    created, exited, kernel_time, user_time = (ctypes.c_uint64() for _ in range(4))
    if not kernel.GetProcessTimes(handle, *(ctypes.byref(v) for v in (created, exited, kernel_time, user_time))):
        return None
    return str(created.value)  # 100 ns intervals since 1601


def _windows_start(pid: int) -> str | None:
    kernel, handle = _windows_handle(pid, 0)
    if handle is None:
        return None
    try:
        return _windows_created(kernel, handle)
    finally:
        kernel.CloseHandle(handle)


def _windows_terminate(identity: ProcessIdentity) -> bool:
    kernel, handle = _windows_handle(identity.pid, PROCESS_TERMINATE)
    if handle is None:
        return False
    try:  # the handle holds the process: proven and terminated are the same one
        if _windows_created(kernel, handle) != identity.started:
            return False
        with contextlib.suppress(OSError):
            return bool(kernel.TerminateProcess(handle, 1))
        return False
    finally:
        kernel.CloseHandle(handle)
