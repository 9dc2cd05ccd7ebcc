"""A throwaway certificate authority and a server certificate signed by it, for loopback TLS servers.

    ca, cert, key = loopback_tls(tmp_path, ["index.imageforge.invalid", "hub.imageforge.invalid"])
    SimpleIndex(..., tls=(cert, key))        # clients trust `ca` (SSL_CERT_FILE, REQUESTS_CA_BUNDLE)

Made with openssl's command line (a leaf signed by a CA: rustls, in uv, refuses a CA used as the server's own).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def loopback_tls(folder: Path, names: list[str]) -> tuple[Path, Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: no certificate for the loopback TLS server")
    folder.mkdir(parents=True, exist_ok=True)
    ca, ca_key = folder / "ca.pem", folder / "ca.key"
    cert, key, request = folder / "server.pem", folder / "server.key", folder / "server.csr"
    extensions = folder / "server.ext"
    alt_names = ",".join([*(f"DNS:{name}" for name in names), "IP:127.0.0.1"])
    extensions.write_text(f"basicConstraints=CA:FALSE\nsubjectAltName={alt_names}\nextendedKeyUsage=serverAuth\n")

    def openssl(*arguments: str) -> None:
        subprocess.run(["openssl", *arguments], check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=ImageForge test CA",
            "-keyout", str(ca_key), "-out", str(ca))  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={names[0]}", "-keyout", str(key),
            "-out", str(request))  # fmt: skip
    openssl("x509", "-req", "-in", str(request), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial",
            "-days", "2", "-extfile", str(extensions), "-out", str(cert))  # fmt: skip
    return ca, cert, key
