"""The settings a client compares with a running server's name every variable the server reads at start."""

from __future__ import annotations

from imageforge.client.proxies import PROXY_VARIABLES
from imageforge.contract.server_settings import CASE_FREE, SERVER_SETTINGS, differing_settings, settings_fingerprint
from imageforge.server.conversion.environment import UV_VARIABLE
from imageforge.server.downloads.sources import (
    CONNECT_TIMEOUT_VARIABLE,
    HUB_VARIABLE,
    MIRROR_VARIABLE,
    READ_TIMEOUT_VARIABLE,
)


def test_every_variable_the_server_reads_at_start_is_a_compared_setting():
    read = {HUB_VARIABLE, MIRROR_VARIABLE, CONNECT_TIMEOUT_VARIABLE, READ_TIMEOUT_VARIABLE, UV_VARIABLE}
    assert read | set(PROXY_VARIABLES) <= set(SERVER_SETTINGS)
    assert set(PROXY_VARIABLES) == CASE_FREE


def test_fingerprints_hold_digests_and_name_what_differs():
    old = settings_fingerprint({"HF_ENDPOINT": "http://hub", "https_proxy": "http://user:secret@proxy"})
    assert set(old) == {"HF_ENDPOINT", "HTTPS_PROXY"} and "secret" not in str(old)
    new = settings_fingerprint({"HF_ENDPOINT": "http://other", "HTTPS_PROXY": "http://user:secret@proxy"})
    assert differing_settings(old, new) == ["HF_ENDPOINT"]
    assert differing_settings(None, new) == []  # an older record proves nothing either way
