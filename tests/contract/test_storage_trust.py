"""The storage-root rule (contract/storage_trust.py): sshd's StrictModes on the root, the folders above it, what is
in it, and where its links lead; and the same rule on a Windows ACL (contract/windows_acl.py's judge_acl)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from imageforge.contract.storage_trust import (
    Flaw,
    Place,
    UntrustedStorageError,
    check_inside,
    check_server_files,
    check_storage_root,
)
from imageforge.contract.windows_acl import (
    DELETE,
    FILE_APPEND_DATA,
    FILE_DELETE_CHILD,
    FILE_WRITE_DATA,
    GENERIC_ALL,
    INHERIT_ONLY_ACE,
    AccessEntry,
    judge_acl,
)
from tests.kit.other_user import require_other_user

posix = pytest.mark.skipif(os.name == "nt", reason="POSIX modes")


def refusal(call, *args, **kwargs) -> UntrustedStorageError:
    with pytest.raises(UntrustedStorageError) as raised:
        call(*args, **kwargs)
    return raised.value


@pytest.fixture
def base(tmp_path: Path) -> Path:
    tmp_path.chmod(0o755)
    return tmp_path


def private_root(base: Path) -> Path:
    root = base / "storage"
    (root / ".venv" / "bin").mkdir(parents=True)
    root.chmod(0o700)
    return root


@posix
@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
def test_a_root_others_or_the_group_can_write_is_refused(base, mode):
    root = private_root(base)
    root.chmod(mode)
    error = refusal(check_storage_root, root)
    assert (error.finding.path, error.finding.flaw, error.finding.place) == (root, Flaw.OTHERS_CAN_WRITE, Place.ROOT)
    assert f"(mode {mode:04o})" in str(error) and f"chmod 700 '{root}'" in str(error)


@posix
def test_a_private_or_merely_readable_root_is_trusted_and_a_missing_one_judged_by_its_folders(base):
    root = private_root(base)
    assert check_storage_root(root) == root
    root.chmod(0o755)  # others may read (the server tightens that); they cannot change anything
    assert check_server_files(root) == root
    assert check_storage_root(base / "not yet" / "storage") == base / "not yet" / "storage"


@posix
def test_a_folder_above_that_others_can_write_is_refused_unless_sticky(base):
    above = base / "shared"
    above.mkdir()
    root = private_root(above)
    above.chmod(0o777)
    error = refusal(check_storage_root, root)
    assert (error.finding.path, error.finding.place) == (above, Place.ABOVE)
    assert "could replace the Storage Root; choose another Storage Root" in str(error)
    above.chmod(0o1777)  # /tmp: others may add entries, never rename or delete ours
    assert check_storage_root(root) == root
    assert check_storage_root(above / "missing") == above / "missing"  # the client creates it, then checks it is its


@posix
def test_a_link_to_a_root_is_judged_on_both_paths(base):
    real = private_root(base)
    open_folder = base / "open"
    open_folder.mkdir()
    open_folder.chmod(0o777)
    link = open_folder / "storage"
    link.symlink_to(real)
    assert refusal(check_storage_root, link).finding.path == open_folder  # anyone could swap the link
    real.chmod(0o777)
    safe_link = base / "link"
    safe_link.symlink_to(real)
    assert refusal(check_storage_root, safe_link).finding.path == real


@posix
def test_everything_in_the_environment_and_where_its_links_lead_is_checked(base):
    root = private_root(base)
    python = root / ".venv" / "bin" / "python3.12"
    python.write_text("#!/bin/sh\n")
    python.chmod(0o777)
    error = refusal(check_server_files, root)
    assert (error.finding.path, error.finding.place) == (python, Place.INSIDE)
    assert f"chmod -R go-w '{root}'" in str(error)
    python.chmod(0o755)
    interpreter = base / "interpreters" / "python3.12"
    interpreter.parent.mkdir()
    interpreter.write_text("#!/bin/sh\n")
    (root / ".venv" / "bin" / "python").symlink_to(interpreter)
    assert check_server_files(root) == root
    interpreter.parent.chmod(0o777)  # the base interpreter's folder: another user could replace what runs
    error = refusal(check_server_files, root)
    assert (error.finding.path, error.finding.place) == (interpreter.parent, Place.LINKED)


@posix
def test_a_linked_environment_is_walked_where_it_really_is(base):
    """The test kit links a cached `.venv` into each test root: the cache is held to the same rule."""
    root = base / "storage"
    root.mkdir(mode=0o700)
    cache = base / "cache" / ".venv"
    (cache / "lib").mkdir(parents=True)
    (root / ".venv").symlink_to(cache, target_is_directory=True)
    assert check_server_files(root) == root
    (cache / "lib").chmod(0o777)
    error = refusal(check_server_files, root)
    assert (error.finding.path, error.finding.place) == (cache / "lib", Place.LINKED)
    assert "which the Storage Root" in str(error)


@posix
def test_a_folder_linked_from_inside_a_tree_is_walked_too(base):
    """The convert-model tests link a cached converter environment into `converters/`; users link model folders."""
    root = private_root(base)
    elsewhere = base / "elsewhere" / "env"
    (elsewhere / "bin").mkdir(parents=True)
    (root / "models").mkdir()
    (root / "models" / "linked").symlink_to(elsewhere, target_is_directory=True)
    assert check_server_files(root) == root
    (elsewhere / "bin").chmod(0o777)
    assert refusal(check_server_files, root).finding.path == elsewhere / "bin"


@posix
def test_uvs_lock_file_is_the_one_writable_file_allowed(base):
    """uv creates `.venv/.lock` 0666 whatever the umask; it is only ever locked, never read."""
    root = private_root(base)
    lock = root / ".venv" / ".lock"
    lock.write_text("")
    lock.chmod(0o666)
    assert check_server_files(root) == root
    other = root / ".venv" / "lock.pth"
    other.write_text("")
    other.chmod(0o666)
    assert refusal(check_server_files, root).finding.path == other


@posix
def test_records_and_model_files_must_be_ours_too(base):
    root = private_root(base)
    record = root / "server-process.json"
    record.write_text("{}")
    record.chmod(0o646)
    assert refusal(check_inside, root, "server-process.json").finding.path == record
    model = root / "models" / "kit" / "model.onnx"
    model.parent.mkdir(parents=True)
    model.write_bytes(b"")
    model.parent.chmod(0o777)
    record.chmod(0o600)
    assert refusal(check_server_files, root).finding.path == model.parent
    assert check_inside(root, "missing/file.json") is None  # nothing there to run or read


@posix
def test_what_another_user_owns_is_refused(base):
    uid, gid = require_other_user()
    root = private_root(base)
    os.chown(root / ".venv" / "bin", uid, gid)
    error = refusal(check_server_files, root)
    assert (error.finding.flaw, error.finding.owner) == (Flaw.OWNED_BY_OTHER, uid)
    assert str(error).startswith(f"{root / '.venv' / 'bin'} in the Storage Root belongs to another user (uid {uid})")
    os.chown(root, uid, gid)
    assert refusal(check_storage_root, root).finding.place is Place.ROOT


# -- Windows: the rule on an owner and a DACL ----------------------------------------------------------------------

USER = "S-1-5-21-1-2-3-1001"
OTHER = "S-1-5-21-1-2-3-1002"
USERS = "S-1-5-32-545"
SYSTEM, ADMINISTRATORS, AUTHENTICATED = "S-1-5-18", "S-1-5-32-544", "S-1-5-11"


def allow(sid: str, mask: int, flags: int = 0) -> AccessEntry:
    return AccessEntry(0, flags, mask, sid)


def test_a_profile_folder_acl_is_trusted():
    """%USERPROFILE%: SYSTEM, Administrators and the user, full control."""
    access = judge_acl(
        USER, USER, [allow(SYSTEM, GENERIC_ALL), allow(ADMINISTRATORS, GENERIC_ALL), allow(USER, GENERIC_ALL)]
    )
    assert access.owner_trusted and not access.writers and not access.replacers


def test_others_writing_owning_or_a_null_dacl_are_not_trusted():
    assert judge_acl(OTHER, USER, []).owner_trusted is False
    assert judge_acl(USER, USER, [allow(USERS, FILE_WRITE_DATA)]).writers == {USERS}
    assert judge_acl(USER, USER, None).replacers == {"S-1-1-0"}  # NULL DACL: everyone, everything
    assert judge_acl(USER, USER, [AccessEntry(1, 0, GENERIC_ALL, USERS)]).writers == frozenset()  # a deny entry


def test_a_drive_root_lets_users_add_folders_but_not_replace_them():
    """C:\\ grants Authenticated Users "create folders" on itself and "modify" (inherit-only) below: as an ancestor
    that is like a sticky /tmp; a folder created there inherits the modify right, which makes it untrusted."""
    drive = judge_acl(
        SYSTEM,
        USER,
        [allow(AUTHENTICATED, FILE_APPEND_DATA), allow(AUTHENTICATED, DELETE | FILE_WRITE_DATA, INHERIT_ONLY_ACE)],
    )
    assert drive.writers == {AUTHENTICATED} and drive.replacers == frozenset()
    created = judge_acl(USER, USER, [allow(AUTHENTICATED, DELETE | FILE_WRITE_DATA | FILE_DELETE_CHILD)])
    assert created.replacers == {AUTHENTICATED}
