"""Setup's packages from ordered package indexes: real uv installing tiny real wheels from loopback simple indexes
that are down, hang, answer 404 or serve a tampered wheel, a wheelhouse with no network, and a proxy."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from imageforge.client.package_indexes import KNOWN_INDEXES, index_order
from imageforge.client.pin_hashes import pinned_hashes
from imageforge.client.setup import SetupError, find_local_python, install_packages, uv_executable
from imageforge.client.wheelhouse import WheelhouseError, export_wheelhouse, platform_pins
from tests.kit.package_index import (
    RecordingProxy,
    SimpleIndex,
    build_wheel,
    build_wheels,
    dead_url,
    sha256_hex,
    wheel_name,
)

PINS = {"imageforge-probe-a": "1.0", "imageforge-probe-b": "2.1"}
PACKAGES = [f"{name}=={version}" for name, version in PINS.items()]
TIMEOUT = 0.5


@pytest.fixture
def wheels(tmp_path) -> Path:
    return build_wheels(tmp_path / "wheels", PINS)


@pytest.fixture
def hashes(wheels) -> dict[str, list[str]]:
    return {f"{name}=={version}": [sha256_hex(wheels / wheel_name(name, version))] for name, version in PINS.items()}


@pytest.fixture(autouse=True)
def isolated_uv(tmp_path, monkeypatch):
    """A fresh uv cache (nothing served from it) and short index timeouts; no proxy unless a test sets one."""
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    monkeypatch.setenv("IMAGEFORGE_PACKAGE_INDEX_TIMEOUT", str(TIMEOUT))
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "UV_INDEX_URL", "PIP_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture
def venv(tmp_path) -> Path:
    target = tmp_path / "venv"
    python = find_local_python("3.12")
    assert python, "a local Python 3.12 is needed (the suite's own)"
    subprocess.run([uv_executable(), "venv", "--python", python, str(target)], check=True, capture_output=True)
    return target / "bin" / "python"


def install(venv, tmp_path, indexes, hashes, *, wheelhouse=None, messages=None):
    return install_packages(
        uv_executable(), venv, PACKAGES, root=tmp_path, indexes=indexes, hashes=hashes, wheelhouse=wheelhouse,
        report=(messages if messages is not None else []).append,
    )  # fmt: skip


def installed(venv) -> dict[str, str]:
    code = (
        "import imageforge_probe_a as a, imageforge_probe_b as b; print(a.VERSION, b.VERSION, hasattr(a, 'TAMPERED'))"
    )
    out = subprocess.run([str(venv), "-c", code], capture_output=True, text=True, check=False)
    return out.stdout.split() if out.returncode == 0 else {}


def test_the_order_is_the_choice_then_our_variable_then_uv_and_pip_then_pypi_and_two_mirrors():
    known = {index.key: index.url for index in KNOWN_INDEXES}
    assert index_order(None, {}) == [known["pypi"], known["tsinghua"], known["aliyun"]]
    environ = {
        "IMAGEFORGE_PACKAGE_INDEX": "https://studio.example/simple/, aliyun",
        "UV_INDEX_URL": "https://uv.example/simple",
        "PIP_INDEX_URL": "https://pypi.org/simple/",
    }
    assert index_order("tsinghua", environ) == [
        known["tsinghua"], "https://studio.example/simple", known["aliyun"], "https://uv.example/simple",
        known["pypi"],
    ]  # fmt: skip


def test_indexes_that_are_down_hang_or_lack_the_files_are_passed_over(wheels, hashes, venv, tmp_path):
    messages: list[str] = []
    with SimpleIndex(wheels, "hang") as hanging, SimpleIndex(wheels, "404") as empty, SimpleIndex(wheels) as good:
        down = dead_url()
        started = time.monotonic()
        served = install(venv, tmp_path, [down, hanging.url, empty.url, good.url], hashes, messages=messages)
        elapsed = time.monotonic() - started
    assert served == good.url
    assert installed(venv) == ["1.0", "2.1", "False"]
    assert [message.split(" ", 3)[3] for message in messages] == [
        "is unreachable (Connection refused); trying the next one",
        f"did not answer within {TIMEOUT:g} s; trying the next one",
        "answered HTTP 404 for imageforge-probe-a; trying the next one",
    ]
    assert elapsed < 30  # seconds per bad index, not uv's minutes of retries
    assert good.requests[0] == "/simple/imageforge-probe-a/"  # the probe, then uv


def test_a_tampered_wheel_is_refused_and_the_next_index_installs_the_pinned_one(wheels, hashes, venv, tmp_path):
    messages: list[str] = []
    with SimpleIndex(wheels, "tampered") as tampered, SimpleIndex(wheels) as good:
        served = install(venv, tmp_path, [tampered.url, good.url], hashes, messages=messages)
        assert any(path.startswith("/files/") for path in tampered.requests)  # uv really fetched the bad file
    assert served == good.url
    assert installed(venv) == ["1.0", "2.1", "False"]
    assert "served a file whose SHA-256 is not the pinned one" in messages[0]


def test_when_every_index_fails_one_sentence_names_each_and_nothing_is_installed(wheels, hashes, venv, tmp_path):
    with SimpleIndex(wheels, "tampered") as tampered, SimpleIndex(wheels, "404") as empty:
        down = dead_url()
        with pytest.raises(SetupError) as raised:
            install(venv, tmp_path, [down, tampered.url, empty.url], hashes)
    message = str(raised.value)
    assert message.startswith("Could not install the server's packages from any package index: ")
    assert f"{down} is unreachable" in message
    assert f"{tampered.url} served a file whose SHA-256 is not the pinned one" in message
    assert f"{empty.url} answered HTTP 404" in message
    assert "\n" not in message and "Traceback" not in message
    assert installed(venv) == {}
    assert not (tmp_path / "server-requirements.txt").exists()


def test_a_wheelhouse_installs_with_every_index_dead(wheels, hashes, venv, tmp_path):
    served = install(venv, tmp_path, [dead_url()], hashes, wheelhouse=wheels)
    assert served == f"wheelhouse {wheels.resolve()}"
    assert installed(venv) == ["1.0", "2.1", "False"]


def test_a_wheelhouse_with_a_tampered_wheel_installs_nothing(wheels, hashes, venv, tmp_path):
    target = wheels / wheel_name("imageforge-probe-b", "2.1")
    target.write_bytes(target.read_bytes() + b"\0")
    with pytest.raises(SetupError, match="Could not install from the wheelhouse"):
        install(venv, tmp_path, [dead_url()], hashes, wheelhouse=wheels)
    assert installed(venv) == {}


def test_setup_goes_through_the_proxy_the_environment_names(wheels, hashes, venv, tmp_path, monkeypatch):
    with SimpleIndex(wheels) as hidden:
        port = int(hidden.url.split(":")[2].split("/")[0])
        with RecordingProxy(routes={"index.imageforge.invalid": port}) as proxy:
            monkeypatch.setenv("HTTP_PROXY", proxy.url)  # the index's name resolves nowhere but in the proxy
            served = install(venv, tmp_path, ["http://index.imageforge.invalid/simple"], hashes)
    assert served == "http://index.imageforge.invalid/simple"
    assert installed(venv) == ["1.0", "2.1", "False"]
    through = [target for target in proxy.targets if "index.imageforge.invalid" in target]
    assert through[0] == "GET http://index.imageforge.invalid/simple/imageforge-probe-a/"  # the probe
    assert any("/files/imageforge_probe_b-2.1-py3-none-any.whl" in target for target in through)  # uv's download


# ---------------------------------------------------------------------------------------------- wheelhouses

PLATFORM_TAGS = {
    "windows": "cp312-cp312-win_amd64",
    "linux": "cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64",
    "macos": "cp312-cp312-macosx_11_0_arm64",
}


@pytest.fixture
def platform_wheels(tmp_path) -> Path:
    """imageforge-probe-a as one wheel per platform (and one for Python 3.11 that no platform may take), -b pure."""
    folder = tmp_path / "platform wheels"
    for tag in [*PLATFORM_TAGS.values(), "cp311-cp311-win_amd64"]:
        build_wheel(folder, "imageforge-probe-a", "1.0", tag)
    build_wheel(folder, "imageforge-probe-b", "2.1")
    return folder


def every_hash(folder: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for wheel in folder.glob("*.whl"):
        name, version = wheel.name.split("-")[:2]
        found.setdefault(f"{name.replace('_', '-')}=={version}", []).append(sha256_hex(wheel))
    return found


@pytest.mark.parametrize("platform", ["windows", "linux", "macos"])
def test_export_wheelhouse_takes_each_platforms_wheel_from_the_first_index_that_has_it(
    platform_wheels, tmp_path, platform
):
    hashes = every_hash(platform_wheels)
    out = tmp_path / f"wheelhouse-{platform}"
    lines: list[str] = []
    with SimpleIndex(platform_wheels, "tampered") as tampered, SimpleIndex(platform_wheels) as good:
        written = export_wheelhouse(
            out, platform, [dead_url(), tampered.url, good.url], pins=PACKAGES, hashes=hashes, report=lines.append
        )
    assert sorted(path.name for path in written) == sorted(
        [wheel_name("imageforge-probe-a", "1.0", PLATFORM_TAGS[platform]), wheel_name("imageforge-probe-b", "2.1")]
    )
    assert sorted(path.name for path in out.iterdir()) == sorted(path.name for path in written)  # no .part left
    assert all(sha256_hex(path) in hashes[pin] for path, pin in zip(sorted(written), sorted(PACKAGES), strict=True))
    assert lines[0].endswith("is unreachable (Connection refused); not used")
    assert all(f"from 127.0.0.1:{good.url.split(':')[2].split('/')[0]}" in line for line in lines[1:])


def test_an_exported_linux_wheelhouse_installs_with_no_index(platform_wheels, tmp_path, venv):
    hashes = every_hash(platform_wheels)
    out = tmp_path / "wheelhouse"
    with SimpleIndex(platform_wheels) as good:
        export_wheelhouse(out, "linux", [good.url], pins=PACKAGES, hashes=hashes)
    assert install(venv, tmp_path, [dead_url()], hashes, wheelhouse=out) == f"wheelhouse {out.resolve()}"
    tag = subprocess.run(
        [str(venv), "-c", "import imageforge_probe_a as a; print(a.TAG)"], capture_output=True, text=True
    )
    assert tag.stdout.strip() == PLATFORM_TAGS["linux"]


def test_an_index_without_the_platforms_wheel_is_named_in_the_failure(platform_wheels, tmp_path):
    (platform_wheels / wheel_name("imageforge-probe-a", "1.0", PLATFORM_TAGS["macos"])).unlink()
    with SimpleIndex(platform_wheels) as good, pytest.raises(WheelhouseError) as raised:
        export_wheelhouse(tmp_path / "out", "macos", [good.url], pins=PACKAGES, hashes=every_hash(platform_wheels))
    assert str(raised.value) == (
        f"No index served a macos wheel of imageforge-probe-a==1.0: {good.url} has no macos wheel of "
        "imageforge-probe-a==1.0 with a pinned hash."
    )


def test_the_shipped_pins_have_hashes_and_linux_hashes_agree_with_the_lock():
    # server_hashes.json comes from the index; uv.lock, written by uv from the same index, is an independent record
    import tomllib

    lock = tomllib.loads((Path(__file__).resolve().parents[2] / "uv.lock").read_text(encoding="utf-8"))
    locked = {
        f"{package['name']}=={package['version']}": {
            item["hash"].removeprefix("sha256:") for item in package.get("wheels", []) + [package.get("sdist", {})]
            if "hash" in item
        }
        for package in lock["package"]
    }  # fmt: skip
    known = pinned_hashes()
    for platform in ("windows", "macos", "linux"):
        for pin in platform_pins(platform):
            assert known.get(pin.lower()), (
                f"{pin} ({platform}) has no hashes: run python -m imageforge.client.pin_hashes"
            )
    for pin in platform_pins("linux"):
        assert locked[pin] <= set(known[pin.lower()]), pin
