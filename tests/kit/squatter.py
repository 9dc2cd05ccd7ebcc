"""A hostile local program that listens where ImageForge's job server should be (standard library only).

Run as a script, preferably as another user (`tests.kit.squatter.start_squatter` uses `nobody` when the tests
run as root): it binds 127.0.0.1:PORT, answers `/health` exactly as BlendJob does (with the instance id it read
from the process table), accepts any job, and reports it succeeded with a "result" in its own folder. Every
request it receives (line, headers, body) is written to stdout as one JSON line, so a test can prove what it
never got. With `--source-root` and `--token` it also answers the handshake correctly: a server that holds the
token but lies about where the results are.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

JOB_ID = "5" * 32


def serve(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--instance-id", required=True)
    parser.add_argument("--folder", required=True, help="where its fake results live")
    parser.add_argument("--source-root", help="import imageforge.contract from here (to prove the token)")
    parser.add_argument("--token")
    args = parser.parse_args(argv)
    credentials = None
    if args.token:
        sys.path.insert(0, args.source_root)
        from imageforge.contract.server_credentials import ServerCredentials

        credentials = ServerCredentials(args.token, args.port, args.instance_id)
    Path(args.folder, "stolen.png").write_bytes(b"not yours")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_args) -> None:
            pass

        def answer(self, status: int, payload: object = None, headers: dict[str, str] | None = None) -> None:
            body = b"" if payload is None else json.dumps(payload).encode()
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def record(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
            line = {"method": self.command, "path": self.path, "headers": dict(self.headers.items()), "body": body}
            print(json.dumps(line), flush=True)

        def do_GET(self) -> None:
            self.record()
            if self.path == "/imageforge/handshake":
                challenge = self.headers.get("X-ImageForge-Challenge", "")
                proof = credentials.proof(challenge) if credentials else "0" * 64
                self.answer(200, headers={"X-ImageForge-Proof": proof})
            elif self.path == "/health":
                self.answer(200, health(args.instance_id))
            elif self.path.startswith("/jobs/"):
                self.answer(200, job(args.folder, "succeeded", result={"image": "stolen.png"}))
            else:
                self.answer(200, {})

        def do_POST(self) -> None:
            self.record()
            if self.path == "/jobs":
                self.answer(202, job(args.folder, "queued"))
            elif self.path == "/imageforge/clients":
                self.answer(200, {"client_id": "c" * 32})
            else:
                self.answer(202, {"state": "stopping", "known": True})

        def do_DELETE(self) -> None:
            self.record()
            self.answer(202, job(args.folder, "cancelling"))

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(json.dumps({"listening": args.port, "uid": os.getuid()}), flush=True)
    server.serve_forever()


def health(instance_id: str) -> dict:
    return {
        "ready": True,
        "server": "imageforge",
        "instance_id": instance_id,
        "busy": False,
        "active_job": None,
        "queued_jobs": 0,
        "started_at": time.time(),
        "resources": {},
    }


def job(folder: str, state: str, **extra: object) -> dict:
    return {
        "job_id": JOB_ID,
        "job_type": "x",
        "state": state,
        "progress": 1.0,
        "message": state,
        "directory": folder,
        **extra,
    }


# -- the test side ---------------------------------------------------------------------------------------------


@dataclass
class Squatter:
    process: subprocess.Popen
    folder: Path
    uid: int

    def requests(self) -> list[dict]:
        """Every request it received so far (it writes one JSON line per request)."""
        self.process.terminate()
        output, _ = self.process.communicate(timeout=10)
        lines = [json.loads(line) for line in output.splitlines() if line.strip()]
        return [line for line in lines if "method" in line]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


def _others_can_enter(folder: Path) -> bool:
    """Whether a user outside the owner and group can reach into `folder`: it and every folder above searchable."""
    return all(each.stat().st_mode & 0o001 for each in (folder, *folder.parents))


def other_user() -> tuple[int, str] | None:
    """('nobody''s uid, a Python it can run) when the tests run as root, else None (the squatter runs as us).

    Also None when `nobody` could not read this checkout or reach the temporary folder (a clone inside a
    0700 `mktemp -d` folder, as CI's clean-clone check makes): the squatter then runs as us, as for a non-root run.
    """
    here = Path(__file__).resolve()
    readable = _others_can_enter(here.parent) and here.stat().st_mode & 0o004
    if os.geteuid() != 0 or not (readable and _others_can_enter(Path(tempfile.gettempdir()))):
        return None
    import pwd

    python = shutil.which("python3.11") or shutil.which("python3")
    try:
        return pwd.getpwnam("nobody").pw_uid, "/usr/bin/python3.11" if Path("/usr/bin/python3.11").exists() else python
    except KeyError:
        return None


def start_squatter(port: int, instance_id: str, *, token: str | None = None) -> Squatter:
    """Start the squatter on `port` (as `nobody` when possible) and wait until it listens."""
    folder = Path(tempfile.mkdtemp(prefix="squatter-"))
    user = other_user()
    python = user[1] if user else sys.executable
    command = [python, str(Path(__file__).resolve()), "--port", str(port), "--instance-id", instance_id]
    command += ["--folder", str(folder)]
    if token:
        command += ["--token", token, "--source-root", str(Path(__file__).resolve().parents[2] / "src")]
    if user:
        folder.chmod(0o777)
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, text=True, user=user[0] if user else None, cwd="/", env={"PATH": "/usr/bin"}
    )
    first = process.stdout.readline()
    if not first:
        process.wait(timeout=10)
        raise OSError(f"the squatter could not listen on {port} (exit {process.returncode})")
    return Squatter(process, folder, json.loads(first)["uid"])


def try_to_bind(port: int) -> str:
    """Bind and listen on `port` as another user, as an attacker would; returns 'bound' or the errno's name."""
    user = other_user()
    python = user[1] if user else sys.executable
    code = (
        "import socket,errno\n"
        "s=socket.socket()\n"
        "try:\n"
        f"    s.bind(('127.0.0.1',{port})); s.listen(); print('bound')\n"
        "except OSError as e:\n"
        "    print(errno.errorcode.get(e.errno, str(e)))\n"
    )
    done = subprocess.run(
        [python, "-c", code], capture_output=True, text=True, timeout=30, user=user[0] if user else None, cwd="/"
    )
    return done.stdout.strip()


def free_port() -> int:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        return listener.getsockname()[1]


if __name__ == "__main__":
    serve(sys.argv[1:])
