"""The job server's process entry point, run by path with the server environment's Python.

BlendJob's own runner binds the port itself, seconds after the client chose it and put it on the command line,
where any local user can read it and listen there first. Here, on POSIX, the client creates, binds and
listens on the socket before starting this process and passes it as an inherited descriptor (`--listen-fd`):
the port is never free between the client's choice and the server's first answer. On Windows, where a socket
cannot be inherited this way, the server binds `--port` as BlendJob does; the handshake (openspec/0014) keeps
a squatter from learning anything there.

Like BlendJob's runner, it imports `blendjob` from the client's side (`--blendjob-root`), only for that import.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding the `imageforge` package


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="imageforge-server")
    parser.add_argument("--blendjob-root", required=True)
    parser.add_argument("--storage-root", required=True)
    parser.add_argument("--instance-id", required=True)
    listen = parser.add_mutually_exclusive_group(required=True)
    listen.add_argument("--listen-fd", type=int, help="an inherited socket, already bound and listening")
    listen.add_argument("--port", type=int, help="bind 127.0.0.1:PORT here (Windows)")
    parser.add_argument("--parent-pid", type=int, default=0)
    return parser.parse_args(argv)


def import_blendjob(root: str) -> None:
    inserted = root not in sys.path
    if inserted:
        sys.path.insert(0, root)
    try:
        import blendjob.server  # noqa: F401  (cached in sys.modules for the server's imports)
    finally:
        if inserted:
            sys.path.remove(root)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    import_blendjob(args.blendjob_root)
    if str(SOURCE_ROOT) not in sys.path:
        sys.path.insert(0, str(SOURCE_ROOT))

    from imageforge.contract.private_storage import PRIVATE_UMASK

    os.umask(PRIVATE_UMASK)  # before the server creates any folder or file (job folders 0700, files 0600)
    import uvicorn
    from blendjob.server import watch_parent

    from imageforge.server.app import server

    server.bind(args.storage_root)
    app = server.create_app(args.instance_id)
    if args.listen_fd is not None:
        sockets = [socket.socket(fileno=args.listen_fd)]
        config = uvicorn.Config(app, access_log=False, log_level="warning")
    else:
        sockets = None
        config = uvicorn.Config(app, host="127.0.0.1", port=args.port, access_log=False, log_level="warning")
    http_server = uvicorn.Server(config)

    def stop_http_server() -> None:
        server.shutdown_event.wait()
        http_server.should_exit = True

    threading.Thread(target=stop_http_server, name="ImageForgeShutdown", daemon=True).start()
    threading.Thread(
        target=watch_parent, args=(args.parent_pid, server.shutdown_event), name="ImageForgeParent", daemon=True
    ).start()
    http_server.run(sockets=sockets)


if __name__ == "__main__":
    main()
