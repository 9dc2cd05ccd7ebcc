"""The adapters are derived, not listed: every module of server/models registers its adapter, and the catalog,
its families and the adapters agree."""

from __future__ import annotations

import pytest

from imageforge.contract import ModelUnavailableError
from imageforge.contract.catalog import Family, builtin_families, load_catalog
from imageforge.server.models import Adapter, adapter_class, registered_adapters


def test_every_catalog_entry_has_an_adapter_of_its_family():
    for entry in load_catalog().models:
        assert adapter_class(entry).family == entry.family, entry.key


def test_every_family_has_an_adapter_and_every_adapter_a_family():
    families = {family.key for family in builtin_families()}
    adapters = registered_adapters()
    assert families == {cls.family for cls in adapters.values()}
    assert {"ben2", "upscale", "moge2", "da3", "lama"} <= set(adapters)


def test_a_new_adapter_registers_itself_and_a_second_one_of_the_same_name_is_refused(monkeypatch):
    monkeypatch.setattr("imageforge.server.models.base._REGISTRY", dict(registered_adapters()))

    class RegistryProbeAdapter(Adapter):
        name = "registry_probe"
        family = Family("background")

    assert registered_adapters()["registry_probe"] is RegistryProbeAdapter
    with pytest.raises(TypeError, match="registered twice"):

        class Again(Adapter):
            name = "registry_probe"
            family = Family("background")


def test_an_entry_naming_an_adapter_this_version_lacks_is_model_unavailable():
    entry = load_catalog().get("BEN2_BASE")
    with pytest.raises(ModelUnavailableError, match="needs an adapter \\(nope\\) this version lacks"):
        adapter_class(type(entry)(**{**entry.__dict__, "adapter": "nope"}))
