"""Whether a storage root, and what ImageForge runs or reads from it, can be trusted: ours, and writable by no one
else (openspec/0024).

The rule is OpenSSH's StrictModes (sshd's `safe_path`): a path is trusted when it, and every folder on the way to
it from `/`, is owned by this user (or root) and writable by nobody else (no group or other write bit). It is
applied to the lexical path and to the real path (symlinks resolved), so a link to a folder others can write
is no way round it. One relaxation: a folder *above* the storage root may be world-writable when it is sticky
(`/tmp`), because others can then neither rename nor delete what is ours in it; the root itself and
everything in it may not. `check_tree` applies the rule to every entry of a folder (the server environment
before it runs, the model files), and to the real path of every link that leaves it (`.venv/bin/python`).

Nothing is repaired: once others could have written, only the user can say whether what is there is theirs, so
the check refuses with one sentence naming the path and what to do. Windows checks the owner and the DACL
instead of mode bits (contract/windows_acl.py, where the platform allows it; openspec/0024 says what is and is
not checked there).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from .errors import ImageForgeError

OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH
# What the server runs (its environment; setup's uv) and reads (model files).
SERVER_TREES = (".venv", "tools", "models")
SERVER_RECORDS = ("manifest.json", "server-process.json", "server-credentials.json")
# uv's lock file in an environment it installed into: created writable by everyone (0666 whatever the umask),
# empty, and only ever locked, never read, so what is written in it changes nothing that runs.
LOCK_FILES = frozenset({".lock"})
SETUP_AGAIN = "set the server up again (imageforge setup --force, or Set Up Server… in Blender)"


class Flaw(Enum):
    """What makes one path untrusted."""

    OTHERS_CAN_WRITE = "others can write"
    OWNED_BY_OTHER = "owned by another user"


class Place(Enum):
    """Where the untrusted path is, relative to the storage root: it decides what the user should do."""

    ABOVE = "above"  # a folder on the way to the root: choose another root (or fix that folder)
    ROOT = "root"
    INSIDE = "inside"  # something in the root ImageForge runs or reads
    LINKED = "linked"  # where a link in the root leads (the interpreter of .venv/bin/python, a linked .venv)
    INTERPRETER = "interpreter"  # the base Python an environment runs on: its stdlib, sitecustomize, libpython


@dataclass(frozen=True)
class Finding:
    """One untrusted path: which flaw, its owner and mode as the OS reported them."""

    path: Path
    flaw: Flaw
    place: Place
    owner: int | str  # a uid, or a SID on Windows
    mode: int = 0


class UntrustedStorageError(ImageForgeError, PermissionError):
    """The storage root, a folder above it, or something in it could be changed by another user: nothing in it is
    run or read. The message is one sentence naming the path and what to do."""

    def __init__(self, root: Path, finding: Finding) -> None:
        self.root = root
        self.finding = finding
        super().__init__(sentence(root, finding))


def sentence(root: Path, finding: Finding) -> str:
    """One sentence for `finding`: which path, why, and what to do."""
    path, place = finding.path, finding.place
    if place is Place.INTERPRETER:
        what = f"{path}, part of the Python that an environment in the Storage Root {root} runs on,"
        if finding.flaw is Flaw.OWNED_BY_OTHER:
            why = f"belongs to another user ({_owner(finding.owner)}),"
        else:
            why = f"can be written by other users{_mode(finding)},"
        return (
            f"{what} {why} so they could change what ImageForge runs; make that Python private "
            f"({_private(path, recursive=True)}) or {SETUP_AGAIN} with a Python nobody else can change."
        )
    if finding.flaw is Flaw.OWNED_BY_OTHER:
        owner = f"another user ({_owner(finding.owner)})"
        if place is Place.ROOT:
            return (
                f"The Storage Root {root} belongs to {owner}, so ImageForge will not run or read anything in it; "
                "choose another Storage Root (a folder of your own, such as ~/.imageforge)."
            )
        if place is Place.ABOVE:
            return (
                f"{path}, a folder above the Storage Root {root}, belongs to {owner}, who could replace the Storage "
                "Root; choose another Storage Root (a folder of your own, such as ~/.imageforge)."
            )
        if place is Place.LINKED:
            return (
                f"{path}, which the Storage Root {root} links to, belongs to {owner}, who may have replaced what "
                f"ImageForge runs; {SETUP_AGAIN}."
            )
        return (
            f"{path} in the Storage Root belongs to {owner}, who may have replaced what ImageForge runs; delete it "
            f"and {SETUP_AGAIN}."
        )
    can_write = f"can be written by other users{_mode(finding)}"
    if place is Place.ROOT:
        return (
            f"The Storage Root {root} {can_write}, so they could change what ImageForge runs; make it private "
            f"({_private(root)}) and, if others may have changed it, {SETUP_AGAIN}, or choose another Storage Root."
        )
    if place is Place.ABOVE:
        return (
            f"{path}, a folder above the Storage Root {root}, {can_write}, so they could replace the Storage Root; "
            f"choose another Storage Root, or make that folder private ({_private(path, folder_only=True)})."
        )
    if place is Place.LINKED:
        return (
            f"{path}, which the Storage Root {root} links to, {can_write}, so they could change what ImageForge "
            f"runs; make it private ({_private(path, folder_only=True)}) or {SETUP_AGAIN}."
        )
    return (
        f"{path} in the Storage Root {can_write}, so they could change what ImageForge runs; make it private "
        f"({_private(root, recursive=True)}) and, if others may have changed it, {SETUP_AGAIN}."
    )


def check_storage_root(root: Path) -> Path:
    """Refuse a root that another user owns or can write, or that hangs below such a folder; returns it resolved.

    A root that does not exist yet is judged by the folders that will hold it (its nearest existing ancestor
    and everything above): what the client then creates in it is its own.
    """
    root = Path(os.path.abspath(Path(root).expanduser()))
    real = Path(os.path.realpath(root))
    for chain in _chains(root, real):
        for path in chain:
            finding = _judge(path, Place.ROOT if path in (root, real) else Place.ABOVE)
            if finding is not None:
                raise UntrustedStorageError(root, finding)
    return real


def check_server_files(root: Path) -> Path:
    """Everything a client trusts before it starts the server: the root, the server environment (every entry, and
    the interpreter its python links to), the model files, the environment manifest and the server's records."""
    real = check_storage_root(root)
    for name in SERVER_TREES:
        check_inside(root, name, tree=True)
    for name in SERVER_RECORDS:
        check_inside(root, name)
    check_base_interpreter(root, root / ".venv")
    return real


def check_base_interpreter(root: Path, venv: Path) -> None:
    """The Python an environment runs on (pyvenv.cfg's `home`, and where `bin/python` really leads): its standard
    library, which holds every module the server imports before its own and `sitecustomize`, its lib-dynload and
    libpython, and, when the environment sees them, the base site-packages (`.pth` files) and the user's
    site-packages (`usercustomize`). Each must be ours or root's and writable by nobody else, with the folders
    above it; nothing of it runs before this check."""
    settings = _venv_settings(venv / "pyvenv.cfg")
    if settings is None:
        return
    prefixes = []
    if settings.get("home"):
        prefixes.append(Path(os.path.abspath(settings["home"])).parent)
    for name in ("python", "python3", "python.exe"):
        executable = venv / ("Scripts" if os.name == "nt" else "bin") / name
        if os.path.lexists(executable):
            prefixes.append(Path(os.path.realpath(executable)).parent.parent)
            break
    for prefix in dict.fromkeys(prefixes):
        for part in _interpreter_parts(prefix):
            for path in (*reversed(part.parents), part):
                if os.path.lexists(path):
                    sticky = path != part and path.is_dir()
                    _refuse(root, _judge(path, Place.INTERPRETER, may_be_sticky=sticky))
            if part.is_dir() and not part.is_symlink():
                check_tree(root, part, place=Place.INTERPRETER)
    if settings.get("include-system-site-packages", "").lower() == "true":
        user_site = Path.home() / ".local" / "lib"
        for site in sorted(user_site.glob("python3*/site-packages")) if user_site.is_dir() else ():
            check_tree(root, site, place=Place.INTERPRETER)


def _venv_settings(config: Path) -> dict[str, str] | None:
    try:
        text = config.read_text(encoding="utf-8")
    except OSError:
        return None
    settings = {}
    for line in text.splitlines():
        key, equals, value = line.partition("=")
        if equals:
            settings[key.strip().lower()] = value.strip()
    return settings


def _interpreter_parts(prefix: Path) -> list[Path]:
    """What a Python installed in `prefix` loads: its standard library folder(s) (found by their landmark,
    os.py), and the shared libpython beside them."""
    if os.name == "nt":
        return [path for path in (prefix / "Lib", prefix / "DLLs") if path.is_dir()]
    lib = prefix / "lib"
    if not lib.is_dir():
        return []
    parts = [path for path in sorted(lib.glob("python3*")) if (path / "os.py").exists()]
    parts += [path for path in sorted(lib.glob("libpython3*")) if path.is_file()]
    return parts


def check_inside(root: Path, relative: str | Path, *, tree: bool = False) -> None:
    """Refuse `root / relative` (and with `tree`, anything in it) unless ours and writable by nobody else.

    The folders between the root and the path are checked too, and where a link leads; a missing path passes
    (nothing there to run or read). The root's own chain is `check_storage_root`'s.
    """
    root = Path(os.path.abspath(Path(root).expanduser()))
    target = root / relative
    current = root
    for part in Path(relative).parts:
        current = current / part
        if not os.path.lexists(current):
            return
        _refuse(root, _judge(current, Place.INSIDE))
        if current.is_symlink():
            _check_link(root, current, tree=tree and current == target)
            return
    if tree and target.is_dir():
        check_tree(root, target)


def check_tree(root: Path, folder: Path, *, place: Place = Place.INSIDE) -> None:
    """Every entry below `folder` (not following links) ours and writable by nobody else; each link that leads out
    of the folder is followed to its real path, whose whole chain is checked, and walked too if a folder."""
    followed: set[Path] = set()
    base = Path(os.path.realpath(folder))
    pending = [(Path(folder), place)]
    while pending:
        current, place = pending.pop()
        with os.scandir(current) as entries:
            for entry in entries:
                path = Path(entry.path)
                info = entry.stat(follow_symlinks=False)
                if entry.name in LOCK_FILES and stat.S_ISREG(info.st_mode) and info.st_uid in (_user(), 0):
                    continue
                _refuse(root, _judge(path, place, info=info))
                if entry.is_symlink():
                    real = Path(os.path.realpath(path))
                    if real != base and base not in real.parents and real not in followed:
                        followed.add(real)
                        _check_chain(root, real)
                        if real.is_dir():
                            pending.append((real, Place.LINKED))
                elif entry.is_dir(follow_symlinks=False):
                    pending.append((path, place))


def _check_link(root: Path, link: Path, *, tree: bool) -> None:
    real = Path(os.path.realpath(link))
    _check_chain(root, real)
    if tree and real.is_dir():
        check_tree(root, real, place=Place.LINKED)


def _check_chain(root: Path, real: Path) -> None:
    """Where a link in the root leads: that path and every folder above it."""
    for path in (*reversed(real.parents), real):
        if os.path.lexists(path):
            _refuse(root, _judge(path, Place.LINKED, may_be_sticky=path != real and path.is_dir()))


def _refuse(root: Path, finding: Finding | None) -> None:
    if finding is not None:
        raise UntrustedStorageError(root, finding)


def _chains(root: Path, real: Path) -> list[list[Path]]:
    """The existing folders from `/` down to the root, lexically and for its real path (one chain if the same)."""
    chains = []
    for path in (root, real) if real != root else (root,):
        existing = path
        while not os.path.lexists(existing):
            existing = existing.parent
        chains.append([*reversed(existing.parents), existing])
    return chains


def _judge(
    path: Path, place: Place, *, may_be_sticky: bool | None = None, info: os.stat_result | None = None
) -> Finding | None:
    """The flaw of one existing path (links judged as links: the folder holding them decides who may swap them)."""
    sticky_allowed = place is Place.ABOVE if may_be_sticky is None else may_be_sticky
    if os.name == "nt":
        from .windows_acl import read_access

        access = read_access(path)
        if not access.owner_trusted:
            return Finding(path, Flaw.OWNED_BY_OTHER, place, access.owner)
        if access.replacers if sticky_allowed else access.writers:
            return Finding(path, Flaw.OTHERS_CAN_WRITE, place, access.owner)
        return None
    info = info or os.lstat(path)
    if info.st_uid not in (_user(), 0):
        return Finding(path, Flaw.OWNED_BY_OTHER, place, info.st_uid, info.st_mode)
    if stat.S_ISLNK(info.st_mode):
        return None
    if info.st_mode & OTHERS_WRITE and not (sticky_allowed and info.st_mode & stat.S_ISVTX):
        return Finding(path, Flaw.OTHERS_CAN_WRITE, place, info.st_uid, info.st_mode)
    return None


def _user() -> int:
    return os.geteuid()


def _private(path: Path, *, recursive: bool = False, folder_only: bool = False) -> str:
    """How to take others' write access away, on this platform."""
    if os.name == "nt":
        return "remove other users' write access in its Properties → Security"
    if folder_only:
        return f"chmod go-w '{path}'"
    return f"chmod -R go-w '{path}'" if recursive else f"chmod 700 '{path}'"


def _owner(owner: int | str) -> str:
    return f"uid {owner}" if isinstance(owner, int) else owner


def _mode(finding: Finding) -> str:
    return f" (mode {stat.S_IMODE(finding.mode):04o})" if finding.mode else ""
