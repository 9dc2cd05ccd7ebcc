"""A hostile local program that opens idle connections to a port and holds them (standard library only).

Run as a script, as another user when the tests run as root (`start_flood`): it opens up to `--count` TCP
connections to 127.0.0.1:PORT and never sends a byte; with `--reconnect` it opens a new one for each the server
closes, for `--seconds`. At the end it prints one JSON line: how many it opened, how many the server closed, and
the most it held at once.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import select
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


def flood(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--count", type=int, default=1200)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--reconnect", action="store_true")
    args = parser.parse_args(argv)
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, args.count + 256), hard))
    held: list[socket.socket] = []
    opened = closed = most = 0
    print(json.dumps({"flooding": args.port, "uid": os.getuid()}), flush=True)
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        while len(held) < args.count and (args.reconnect or opened < args.count):
            try:
                held.append(socket.create_connection(("127.0.0.1", args.port), timeout=1.0))
                opened += 1
            except OSError:
                break  # the backlog is full or the server refuses: try again on the next pass
        most = max(most, len(held))
        poller = select.poll()  # not select(): it cannot watch descriptors above 1,024
        by_fd = {sock.fileno(): sock for sock in held}
        for descriptor in by_fd:
            poller.register(descriptor, select.POLLIN)
        for descriptor, _event in poller.poll(50) if held else []:
            sock = by_fd[descriptor]
            try:
                gone = sock.recv(1, socket.MSG_PEEK) == b""
            except OSError:
                gone = True
            if gone:
                held.remove(sock)
                sock.close()
                closed += 1
        if not args.reconnect and not held:
            time.sleep(0.05)
    print(json.dumps({"opened": opened, "closed": closed, "most_held": most}), flush=True)


@dataclass
class Flood:
    process: subprocess.Popen[str]
    uid: int

    def result(self, timeout: float = 60.0) -> dict[str, int]:
        output, _ = self.process.communicate(timeout=timeout)
        return json.loads(output.strip().splitlines()[-1])


def start_flood(port: int, *, user: tuple[int, int] | None, count: int, seconds: float, reconnect: bool) -> Flood:
    """Start the flood (as `user` when given: uid, gid) and wait until it runs."""
    # The source is passed, not the path: the other user may not read a checkout inside a private folder.
    source = Path(__file__).read_text(encoding="utf-8")
    command = ["/usr/bin/python3.11" if user else sys.executable, "-c", source, "--port", str(port)]
    command += ["--count", str(count), "--seconds", str(seconds), *(["--reconnect"] if reconnect else [])]
    options = {"user": user[0], "group": user[1], "extra_groups": []} if user else {}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd="/", **options)  # type: ignore[call-overload]
    first = json.loads(process.stdout.readline())  # type: ignore[union-attr]
    return Flood(process, first["uid"])


if __name__ == "__main__":
    flood(sys.argv[1:])
