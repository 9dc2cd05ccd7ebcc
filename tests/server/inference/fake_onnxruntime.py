"""A stand-in for the `onnxruntime` module, for the providers that cannot exist on Linux (CUDA without its
libraries, DirectML, CoreML) and for the exact options of OpenVINO's (which runs for real in
tests/server/inference/test_openvino_real.py).

It records exactly what the code under test asks for (providers, provider options, session options, keyword
arguments, run options, feeds) and can be told to fail at creation or at run for a given provider, or to
drop a provider silently as the real onnxruntime-gpu does when CUDA's libraries are missing. Its sessions
compute `output = 2 * input` on whatever provider "runs".
"""

from __future__ import annotations

import copy
import enum
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"
DML = "DmlExecutionProvider"
COREML = "CoreMLExecutionProvider"
OPENVINO = "OpenVINOExecutionProvider"


class Fail(Exception):
    """Like onnxruntime.capi.onnxruntime_pybind11_state.Fail."""


class RuntimeException(Exception):
    """Like onnxruntime.capi.onnxruntime_pybind11_state.RuntimeException."""


class InvalidArgument(Exception):
    """Like onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument."""


class ExecutionMode(enum.Enum):
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class SessionOptions:
    def __init__(self) -> None:
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.enable_mem_pattern = True
        self.enable_cpu_mem_arena = True
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.free_dimensions: dict[str, int] = {}

    def add_free_dimension_override_by_name(self, name: str, value: int) -> None:
        self.free_dimensions[name] = value


class RunOptions:
    def __init__(self) -> None:
        self.entries: dict[str, str] = {}

    def add_run_config_entry(self, key: str, value: str) -> None:
        self.entries[key] = value


@dataclass
class Creation:
    """One InferenceSession call, as requested."""

    path: str
    providers: list[str]
    provider_options: list[dict[str, str]]
    options: dict[str, Any]
    kwargs: dict[str, Any]
    alive_before: int  # sessions of this fake still alive when this one was asked for
    succeeded: bool = False


@dataclass
class Run:
    provider: str
    feeds: dict[str, np.ndarray]
    run_options: dict[str, str] | None


@dataclass
class _Node:
    name: str


class FakeSession:
    def __init__(self, ort: FakeOrt, creation: Creation, providers: list[str]) -> None:
        self._ort = ort
        self.creation = creation
        self._providers = providers

    def get_providers(self) -> list[str]:
        return list(self._providers)

    def get_inputs(self) -> list[_Node]:
        return [_Node("input")]

    def get_outputs(self) -> list[_Node]:
        return [_Node("output")]

    def run(self, output_names, feeds, run_options=None):
        entries = dict(run_options.entries) if run_options is not None else None
        provider = self._providers[0]
        self._ort.runs.append(Run(provider, {name: np.array(value) for name, value in feeds.items()}, entries))
        queued = self._ort.fail_run.get(provider)
        if queued:
            raise copy.copy(queued.pop(0))  # a fresh error, as ORT raises: no test variable keeps its traceback
        shrink = (entries or {}).get("memory.enable_memory_arena_shrinkage")
        if shrink:
            owned = {"cpu:0"} if provider == CPU else {"gpu:0", "cpu:0"} if provider == CUDA else set()
            for target in shrink.split(";"):
                if target not in owned:
                    raise InvalidArgument(f"Did not find an arena based allocator registered for {target}")
        if set(feeds) != {"input"}:
            raise ValueError(f"Required inputs (['input']) are missing from input feed ({list(feeds)}).")
        return [np.asarray(feeds["input"]) * 2]


@dataclass
class FakeOrt:
    """The module: pass it to `detect_runtime(module=...)`."""

    available: tuple[str, ...] = (CPU,)
    __version__: str = "1.23.2"
    __file__: str = "/nonexistent/onnxruntime/__init__.py"
    creations: list[Creation] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    fail_create: dict[str, list[BaseException]] = field(default_factory=dict)  # provider → errors, in order
    fail_run: dict[str, list[BaseException]] = field(default_factory=dict)
    drop: set[str] = field(default_factory=set)  # providers listed but silently not started
    _sessions: list[weakref.ref] = field(default_factory=list)

    SessionOptions = SessionOptions
    RunOptions = RunOptions
    ExecutionMode = ExecutionMode

    def get_available_providers(self) -> list[str]:
        return list(self.available)

    def InferenceSession(  # noqa: N802  (the real module's name)
        self, path, sess_options=None, providers=None, provider_options=None, **kwargs
    ) -> FakeSession:
        options = sess_options or SessionOptions()
        creation = Creation(
            path=str(path),
            providers=list(providers or [CPU]),
            provider_options=[dict(item) for item in (provider_options or [{} for _ in providers or [CPU]])],
            options={
                "intra_op_num_threads": options.intra_op_num_threads,
                "enable_mem_pattern": options.enable_mem_pattern,
                "execution_mode": options.execution_mode,
                "free_dimensions": dict(options.free_dimensions),
            },
            kwargs=dict(kwargs),
            alive_before=self.alive,
        )
        self.creations.append(creation)
        queued = self.fail_create.get(creation.providers[0])
        if queued:
            raise copy.copy(queued.pop(0))
        started = [name for name in creation.providers if name not in self.drop and name in self.available]
        session = FakeSession(self, creation, started or [CPU])
        creation.succeeded = True
        self._sessions.append(weakref.ref(session))
        return session

    @property
    def alive(self) -> int:
        return sum(1 for ref in self._sessions if ref() is not None)
