"""Who owns a path on Windows, and who besides its user may write it: contract/storage_trust.py's rule on the ACL.

Windows has no mode bits; a file's owner SID and its DACL decide. `read_access` reads them with the Win32
security API (GetNamedSecurityInfoW, through ctypes); `judge_acl` is the rule, plain Python, tested on every
platform with the access lists Windows gives (openspec/0024 says what is and is not checked):

- the owner must be the user, SYSTEM, Administrators or TrustedInstaller;
- an allow entry that applies to the object itself (not inherit-only) and grants a write, delete or
  permission-changing right to any other SID makes the path writable by others; deny entries are not
  subtracted (a refusal errs towards safety); a missing (NULL) DACL means everyone may do anything;
- `replace` rights are those that let others remove or rename what is inside or change the rules
  (delete child, delete, write DAC, write owner, generic all): a folder *above* the root may grant others
  the right to add entries (`C:\\` lets every user create folders), as a sticky `/tmp` does on POSIX, but
  not these.
"""

from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass
from pathlib import Path

# Well-known SIDs trusted as owners and writers besides the user: SYSTEM, Administrators, TrustedInstaller, and
# the placeholders that stand for the owner itself (CREATOR OWNER, OWNER RIGHTS).
TRUSTED_SIDS = frozenset(
    {
        "S-1-5-18",
        "S-1-5-32-544",
        "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464",
        "S-1-3-0",
        "S-1-3-4",
    }
)
FILE_WRITE_DATA = 0x2  # a folder: add a file
FILE_APPEND_DATA = 0x4  # a folder: add a subfolder
FILE_WRITE_EA = 0x10
FILE_DELETE_CHILD = 0x40
FILE_WRITE_ATTRIBUTES = 0x100
DELETE = 0x10000
WRITE_DAC = 0x40000
WRITE_OWNER = 0x80000
GENERIC_ALL = 0x10000000
GENERIC_WRITE = 0x40000000
REPLACE_RIGHTS = FILE_DELETE_CHILD | DELETE | WRITE_DAC | WRITE_OWNER | GENERIC_ALL
WRITE_RIGHTS = (
    REPLACE_RIGHTS | FILE_WRITE_DATA | FILE_APPEND_DATA | FILE_WRITE_EA | FILE_WRITE_ATTRIBUTES | GENERIC_WRITE
)
ACCESS_ALLOWED_ACE_TYPE = 0
ACCESS_ALLOWED_CALLBACK_ACE_TYPE = 9
ALLOWED_TYPES_WITH_OBJECT_DATA = frozenset({5, 11})  # object ACEs: their SID sits after GUIDs; judged as any SID
INHERIT_ONLY_ACE = 0x8
ANYONE = "(an object access entry)"


@dataclass(frozen=True)
class AccessEntry:
    """One ACE as Windows lists it: type, flags, access mask, and the SID it names (as S-1-… text)."""

    kind: int
    flags: int
    mask: int
    sid: str


@dataclass(frozen=True)
class WindowsAccess:
    """What the rule concluded for one path."""

    owner: str
    owner_trusted: bool
    writers: frozenset[str]  # other SIDs that may write, delete or change permissions
    replacers: frozenset[str]  # the subset that may also remove or rename entries, or change the rules


def judge_acl(owner: str, user: str, entries: list[AccessEntry] | None) -> WindowsAccess:
    """The rule on an owner and a DACL (None: a NULL DACL, which grants everyone everything)."""
    trusted = TRUSTED_SIDS | {user}
    writers: set[str] = set()
    replacers: set[str] = set()
    for entry in entries if entries is not None else [AccessEntry(ACCESS_ALLOWED_ACE_TYPE, 0, GENERIC_ALL, "S-1-1-0")]:
        if entry.flags & INHERIT_ONLY_ACE:
            continue  # applies to what is created inside later, not to this object (those are judged themselves)
        if entry.kind in ALLOWED_TYPES_WITH_OBJECT_DATA:
            sid = ANYONE
        elif entry.kind in (ACCESS_ALLOWED_ACE_TYPE, ACCESS_ALLOWED_CALLBACK_ACE_TYPE):
            sid = entry.sid
        else:
            continue  # deny and audit entries grant nothing
        if sid in trusted:
            continue
        if entry.mask & WRITE_RIGHTS:
            writers.add(sid)
        if entry.mask & REPLACE_RIGHTS:
            replacers.add(sid)
    return WindowsAccess(owner, owner in trusted, frozenset(writers), frozenset(replacers))


def read_access(path: Path) -> WindowsAccess:
    """The rule on `path`'s real owner and DACL (Windows only)."""
    if sys.platform != "win32":
        raise OSError("Windows access lists exist only on Windows.")
    owner, entries = _read_security(str(path))
    return judge_acl(owner, _current_user_sid(), entries)


# -- the Win32 calls (run only on Windows) -----------------------------------------------------------------------

SE_FILE_OBJECT = 1
OWNER_SECURITY_INFORMATION = 0x1
DACL_SECURITY_INFORMATION = 0x4
ACL_SIZE_INFORMATION_CLASS = 2
TOKEN_QUERY = 0x8
TOKEN_USER_CLASS = 1


class _AclSizeInformation(ctypes.Structure):
    _fields_ = [("AceCount", ctypes.c_uint32), ("AclBytesInUse", ctypes.c_uint32), ("AclBytesFree", ctypes.c_uint32)]


class _AceHeader(ctypes.Structure):
    _fields_ = [("AceType", ctypes.c_ubyte), ("AceFlags", ctypes.c_ubyte), ("AceSize", ctypes.c_ushort)]


class _AllowedAce(ctypes.Structure):
    _fields_ = [("Header", _AceHeader), ("Mask", ctypes.c_uint32), ("SidStart", ctypes.c_uint32)]


def _sid_text(advapi: ctypes.CDLL, kernel: ctypes.CDLL, sid: int) -> str:
    text = ctypes.c_wchar_p()
    if not advapi.ConvertSidToStringSidW(ctypes.c_void_p(sid), ctypes.byref(text)):
        raise ctypes.WinError(ctypes.get_last_error())  # type: ignore[attr-defined]
    try:
        return str(text.value)
    finally:
        kernel.LocalFree(ctypes.cast(text, ctypes.c_void_p))


def _read_security(path: str) -> tuple[str, list[AccessEntry] | None]:
    advapi = ctypes.WinDLL("advapi32", use_last_error=True)  # type: ignore[attr-defined]
    kernel = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    owner, dacl, descriptor = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    status = advapi.GetNamedSecurityInfoW(
        ctypes.c_wchar_p(path),
        SE_FILE_OBJECT,
        OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
        ctypes.byref(owner),
        None,
        ctypes.byref(dacl),
        None,
        ctypes.byref(descriptor),
    )
    if status:
        raise ctypes.WinError(status)  # type: ignore[attr-defined]
    try:
        owner_sid = _sid_text(advapi, kernel, owner.value or 0)
        if not dacl.value:
            return owner_sid, None
        size = _AclSizeInformation()
        if not advapi.GetAclInformation(dacl, ctypes.byref(size), ctypes.sizeof(size), ACL_SIZE_INFORMATION_CLASS):
            raise ctypes.WinError(ctypes.get_last_error())  # type: ignore[attr-defined]
        entries = []
        for index in range(size.AceCount):
            ace = ctypes.c_void_p()
            if not advapi.GetAce(dacl, index, ctypes.byref(ace)):
                raise ctypes.WinError(ctypes.get_last_error())  # type: ignore[attr-defined]
            allowed = ctypes.cast(ace, ctypes.POINTER(_AllowedAce)).contents
            sid = ""
            if allowed.Header.AceType in (ACCESS_ALLOWED_ACE_TYPE, ACCESS_ALLOWED_CALLBACK_ACE_TYPE):
                sid = _sid_text(advapi, kernel, (ace.value or 0) + _AllowedAce.SidStart.offset)
            entries.append(AccessEntry(allowed.Header.AceType, allowed.Header.AceFlags, allowed.Mask, sid))
        return owner_sid, entries
    finally:
        kernel.LocalFree(descriptor)


def _current_user_sid() -> str:
    advapi = ctypes.WinDLL("advapi32", use_last_error=True)  # type: ignore[attr-defined]
    kernel = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    kernel.GetCurrentProcess.restype = ctypes.c_void_p
    advapi.OpenProcessToken.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_void_p)]
    token = ctypes.c_void_p()
    if not advapi.OpenProcessToken(kernel.GetCurrentProcess(), TOKEN_QUERY, ctypes.byref(token)):
        raise ctypes.WinError(ctypes.get_last_error())  # type: ignore[attr-defined]
    try:
        needed = ctypes.c_uint32()
        advapi.GetTokenInformation(token, TOKEN_USER_CLASS, None, 0, ctypes.byref(needed))
        buffer = ctypes.create_string_buffer(needed.value)
        if not advapi.GetTokenInformation(token, TOKEN_USER_CLASS, buffer, needed, ctypes.byref(needed)):
            raise ctypes.WinError(ctypes.get_last_error())  # type: ignore[attr-defined]
        sid = ctypes.cast(buffer, ctypes.POINTER(ctypes.c_void_p)).contents.value or 0  # TOKEN_USER.User.Sid
        return _sid_text(advapi, kernel, sid)
    finally:
        kernel.CloseHandle(token)
