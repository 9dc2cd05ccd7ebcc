"""The per-start secret that the client hands the job server, the file that carries it, and the handshake.

Both processes import this module: the client (inside Blender or the CLI) writes the file just before it starts
the server, and the server reads it once at start-up. The file lives in the storage root, is created 0600
(never wider, not even for an instant), and stays for the server's lifetime so that a reloaded add-on in the
same Blender can reconnect. A process of the same user can read it; that user could read Blender's memory as
well, so the boundary it draws is against other users and against web pages (openspec/0008).

The token never goes to a process that has not first proven it holds it: on each connection the client sends
a fresh random challenge to `HANDSHAKE_PATH`, the server answers with `proof(challenge)` (an HMAC keyed by the
token), and only then does the client send the token and its request, on that same connection (openspec/0014).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from .errors import ImageForgeError

CREDENTIALS_FILE = "server-credentials.json"
TOKEN_BYTES = 32  # 256 bits
HOST = "127.0.0.1"
HANDSHAKE_PATH = "/imageforge/handshake"
CHALLENGE_HEADER = "X-ImageForge-Challenge"
PROOF_HEADER = "X-ImageForge-Proof"
CHALLENGE_LENGTHS = range(22, 129)  # a client challenge: at least 128 bits of URL-safe base64, bounded


class CredentialsError(ImageForgeError):
    """The credentials file is missing, malformed, for another server start, or readable by others."""


@dataclass(frozen=True)
class ServerCredentials:
    """What one server start needs to accept a request: the token, and where it listens (for the Host check)."""

    token: str
    port: int
    instance_id: str

    @classmethod
    def issue(cls, port: int, instance_id: str) -> ServerCredentials:
        return cls(token=secrets.token_urlsafe(TOKEN_BYTES), port=int(port), instance_id=str(instance_id))

    @property
    def authorization(self) -> str:
        """The `Authorization` header value the server expects."""
        return f"Bearer {self.token}"

    def proof(self, challenge: str) -> str:
        """What only the holder of the token can answer to `challenge`, bound to this start's port and id."""
        message = f"imageforge-server-proof|{self.instance_id}|{self.port}|{challenge}".encode()
        return hmac.new(self.token.encode(), message, hashlib.sha256).hexdigest()

    @property
    def host_header(self) -> str:
        """The only `Host` header the server accepts: its own loopback address and port."""
        return f"{HOST}:{self.port}"


def credentials_path(storage_root: Path) -> Path:
    return Path(storage_root) / CREDENTIALS_FILE


def write_credentials(storage_root: Path, credentials: ServerCredentials) -> Path:
    """Atomically replace the credentials file; the new file is created 0600, so it is never readable by others."""
    path = credentials_path(storage_root)
    temporary = path.with_name(f".{path.name}.{credentials.instance_id}.tmp")
    payload = json.dumps(
        {"token": credentials.token, "port": credentials.port, "instance_id": credentials.instance_id}
    ).encode("utf-8")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(temporary, flags, 0o600)
        try:
            os.write(descriptor, payload)
        finally:
            os.close(descriptor)
        os.replace(temporary, path)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise CredentialsError(f"Cannot write the server credentials in {path.parent}: {error.strerror}.") from error
    return path


def read_credentials(storage_root: Path) -> ServerCredentials:
    """Read the credentials, refusing a link, a file of another user, or one that others may read."""
    path = credentials_path(storage_root)
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as error:
        raise CredentialsError(f"Cannot read the server credentials {path}: {error.strerror}.") from error
    try:
        info = os.fstat(descriptor)
        if os.name != "nt" and (info.st_mode & 0o077 or info.st_uid != os.geteuid()):
            raise CredentialsError(f"The server credentials {path} are readable by other users; refusing them.")
        if not stat.S_ISREG(info.st_mode):
            raise CredentialsError(f"The server credentials {path} are not a regular file.")
        raw = os.read(descriptor, 4096)
    finally:
        os.close(descriptor)
    try:
        record = json.loads(raw.decode("utf-8"))
        credentials = ServerCredentials(
            token=str(record["token"]), port=int(record["port"]), instance_id=str(record["instance_id"])
        )
    except (ValueError, KeyError, TypeError) as error:
        raise CredentialsError(f"The server credentials {path} are malformed.") from error
    if len(credentials.token) < 22:  # 22 URL-safe characters carry 128 bits
        raise CredentialsError(f"The server credentials {path} hold a token shorter than 128 bits.")
    return credentials


def remove_credentials(storage_root: Path, instance_id: str) -> None:
    """Delete the file if it still belongs to `instance_id` (a newer start may already have replaced it)."""
    try:
        current = read_credentials(storage_root)
    except CredentialsError:
        return
    if current.instance_id == instance_id:
        credentials_path(storage_root).unlink(missing_ok=True)
