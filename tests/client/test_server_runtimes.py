"""The server runtime choice: which ONNX Runtime build setup installs, where it is refused, and that a changed
choice rebuilds the environment (client/server_runtimes.py, client/setup.py)."""

from __future__ import annotations

import json
import subprocess

import pytest
from blendjob.environment import environment_digest, environment_python

from imageforge.client.pin_hashes import every_pin, pinned_hashes
from imageforge.client.server_runtimes import (
    RECORD,
    RuntimeChoiceError,
    check_runtime,
    chosen_runtime,
    environment_for,
    environment_of,
    record_runtime,
)
from imageforge.client.setup import environment_ready, prepare_environment
from tests.kit.server_env import install_server_environment


def onnxruntimes(pins: list[str]) -> list[str]:
    return [pin for pin in pins if pin.startswith("onnxruntime")]


def test_openvino_replaces_the_platform_onnxruntime_with_its_dependencies_pinned_and_hashed():
    platforms = environment_of("openvino")["platform_packages"]
    default = environment_of("default")["platform_packages"]
    assert onnxruntimes(platforms["linux"]) == onnxruntimes(platforms["windows"]) == ["onnxruntime-openvino==1.24.1"]
    assert platforms["macos"] == default["macos"]  # refused there (below), never changed
    for platform in ("linux", "windows"):
        names = {pin.split("==")[0] for pin in [*environment_of("openvino")["packages"], *platforms[platform]]}
        # onnxruntime-openvino 1.24.1's Requires-Dist: flatbuffers, numpy, packaging, protobuf, sympy (→ mpmath)
        assert {"flatbuffers", "numpy", "packaging", "protobuf", "sympy", "mpmath"} <= names
        assert set(platforms[platform]) - {"onnxruntime-openvino==1.24.1", "sympy==1.14.0", "mpmath==1.3.0"} == (
            set(default[platform]) - {pin for pin in default[platform] if pin.startswith("onnxruntime")}
            - {"sympy==1.14.0", "mpmath==1.3.0"}
        )  # fmt: skip
    assert "onnxruntime-openvino==1.24.1" in every_pin()
    assert pinned_hashes()["onnxruntime-openvino==1.24.1"]  # every wheel's SHA-256, for --require-hashes
    assert environment_digest(environment_of("openvino")) != environment_digest(environment_of("default"))


@pytest.mark.parametrize(
    ("system", "machine", "sentence"),
    [
        ("Darwin", "arm64", "Intel OpenVINO has no ONNX Runtime build for macOS (only x86-64 Linux and Windows); "
                            "keep the platform default runtime."),
        ("Linux", "aarch64", "Intel OpenVINO has no ONNX Runtime build for Linux on aarch64 (only x86-64 Linux and "
                             "Windows); keep the platform default runtime."),
    ],
)  # fmt: skip
def test_openvino_is_refused_in_one_sentence_where_no_wheel_exists(system, machine, sentence):
    with pytest.raises(RuntimeChoiceError) as raised:
        check_runtime("openvino", system=system, machine=machine)
    assert str(raised.value) == sentence
    check_runtime("openvino", system="Windows", machine="AMD64")
    check_runtime("default", system=system, machine=machine)


def test_the_choice_is_the_storage_roots_and_defaults_to_the_platforms(tmp_path):
    assert chosen_runtime(tmp_path) == "default" and environment_for(tmp_path) == environment_of("default")
    record_runtime(tmp_path, "openvino")
    assert json.loads((tmp_path / RECORD).read_text()) == {"runtime": "openvino"}
    assert environment_for(tmp_path) == environment_of("openvino")
    (tmp_path / RECORD).write_text("{not json")
    assert chosen_runtime(tmp_path) == "default"
    record_runtime(tmp_path, "default")
    assert not (tmp_path / RECORD).exists()


def test_the_record_replaces_a_link_at_its_name_and_leaves_no_partial(tmp_path):
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere.json"
    root.mkdir()
    elsewhere.write_text("someone else's file")
    (root / RECORD).symlink_to(elsewhere)
    record_runtime(root, "openvino")
    assert elsewhere.read_text() == "someone else's file"  # never written through the link
    assert not (root / RECORD).is_symlink() and chosen_runtime(root) == "openvino"
    assert sorted(path.name for path in root.iterdir()) == [RECORD]


LIST = "import importlib.metadata as m, json; print(json.dumps([d.name for d in m.distributions()]))"


def distributions(root) -> set[str]:
    listed = subprocess.run([str(environment_python(root)), "-c", LIST], capture_output=True, text=True, check=True)
    return {name.lower() for name in json.loads(listed.stdout)}


@pytest.mark.slow
def test_setup_installs_the_chosen_runtime_keeps_it_and_rebuilds_when_it_changes(tmp_path):
    root = tmp_path / "storage"
    prepare_environment(root, runtime="openvino")  # from uv's cache, offline (tests/sync fetched the wheels)
    installed = distributions(root)
    assert "onnxruntime-openvino" in installed and "onnxruntime-gpu" not in installed
    assert json.loads((root / "manifest.json").read_text())["runtime"] == "openvino"
    assert environment_ready(root) and not environment_ready(root, environment_of("default"))
    said: list[str] = []
    prepare_environment(root, report=said.append)  # a later command without a choice keeps the recorded one
    assert said == [f"Server environment is ready in {root.resolve()}"]
    prepare_environment(root, runtime="default")
    installed = distributions(root)
    assert "onnxruntime-gpu" in installed and "onnxruntime-openvino" not in installed
    assert chosen_runtime(root) == "default" and environment_ready(root)


def test_the_blendjob_runtime_judges_readiness_by_the_roots_runtime(tmp_path):
    from imageforge.client.job_runner import make_runtime

    root = install_server_environment(tmp_path / "storage", "openvino")
    runtime = make_runtime(lambda: root)  # the add-on's form: a callable storage root
    assert runtime.environment_ready() and runtime.environment == environment_of("openvino")
    record_runtime(root, "default")  # the choice changed: the next Set Up Server rebuilds
    assert not runtime.environment_ready()


def test_the_cli_setup_takes_the_runtime_and_refuses_a_platform_without_its_build(tmp_path, capsys):
    from imageforge.cli.main import main

    folder = tmp_path / "wheels"
    assert main(["setup", "--export-wheelhouse", str(folder), "--platform", "macos", "--runtime", "openvino"]) == 1
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "imageforge: Intel OpenVINO has no ONNX Runtime build for macOS (only x86-64 Linux and Windows); "
        "keep the platform default runtime."
    )
    assert not folder.exists()  # refused before anything was downloaded
    root = tmp_path / "storage"
    install_server_environment(root, "openvino")
    assert main(["--storage-root", str(root), "setup"]) == 0  # ready as recorded: nothing installed
    assert capsys.readouterr().err.strip().splitlines()[-1] == "ONNX Runtime: Intel OpenVINO"
