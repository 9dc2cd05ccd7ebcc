"""The job server's process entry point, run by path with the server environment's Python.

BlendJob's own runner binds the port itself, seconds after the client chose it and put it on the command line,
where any local user can read it and listen there first. Here, on POSIX, the client creates, binds and
listens on the socket before starting this process and passes it as an inherited descriptor (`--listen-fd`):
the port is never free between the client's choice and the server's first answer. On Windows, where a socket
cannot be inherited this way, the server binds `--port` as BlendJob does; the handshake (openspec/0014) keeps
a squatter from learning anything there.

Like BlendJob's runner, it imports `blendjob` from the client's side (`--blendjob-root`), only for that import.
Unlike it, the server does not die with the process that started it: it belongs to the storage root, serves
every client that attaches, and exits after `--linger` seconds with no client and no job (server/clients.py,
openspec/0015). It holds the storage root's lock for its lifetime (`--hold-storage-lock`), so setup, migration
and job-file cleanup cannot write under it; setup's own validation server runs without it (setup holds it).
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
    parser.add_argument("--linger", type=float, required=True, help="seconds with no client and no job")
    parser.add_argument("--hold-storage-lock", action="store_true")
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
    from imageforge.contract.storage_trust import UntrustedStorageError, check_storage_root

    try:  # the client checked before starting this process; a client of another version may not have
        check_storage_root(Path(args.storage_root))
    except UntrustedStorageError as error:
        sys.exit(str(error))
    os.umask(PRIVATE_UMASK)  # before the server creates any folder or file (job folders 0700, files 0600)
    import uvicorn
    from blendjob.storage import StorageLock

    from imageforge.server.app import server

    lock = StorageLock()
    if args.hold_storage_lock:
        try:
            lock.acquire(args.storage_root)
        except RuntimeError:
            sys.exit(f"{args.storage_root} is being set up, moved or cleaned by another process; not starting.")
    from imageforge.server.connection_limits import BACKLOG, KEEP_ALIVE_SECONDS, ConnectionGuard, protocol_class
    from imageforge.server.log_limits import limit_repeats

    server.linger = args.linger
    server.connection_guard = ConnectionGuard()  # what an unproven connection may hold (openspec/0024)
    server.bind(args.storage_root)
    app = server.create_app(args.instance_id)
    sockets = [socket.socket(fileno=args.listen_fd)] if args.listen_fd is not None else None
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0 if args.port is None else args.port,  # unused when serving the inherited socket
        http=protocol_class(server.connection_guard),
        backlog=BACKLOG,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        access_log=False,
        log_level="warning",
    )
    limit_repeats()  # after uvicorn configured its loggers: each message a few times a minute, then counted
    http_server = uvicorn.Server(config)

    def stop_http_server() -> None:
        server.shutdown_event.wait()
        http_server.should_exit = True

    threading.Thread(target=stop_http_server, name="ImageForgeShutdown", daemon=True).start()
    try:
        http_server.run(sockets=sockets)
    finally:
        forget_this_start(Path(args.storage_root), args.instance_id)
        lock.release()


def forget_this_start(root: Path, instance_id: str) -> None:
    """Remove the process record and credentials if they still name this start (a newer one may have begun)."""
    from blendjob.storage import read_json

    from imageforge.contract.server_credentials import remove_credentials

    record = root / "server-process.json"
    if read_json(record).get("instance_id") == instance_id:
        record.unlink(missing_ok=True)
    remove_credentials(root, instance_id)


if __name__ == "__main__":
    main()
