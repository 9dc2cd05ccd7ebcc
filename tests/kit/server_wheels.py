"""The Linux server wheelhouse the offline-studio test sets up from (tests never reach the network).

`bash tests/sync` runs this once per machine (installing may use PyPI; tests may not): the production export,
`imageforge setup --export-wheelhouse .cache/server-wheelhouse --platform linux`, which takes every pinned
wheel from the first package index that answers and keeps it only with its pinned SHA-256. Wheels already
there with a pinned hash are not fetched again.

    uv run --locked --no-sync python -m tests.kit.server_wheels
"""

from __future__ import annotations

from pathlib import Path

from imageforge.client.package_indexes import index_order
from imageforge.client.wheelhouse import export_wheelhouse

ROOT = Path(__file__).resolve().parents[2]
WHEELHOUSE = ROOT / ".cache" / "server-wheelhouse"


def main() -> None:
    written = export_wheelhouse(WHEELHOUSE, "linux", index_order())
    print(f"server wheelhouse: {len(written)} wheels in {WHEELHOUSE}")


if __name__ == "__main__":
    main()
