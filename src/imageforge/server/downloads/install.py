"""Make catalog models ready on disk: check every file, fetch what is missing, from the right source.

Per file, sources are tried in `DownloadSources.order()`: the hub, then the mirror (a folder mirror first, then
the hub). What happens on failure depends on its kind (failures.py):
- a transfer that broke (the source answered, then the connection dropped or ended early, even inside the
  first chunk) is resumed from the same source with a Range request: up to `RetryPolicy.retries` times in a
  row with exponential backoff (0.5, 1, 2, 4, 8 s), the count starting again whenever the `.part` grew
  (a source silent for the whole idle timeout without sending anything counts as unreachable instead);
- a hub that cannot be reached switches this server to the mirror for good (when one is configured);
- a source that refuses one file (404; a folder mirror also for a file it cannot open) sends only that file to
  the next source;
- wrong bytes, a full disk and cancellation end the job at once.

Every file is streamed by fetch.py. For a hub file whose size or hash the catalog does not declare,
huggingface_hub first asks the hub for its commit, size and LFS SHA-256 (hub_library.py), and the bytes come
from that commit's resolve URL, checked against that hash.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ...contract import ModelUnavailableError
from ...contract.catalog import ModelEntry
from ...contract.conversions import CONVERTED_FROM
from ...contract.health import DownloadSource
from ...contract.model_files import FileState, FileStatus, model_status, remember_hash
from .failures import DownloadCancelled, SourceRefused, SourceUnreachable, TransferBroken, gave_up
from .fetch import Expected, FetchOutcome, PartOpener, fetch_file, open_part
from .meter import Report, TransferMeter
from .sources import MIRROR_VARIABLE, DownloadSources
from .store import drop_library_staging, forget

Log = Callable[[str], None]
# The add-on's button for each family a conversion makes (addon/operators/models.py), for the sentence below.
CONVERSION_BUTTONS = {
    "multiview": " or the Models panel's Prepare DA3 camera model… button",
    "segment": " or the Models panel's Prepare Click Select model… button",
}


@dataclass(frozen=True)
class RetryPolicy:
    """How often a broken transfer is resumed from the same source, and how long to wait before each try."""

    retries: int = 5
    first_delay: float = 0.5
    max_delay: float = 8.0

    def delay(self, retry: int) -> float:
        """Seconds before retry number `retry` (1-based): 0.5, 1, 2, 4, 8 by default."""
        return min(self.first_delay * 2.0 ** (retry - 1), self.max_delay)


RETRY = RetryPolicy()


@dataclass(frozen=True)
class _Transfers:
    """What every file's fetch in one ensure_models call shares."""

    storage_root: Path
    sources: DownloadSources
    meter: TransferMeter
    cancelled: Callable[[], bool]
    log: Log
    writer: PartOpener
    retry: RetryPolicy


def ensure_models(
    storage_root: Path,
    entries: list[ModelEntry],
    *,
    sources: DownloadSources,
    report: Report,
    cancelled: Callable[[], bool],
    log: Log = lambda _message: None,
    writer: PartOpener = open_part,
    retry: RetryPolicy = RETRY,
) -> dict[str, dict[str, str]]:
    """Return {model key: {file path: "ready" | "downloaded"}} once every file is verified."""
    storage_root = Path(storage_root)
    unique = list({entry.key: entry for entry in entries}.values())
    report(0.0, "Checking model files")
    statuses = [model_status(storage_root, entry) for entry in unique]
    outcome = {status.entry.key: {item.file.path: "ready" for item in status.files} for status in statuses}
    missing = [(status.entry, item) for status in statuses for item in status.files if not item.ready]
    for entry, item in missing:
        if CONVERTED_FROM in entry.options:  # made on this machine: no source has the file
            button = CONVERSION_BUTTONS.get(entry.family, "")
            raise ModelUnavailableError(
                f"{entry.label} was converted on this machine and its file is {item.state.value.replace('_', ' ')}; "
                f"convert it again with 'imageforge models convert {entry.options[CONVERTED_FROM]}'{button}."
            )
    meter = TransferMeter(report, total_bytes=sum(item.file.size or 0 for _, item in missing))
    transfers = _Transfers(storage_root, sources, meter, cancelled, log, writer, retry)
    for entry, item in missing:
        if item.state in (FileState.WRONG_SIZE, FileState.WRONG_HASH):
            log(f"{item.path} is {item.state.value.replace('_', ' ')}; fetching it again")
            forget(storage_root, item.path)
        meter.start_file(entry.label, item.file.size)
        result = _fetch(transfers, entry, item)
        remember_hash(storage_root, result.path, result.sha256)
        meter.finish_file(result.size)
        outcome[entry.key][item.file.path] = "downloaded"
        log(f"{entry.key} {item.file.path}: {result.size} bytes, {result.resumed_from} resumed, sha256 {result.sha256}")
    report(1.0, "Models are ready")
    return outcome


def _fetch(transfers: _Transfers, entry: ModelEntry, item: FileStatus) -> FetchOutcome:
    sources, log = transfers.sources, transfers.log
    failures: list[Exception] = []
    order = sources.order()
    for source in order:
        try:
            return _fetch_from(transfers, source, entry, item)
        except SourceUnreachable as error:
            failures.append(error)
            log(f"{source.value} unreachable: {error}")
            if source is DownloadSource.HUB and sources.hub_unreachable(str(error)):
                log("switched to the mirror for the rest of this server's life")
                continue
            if (
                source is DownloadSource.HUB
                and sources.settings.mirror is None
                and not isinstance(error, TransferBroken)
            ):
                raise SourceUnreachable(
                    f"{error} Set {MIRROR_VARIABLE} (a mirror) or HF_ENDPOINT (another hub) to download elsewhere."
                ) from error
            raise
        except SourceRefused as error:
            failures.append(error)
            sources.note_error(str(error))
            log(f"{source.value} refused: {error}")
    if len(failures) > 1 and order[0] is DownloadSource.MIRROR:  # the studio's folder, then the hub: say both
        folder, hub = failures[0], failures[-1]
        raise ModelUnavailableError(f"{str(folder).rstrip('.')}; from the hub: {hub}") from hub
    raise failures[-1]


def _fetch_from(transfers: _Transfers, source: DownloadSource, entry: ModelEntry, item: FileStatus) -> FetchOutcome:
    sources, retry = transfers.sources, transfers.retry
    retries = 0  # in a row, without the `.part` growing
    while True:
        try:
            if source is DownloadSource.HUB and not item.file.streamable:
                return _fetch_undeclared(transfers, entry, item)
            return fetch_file(
                sources.session,
                sources.url(source, entry, item.file),
                item.path,
                expected=Expected(item.file.size, item.file.sha256, ceiling=entry.max_file_size),
                timeouts=sources.timeouts,
                on_progress=transfers.meter.file_progress,
                cancelled=transfers.cancelled,
                writer=transfers.writer,
            )
        except TransferBroken as error:
            if not error.worth_retrying:
                raise
            retries = 1 if error.progressed else retries + 1
            if retries > retry.retries:
                raise gave_up(error, retries) from error
            delay = retry.delay(retries)
            transfers.log(f"{error}; retry {retries} of {retry.retries} in {delay:g} s, resuming the part")
            _wait(delay, transfers.cancelled)


def _wait(seconds: float, cancelled: Callable[[], bool]) -> None:
    """Sleep before a retry, still answering a cancel within a tenth of a second."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if cancelled():
            raise DownloadCancelled()
        time.sleep(min(left, 0.1))


def _fetch_undeclared(transfers: _Transfers, entry: ModelEntry, item: FileStatus) -> FetchOutcome:
    """A hub file the catalog declares no size or hash for: the hub says which, then it is streamed like any."""
    from .hub_library import ask_hub  # huggingface_hub is imported only when needed

    sources = transfers.sources
    drop_library_staging(transfers.storage_root, entry)
    found = ask_hub(
        entry.repository,
        item.file,
        hub=sources.settings.hub,
        timeouts=sources.timeouts,
        ceiling=entry.max_file_size,
        cancelled=transfers.cancelled,
    )
    return fetch_file(
        sources.session,
        found.url,
        item.path,
        expected=Expected(
            item.file.size, item.file.sha256 or found.sha256, ceiling=entry.max_file_size, announced=found.size
        ),
        timeouts=sources.timeouts,
        on_progress=transfers.meter.file_progress,
        cancelled=transfers.cancelled,
        writer=transfers.writer,
        headers=found.headers,
    )
