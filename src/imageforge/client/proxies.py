"""The proxy every setup download goes through: the environment's variables, else Windows' system proxy.

`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` and `NO_PROXY` (either case) reach uv, setup's index checks and the
model downloads as they are. On Windows, offices set the proxy in Internet Options, which lands in the
registry (`HKCU\\Software\\Microsoft\\Windows\\CurrentVersion\\Internet Settings`: `ProxyEnable`,
`ProxyServer`, `ProxyOverride`) and in no variable: when no proxy variable is set, it is read from there and
passed on as variables, so uv and the server's downloads use it like everything else on the machine.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import ModuleType
from typing import Any

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
INTERNET_SETTINGS = r"Software\Microsoft\Windows\CurrentVersion\Internet Settings"


def windows_registry_proxies(winreg: ModuleType | Any | None = None) -> dict[str, str]:
    """Internet Options' proxy as variables ({"HTTP_PROXY": …, "HTTPS_PROXY": …, "NO_PROXY": …}); {} when
    it is off, unset or unreadable (and everywhere but Windows)."""
    if winreg is None:
        if os.name != "nt":
            return {}
        import winreg as windows_registry  # Windows only

        winreg = windows_registry
    try:
        with winreg.OpenKey(winreg.HKEY_CURRENT_USER, INTERNET_SETTINGS) as key:
            enabled = winreg.QueryValueEx(key, "ProxyEnable")[0]
            server = str(winreg.QueryValueEx(key, "ProxyServer")[0] or "")
            try:
                override = str(winreg.QueryValueEx(key, "ProxyOverride")[0] or "")
            except OSError:
                override = ""
    except OSError:
        return {}
    if not enabled or not server.strip():
        return {}
    return _variables(server.strip(), override)


def _variables(server: str, override: str) -> dict[str, str]:
    """`host:port` for every scheme, or `http=host:port;https=host:port;…` per scheme."""
    per_scheme: dict[str, str] = {}
    if "=" in server:
        for part in server.split(";"):
            scheme, _, address = part.partition("=")
            if address.strip():
                per_scheme[scheme.strip().lower()] = address.strip()
    else:
        per_scheme = {"http": server, "https": server}
    variables = {}
    for scheme in ("http", "https"):
        address = per_scheme.get(scheme) or per_scheme.get("http") or ""
        if address:
            variables[f"{scheme.upper()}_PROXY"] = address if "://" in address else f"http://{address}"
    bypass = []
    for entry in filter(None, (item.strip() for item in override.split(";"))):
        if entry == "<local>":
            bypass += ["localhost", "127.0.0.1", "::1"]
        else:
            bypass.append(entry.removeprefix("*"))
    if bypass:
        variables["NO_PROXY"] = ",".join(bypass)
    return variables


def with_system_proxy(environ: Mapping[str, str], system: Mapping[str, str] | None = None) -> dict[str, str]:
    """`environ` plus the system proxy's variables when `environ` names no proxy at all."""
    environment = dict(environ)
    if any(environment.get(name) or environment.get(name.lower()) for name in PROXY_VARIABLES):
        return environment
    environment.update(windows_registry_proxies() if system is None else system)
    return environment
