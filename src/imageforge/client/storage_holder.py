"""Who holds a storage root's lock (the job server, Blender, the CLI), by pid, for messages that say what to do.

The lock is BlendJob's `StorageLock` (an advisory lock on a file under the user's state folder). The running
job server holds it for its lifetime; setup, migration and job-file cleanup hold it while they write. On Linux
`/proc/locks` names the holding pid; elsewhere the message says "another program".
"""

from __future__ import annotations

from pathlib import Path

from blendjob.storage import StorageLock, storage_state_path


def lock_holder_pid(root: Path) -> int | None:
    try:
        inode = storage_state_path(root, "lock").stat().st_ino
        lines = Path("/proc/locks").read_text(encoding="ascii").splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if "->" in fields:  # a waiter, not the holder
            continue
        if len(fields) >= 6 and fields[1] in {"FLOCK", "POSIX", "OFDLCK"} and fields[5].split(":")[-1] == str(inode):
            try:
                return int(fields[4])
            except ValueError:
                return None
    return None


def describe_process(pid: int) -> str:
    """'Blender (pid 4242)', 'the ImageForge job server (pid 17)', 'the imageforge command (pid 9)', ..."""
    try:
        argv = [part.decode(errors="replace") for part in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")]
    except OSError:
        return f"process {pid}"
    joined = " ".join(argv[:4]).lower()
    if "launcher.py" in joined and "imageforge" in joined:
        what = "the ImageForge job server"
    elif "blender" in Path(argv[0]).name.lower():
        what = "Blender"
    elif "imageforge" in joined:
        what = "the imageforge command"
    else:
        what = Path(argv[0]).name or "a program"
    return f"{what} (pid {pid})"


def holder_description(root: Path) -> str:
    pid = lock_holder_pid(root)
    return describe_process(pid) if pid is not None else "another program"


def acquire_or_explain(lock: StorageLock, root: Path, doing: str) -> None:
    """Acquire `lock` on `root`, or raise one sentence naming who holds it and what to do."""
    try:
        lock.acquire(root)
    except RuntimeError as error:
        raise RuntimeError(
            f"Cannot {doing}: {holder_description(root)} is using {root}; wait for it to finish or stop it "
            "(Stop in Blender's ImageForge Server panel), then try again."
        ) from error
