"""Another local user, for the hostile tests: a child process with another uid (`nobody`), and folders it can
reach. Everything runs as root here, so "another user" is a child that drops to `nobody` (Popen's user/group,
no supplementary groups); a test that needs one skips with the reason when the tests do not run as root.
"""

from __future__ import annotations

import os
import pwd
import subprocess
import tempfile
from pathlib import Path

import pytest

NOT_ROOT = "needs root, to run a child as another local user (nobody)"


def other_user() -> tuple[int, int] | None:
    """`nobody`'s uid and gid when the tests run as root (so a child can become it), else None."""
    if os.name == "nt" or os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        return None
    return entry.pw_uid, entry.pw_gid


def require_other_user() -> tuple[int, int]:
    user = other_user()
    if user is None:
        pytest.skip(NOT_ROOT)
    return user


def run_as_other_user(script: str, *, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Run a shell script as the other user (cwd `/`, a bare environment); fails the test if it fails."""
    uid, gid = require_other_user()
    done = subprocess.run(
        ["/bin/sh", "-c", script],
        user=uid,
        group=gid,
        extra_groups=[],
        cwd="/",
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"the other user's script failed: {done.stderr}"
    return done


def reachable_folder(*, shared: bool = False) -> Path:
    """A fresh folder in the system temporary folder that the other user can pass through (0711), or, with
    `shared`, create entries in as in /tmp (1777: world-writable and sticky). The caller removes it."""
    folder = Path(tempfile.mkdtemp(prefix="imageforge-hostile-", dir="/tmp"))
    folder.chmod(0o1777 if shared else 0o711)
    return folder
