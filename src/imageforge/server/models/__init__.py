"""Model adapters: one small class per model family behind one factory, chosen by the catalog's `adapter`.

An adapter prepares inputs for its model, runs it through the inference entry point (a SessionHandle
from the "models" resource) and turns raw outputs into arrays the jobs write. Variants of a family are
catalog configuration (entry.options), not copies of code.

Every module of this package is imported here, and an Adapter subclass with a `name` registers itself
(base.py), so a new adapter is a new module: no list to extend. tests/server/models/test_registry.py checks
that every catalog entry's adapter exists and serves the entry's family.
"""

import importlib
import pkgutil

from .base import Adapter, adapter_class, load_adapter, registered_adapters

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["Adapter", "adapter_class", "load_adapter", "registered_adapters"]
