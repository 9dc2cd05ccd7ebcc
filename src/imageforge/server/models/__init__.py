"""Model adapters: one small class per model family behind one factory, chosen by the catalog's `adapter`.

An adapter prepares inputs for its model, runs it through the inference entry point (a SessionHandle
from the "models" resource) and turns raw outputs into arrays the jobs write. Variants of a family are
catalog configuration (entry.options), not copies of code.
"""

from . import ben2, da3, lama, moge2, upscale  # noqa: F401  (importing an adapter module registers it)
from .base import Adapter, adapter_class, load_adapter

__all__ = ["Adapter", "adapter_class", "load_adapter"]
