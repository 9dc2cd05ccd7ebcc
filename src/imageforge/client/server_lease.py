"""Leases: this client's claim on the shared server (client/attachment.py), and who else holds one.

A client attaches once the server answers and detaches when done; the server lingers for its other clients and
exits after its linger time when none is left (openspec/0015). Stop stops it for everyone, so it asks first
when others use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from blendjob.controller import ServerConnection

from ..contract.errors import InputError
from ..contract.server_clients import ClientKind
from .attachment import Attachment, this_process_kind

if TYPE_CHECKING:
    from ..contract.health import ClientLease


class Lease:
    """This client's lease on the server it is connected to (one at a time), renewed for each new server."""

    def __init__(self, kind: ClientKind | None = None) -> None:
        self.kind = kind or this_process_kind()
        self.attachment: Attachment | None = None

    def hold(self, connection: ServerConnection) -> None:
        """Attach to this connection's server, unless already attached to it (ending a lease on another)."""
        if self.attachment is not None and self.attachment.instance_id == connection.instance_id:
            return
        self.end()
        attachment = Attachment(connection.client, connection.instance_id, self.kind)
        attachment.attach()
        self.attachment = attachment

    def end(self) -> None:
        attachment, self.attachment = self.attachment, None
        if attachment is not None:
            attachment.detach()

    def others(self, snapshot: Mapping[str, Any]) -> list[ClientLease]:
        """The other clients attached to the server (from the last health snapshot): Stop stops theirs too."""
        from ..contract.health import ClientsHealth  # only Stop asks: kept off the CLI's start-up

        own = self.attachment.client_id if self.attachment is not None else None
        raw = (snapshot.get("resources") or {}).get("clients")
        try:
            listed = ClientsHealth.from_json(raw).clients if raw is not None else ()
        except InputError:
            return []  # an unreadable snapshot names nobody; the next poll brings a fresh one
        return [client for client in listed if client.client_id != own]


def stop_confirmation(others: list[ClientLease]) -> str | None:
    """What Stop asks when other clients use the server (None: nobody else, stop at once)."""
    if not others:
        return None
    names = ", ".join(
        f"{'Blender' if client.kind == ClientKind.BLENDER.value else 'the imageforge command'} (pid {client.pid})"
        for client in others
    )
    return f"The server is also used by {names}; stopping it cancels their jobs too."
