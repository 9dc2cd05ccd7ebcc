"""A model download inside a running job: the image job fetching its missing model, or the download jobs.

The source choice (hub or mirror) lives in the server's `downloads` resource so that it outlives the job;
the download's progress fills a share of the job's bar with its own message (file, percentage, speed), and
cancellation becomes BlendJob's `JobCancelled`, so the job ends `cancelled` with the `.part` files kept for
the next attempt.
"""

from __future__ import annotations

from pathlib import Path

from blendjob.server import JobCancelled

from ...contract.catalog import ModelEntry
from ..job_context import JobContext, resource_of
from .failures import DownloadCancelled
from .install import ensure_models
from .sources import DownloadSources

RESOURCE = "downloads"


def download_into_job(
    context: JobContext, entries: list[ModelEntry], *, within: tuple[float, float] = (0.0, 1.0)
) -> dict[str, dict[str, str]]:
    """Make `entries` ready inside any job (an image job fetching its missing model), with its progress.

    The download's own 0 → 1 fills `within` of the job's bar (an image job gives it the share before its
    model runs); the message (file, percentage, speed) is the download's own.
    """
    start, end = within

    def report(fraction: float, message: str) -> None:
        context.progress(start + (end - start) * fraction, message)

    try:
        sources = resource_of(context, RESOURCE, DownloadSources)
    except KeyError:  # a server built without the resource still downloads, from the hub first
        sources = DownloadSources()
    try:
        outcome = ensure_models(
            Path(context.storage_root),
            entries,
            sources=sources,
            report=report,
            cancelled=lambda: cancel_requested(context),
            log=context.log,
        )
    except DownloadCancelled:
        raise JobCancelled("Download cancelled; it will resume next time.") from None
    return outcome


def cancel_requested(context: JobContext) -> bool:
    """BlendJob's public cancellation check raises; the download loop wants a yes or no between chunks."""
    try:
        context.check_cancelled()
    except JobCancelled:
        return True
    return False
