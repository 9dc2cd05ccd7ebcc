"""The credentials file: created 0600 whatever the umask, refused when others could read it or it is not ours."""

from __future__ import annotations

import os
import socket
import subprocess

import pytest

from imageforge.client.job_runner import make_runtime
from imageforge.contract.server_credentials import (
    CredentialsError,
    ServerCredentials,
    credentials_path,
    read_credentials,
    remove_credentials,
    write_credentials,
)


def test_it_is_written_0600_even_with_an_open_umask(tmp_path):
    previous = os.umask(0)
    try:
        path = write_credentials(tmp_path, ServerCredentials.issue(4242, "a" * 32))
    finally:
        os.umask(previous)
    assert path.stat().st_mode & 0o777 == 0o600
    assert read_credentials(tmp_path).port == 4242
    assert [entry.name for entry in tmp_path.iterdir()] == [path.name]  # no temporary left behind


def test_each_issue_is_a_fresh_token_of_at_least_128_bits():
    tokens = {ServerCredentials.issue(1, "x").token for _ in range(50)}
    assert len(tokens) == 50 and min(len(token) for token in tokens) >= 43  # 256 bits in URL-safe base64


def test_a_file_others_may_read_is_refused(tmp_path):
    path = write_credentials(tmp_path, ServerCredentials.issue(4242, "a" * 32))
    path.chmod(0o644)
    with pytest.raises(CredentialsError, match="readable by other users"):
        read_credentials(tmp_path)


def test_a_link_a_malformed_file_and_a_short_token_are_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    real = write_credentials(elsewhere, ServerCredentials.issue(1, "x"))
    root = tmp_path / "root"
    root.mkdir()
    credentials_path(root).symlink_to(real)
    with pytest.raises(CredentialsError):
        read_credentials(root)
    credentials_path(root).unlink()
    write_credentials(root, ServerCredentials(token="short", port=1, instance_id="x"))
    with pytest.raises(CredentialsError, match="shorter than 128 bits"):
        read_credentials(root)
    credentials_path(root).write_text("{not json")
    with pytest.raises(CredentialsError, match="malformed"):
        read_credentials(root)


def test_only_the_start_that_wrote_it_removes_it(tmp_path):
    write_credentials(tmp_path, ServerCredentials.issue(1, "new"))
    remove_credentials(tmp_path, "old")
    assert credentials_path(tmp_path).exists()
    remove_credentials(tmp_path, "new")
    assert not credentials_path(tmp_path).exists()


@pytest.mark.slow
def test_the_server_refuses_to_run_without_its_own_credentials(server_storage):
    """A server that cannot authenticate must not serve at all: no file, or a file for another start, ends it."""
    runtime = make_runtime(server_storage)
    command = runtime.server_command(free_port(), "b" * 32)
    missing = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=server_storage)
    assert missing.returncode != 0 and "Cannot read the server credentials" in missing.stderr

    write_credentials(server_storage, ServerCredentials.issue(4242, "c" * 32))
    foreign = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=server_storage)
    assert foreign.returncode != 0 and "belong to another server start" in foreign.stderr


def free_port() -> int:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        return listener.getsockname()[1]
