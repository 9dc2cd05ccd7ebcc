"""Inference core: which devices exist, how sessions are made, the one run entry point, the session cache.

Adapters use the BlendJob resource "models" (a ModelManager):

    handle = context.resource("models").acquire(entry, params.device, warn=job_warner(context))
    outputs = handle.run({"input": array}, last_run=True)
    handle.provider  # what really ran, for the job's result
"""

from .job_messages import current_fraction, job_warner
from .model_manager import ModelManager, SessionHandle

__all__ = ["ModelManager", "SessionHandle", "current_fraction", "job_warner"]
