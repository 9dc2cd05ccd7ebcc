"""Proxies: setup (uv and its index check) and a model download through a loopback HTTP CONNECT proxy to HTTPS
servers whose names only the proxy can reach, and Windows' system proxy read from the registry."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from imageforge.client.proxies import windows_registry_proxies, with_system_proxy
from imageforge.client.setup import find_local_python, install_packages, uv_executable
from imageforge.contract.catalog import parse_catalog
from imageforge.server.downloads.install import ensure_models
from imageforge.server.downloads.sources import DownloadSettings, DownloadSources, Timeouts
from tests.kit.catalog import catalog_entry
from tests.kit.package_index import RecordingProxy, SimpleIndex, build_wheels, sha256_hex, wheel_name
from tests.kit.tls import loopback_tls

PINS = {"imageforge-probe-a": "1.0"}
MODEL = hashlib.sha256(b"model").digest() * 4096  # 128 KiB


@pytest.fixture(autouse=True)
def clean_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    monkeypatch.setenv("IMAGEFORGE_PACKAGE_INDEX_TIMEOUT", "2")
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def test_setup_and_a_model_download_go_through_a_connect_proxy(tmp_path, monkeypatch):
    ca, cert, key = loopback_tls(tmp_path / "tls", ["index.imageforge.invalid", "hub.imageforge.invalid"])
    wheels = build_wheels(tmp_path / "wheels", PINS)
    hashes = {"imageforge-probe-a==1.0": [sha256_hex(wheels / wheel_name("imageforge-probe-a", "1.0"))]}
    files = {"/kit/ben2/resolve/main/model.onnx": MODEL}
    with SimpleIndex(wheels, tls=(cert, key), files=files) as server:
        routes = {"index.imageforge.invalid": server.port, "hub.imageforge.invalid": server.port}
        with RecordingProxy(routes=routes) as proxy:
            monkeypatch.setenv("HTTPS_PROXY", proxy.url)
            for variable in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):  # trust the loopback servers' certificate
                monkeypatch.setenv(variable, str(ca))
            venv = tmp_path / "venv"
            python = find_local_python("3.12")
            subprocess.run([uv_executable(), "venv", "--python", python, str(venv)], check=True, capture_output=True)
            served = install_packages(
                uv_executable(), venv / "bin" / "python", ["imageforge-probe-a==1.0"], root=tmp_path,
                indexes=["https://index.imageforge.invalid/simple"], hashes=hashes,
            )  # fmt: skip

            raw = catalog_entry("KIT_BEN2", {"model.onnx": MODEL}, directory="ben2")
            entry = parse_catalog({"models": [raw]}, Path("test")).models[0]
            sources = DownloadSources(DownloadSettings(hub="https://hub.imageforge.invalid", timeouts=Timeouts(5, 10)))
            outcome = ensure_models(
                tmp_path / "storage", [entry], sources=sources, report=lambda *_: None, cancelled=lambda: False
            )
    assert served == "https://index.imageforge.invalid/simple"
    assert subprocess.run([str(venv / "bin" / "python"), "-c", "import imageforge_probe_a"]).returncode == 0
    assert outcome == {"KIT_BEN2": {"model.onnx": "downloaded"}}
    assert (tmp_path / "storage/models/ben2/model.onnx").read_bytes() == MODEL
    # Only the proxy could reach these names: every connection was a CONNECT tunnel through it.
    assert "CONNECT index.imageforge.invalid:443" in proxy.targets  # setup's probe and uv
    assert proxy.targets.count("CONNECT index.imageforge.invalid:443") >= 2
    assert "CONNECT hub.imageforge.invalid:443" in proxy.targets  # the model download
    assert not server.requests or all(not path.startswith("http") for path in server.requests)


class FakeRegistry:
    """What `winreg` returns for Internet Options' proxy (the real module exists only on Windows)."""

    HKEY_CURRENT_USER = "HKCU"

    def __init__(self, values: dict[str, object]):
        self.values = values
        self.opened: list[tuple[str, str]] = []

    def OpenKey(self, root, path):  # noqa: N802  (winreg's names)
        self.opened.append((root, path))
        registry = self

        class Key:
            def __enter__(self):
                return registry

            def __exit__(self, *_exc):
                return False

        return Key()

    def QueryValueEx(self, _key, name):  # noqa: N802
        if name not in self.values:
            raise FileNotFoundError(name)
        return self.values[name], 1


def test_the_windows_system_proxy_is_read_from_internet_settings():
    registry = FakeRegistry({"ProxyEnable": 1, "ProxyServer": "proxy.corp:3128", "ProxyOverride": "<local>;*.corp"})
    assert windows_registry_proxies(registry) == {
        "HTTP_PROXY": "http://proxy.corp:3128",
        "HTTPS_PROXY": "http://proxy.corp:3128",
        "NO_PROXY": "localhost,127.0.0.1,::1,.corp",
    }
    assert registry.opened == [("HKCU", r"Software\Microsoft\Windows\CurrentVersion\Internet Settings")]
    per_scheme = FakeRegistry({"ProxyEnable": 1, "ProxyServer": "http=web:80;https=secure:8443;ftp=f:21"})
    assert windows_registry_proxies(per_scheme) == {"HTTP_PROXY": "http://web:80", "HTTPS_PROXY": "http://secure:8443"}
    assert windows_registry_proxies(FakeRegistry({"ProxyEnable": 0, "ProxyServer": "proxy.corp:3128"})) == {}
    assert windows_registry_proxies(FakeRegistry({})) == {}


def test_the_system_proxy_fills_in_only_when_no_variable_names_one():
    system = {"HTTPS_PROXY": "http://proxy.corp:3128"}
    assert with_system_proxy({"PATH": "/bin"}, system) == {"PATH": "/bin", "HTTPS_PROXY": "http://proxy.corp:3128"}
    assert with_system_proxy({"https_proxy": "http://mine:1"}, system) == {"https_proxy": "http://mine:1"}
