"""Catalog entries and download sources pointed at the kit's loopback hub, with timeouts short enough for tests."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from imageforge.contract.catalog import ModelEntry, parse_catalog
from imageforge.server.downloads.install import ensure_models
from imageforge.server.downloads.sources import DownloadSettings, DownloadSources, Timeouts
from tests.kit.catalog import catalog_entry

FAST = Timeouts(connect=0.5, read=1.0)


def content(size: int, seed: int = 0) -> bytes:
    """Deterministic bytes (so a failing test is reproducible), different per seed."""
    block = hashlib.sha256(f"{seed}".encode()).digest() * 64
    return (block * (size // len(block) + 1))[:size]


def entry(
    key: str, files: dict[str, bytes], *, declare: str = "both", directory: str | None = None, **options: object
) -> ModelEntry:
    """The parsed catalog entry for `files` (path -> content), served by the hub as `kit/<directory>`; `options`
    are further catalog fields (`max_file_size`)."""
    raw = catalog_entry(key, files, declare=declare, directory=directory)
    return parse_catalog({"models": [{**raw, **options}]}, Path("test")).models[0]


def sources(hub_url: str, mirror: str | None = None, timeouts: Timeouts = FAST) -> DownloadSources:
    return DownloadSources(DownloadSettings(hub=hub_url, mirror=mirror, timeouts=timeouts))


@dataclass
class Run:
    """What one ensure_models call reported and logged."""

    reports: list[tuple[float, str]] = field(default_factory=list)
    log: list[str] = field(default_factory=list)

    def __call__(self, root: Path, entries: list[ModelEntry], source: DownloadSources, **options):
        return ensure_models(
            root,
            entries,
            sources=source,
            report=lambda fraction, message: self.reports.append((fraction, message)),
            cancelled=options.pop("cancelled", lambda: False),
            log=self.log.append,
            **options,
        )


@pytest.fixture
def run() -> Run:
    return Run()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "storage"


@pytest.fixture(autouse=True)
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loopback hub must be reached directly unless a test sets a proxy on purpose."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    # huggingface_hub keeps one httpx2 client per process and reads the proxy variables when it makes it: a
    # server's environment is fixed at its start, a test's changes with each test.
    from huggingface_hub import close_session

    close_session()
