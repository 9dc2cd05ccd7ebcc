"""Informational: which pinned server packages have a newer release on the index, so the pins never silently age.

Asks PyPI once per pin (client/pin_hashes.py `newer_releases`, the same as `python -m imageforge.client.pin_hashes
--newer`). Newer releases are reported as a warning in the test summary, never a failure; without a reachable
index the test is skipped. It fails only when the index answers something the check cannot read."""

from __future__ import annotations

import urllib.error
import warnings

import pytest

from imageforge.client.pin_hashes import every_pin, latest_version, newer_releases


def test_report_pins_with_a_newer_release():
    try:
        latest_version("numpy", timeout=5)
    except (urllib.error.URLError, OSError, TimeoutError) as error:
        pytest.skip(f"no package index reachable ({error}): pins not compared")
    newer = newer_releases(every_pin(), timeout=10)
    assert all(latest and latest[0].isdigit() for latest in newer.values())
    if newer:
        listed = ", ".join(f"{pin} -> {latest}" for pin, latest in sorted(newer.items()))
        warnings.warn(f"{len(newer)} pinned server packages have newer releases: {listed}", stacklevel=1)
