"""The BlendJob JobServer with every ImageForge job registered."""

from __future__ import annotations

from blendjob import JobServer

from ..contract import JOB_SPECS
from ..contract.private_storage import make_storage_private
from ..contract.server_clients import DEFAULT_LINGER_SECONDS, ClientKind
from .clients import ClientRegistry
from .downloads.sources import DownloadSources
from .handler import make_handler
from .inference import ModelManager
from .inference.devices import intra_op_threads
from .job_folders import InterruptedJobs, mark_interrupted_jobs
from .job_steps.segment_embeddings import SegmentEmbeddings
from .jobs import JOB_RUNNERS
from .security import AuthenticatedJobServer

SERVER_NAME = "imageforge"


def create_server() -> JobServer:
    job_server = AuthenticatedJobServer(SERVER_NAME, max_job_history=100)
    for job_id, spec in JOB_SPECS.items():
        job_server.job(job_id.value)(make_handler(spec, JOB_RUNNERS[job_id]))

    @job_server.resource("job_folders")  # type: ignore[untyped-decorator]  # BlendJob ships no types
    def job_folders(bound_server: JobServer) -> InterruptedJobs:
        # Runs once the server is bound to its storage root: make it private (an earlier version or the
        # client's umask may have left it readable), then settle what a killed server left behind.
        make_storage_private(bound_server.storage_root)
        return mark_interrupted_jobs(bound_server.storage_root)

    @job_server.resource("downloads")  # type: ignore[untyped-decorator]  # BlendJob ships no types
    def downloads(_bound_server: JobServer) -> DownloadSources:
        # The hub-or-mirror choice, sticky for this process; its snapshot() is what the panel shows.
        return DownloadSources()

    @job_server.resource("models")  # type: ignore[untyped-decorator]  # BlendJob ships no types
    def models(bound_server: JobServer) -> ModelManager:
        # One warm session per model family, shared by jobs; ONNX Runtime is detected in the background.
        manager = ModelManager(bound_server.storage_root)
        manager.start_detection()
        return manager

    @job_server.resource("segment_embeddings")  # type: ignore[untyped-decorator]  # BlendJob ships no types
    def segment_embeddings(_bound_server: JobServer) -> SegmentEmbeddings:
        # The last image's SAM 2 embedding, for the clicks after its encoding (server/click_route.py).
        return SegmentEmbeddings()

    @job_server.resource("clients")  # type: ignore[untyped-decorator]  # BlendJob ships no types
    def clients(bound_server: JobServer) -> ClientRegistry:
        # Who is attached; ends leases of vanished clients (cancelling their jobs), exits after the linger time.
        registry = ClientRegistry(bound_server, linger=getattr(bound_server, "linger", DEFAULT_LINGER_SECONDS))
        models = bound_server.resources["models"]

        def threads_by_who_is_there() -> None:
            # Sessions created from now on use this; a cached session with another count is reloaded on next use.
            models.threads = intra_op_threads(ClientKind.BLENDER in registry.kinds())

        registry.on_change = threads_by_who_is_there
        registry.start()
        return registry

    return job_server


server = create_server()
