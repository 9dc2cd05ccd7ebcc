"""Whether OpenVINO can really run here, and on which of its devices: listing the provider is not using it.

`onnxruntime-openvino` lists OpenVINOExecutionProvider on every machine, and when the device it is asked for
cannot start (no Intel GPU, no NPU driver) ONNX Runtime only logs that and builds a CPU-provider session. So
the server asks OpenVINO which devices it sees, then creates a session of a tiny in-memory model on the
first of them that we use, and offers OpenVINO only when that session really runs on OpenVINO.

Device order: GPU (an Intel GPU, integrated or discrete), then CPU. The NPU is not chosen: it compiles only
static shapes, and every model family here has dynamic image dimensions.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

PROVIDER = "OpenVINOExecutionProvider"
TARGETS = ("GPU", "CPU")  # OpenVINO device_type values, preferred first


@dataclass(frozen=True)
class OpenVinoProbe:
    target: str | None  # the device_type that created a session, None when none could
    reason: str | None = None  # why OpenVINO is not offered (one short clause), when target is None


def probe_openvino(module: Any, *, targets: tuple[str, ...] = TARGETS) -> OpenVinoProbe:
    """The first of `targets` OpenVINO lists here and that creates a session running on OpenVINO."""
    listed = _listed_devices(module)
    candidates = [target for target in targets if listed is None or any(_is(name, target) for name in listed)]
    if not candidates:
        seen = ", ".join(listed or ()) or "none"
        return OpenVinoProbe(None, f"OpenVINO sees none of its {'/'.join(targets)} devices here (it lists {seen})")
    failures = []
    for target in candidates:
        problem = _session_problem(module, target)
        if problem is None:
            return OpenVinoProbe(target)
        failures.append(f"{target}: {problem}")
        log.info("OpenVINO %s cannot run here: %s", target, problem)
    return OpenVinoProbe(None, "OpenVINO could not create a session (" + "; ".join(failures) + ")")


def _is(name: str, target: str) -> bool:
    return name == target or name.startswith(f"{target}.")  # "GPU.0", "GPU.1" when there are several


def _listed_devices(module: Any) -> tuple[str, ...] | None:
    """What OpenVINO enumerates ("CPU", "GPU.0", "NPU"), or None when this build cannot say."""
    state = getattr(getattr(module, "capi", None), "_pybind_state", None)
    listing = getattr(state, "get_available_openvino_device_ids", None)
    if listing is None:
        return None
    try:
        return tuple(str(name) for name in listing())
    except Exception as error:  # an enumeration failure is not a verdict: the session below decides
        log.info("OpenVINO could not list its devices: %r", error)
        return None


def _session_problem(module: Any, target: str) -> str | None:
    try:
        options = module.SessionOptions()
        options.intra_op_num_threads = 1
        options.log_severity_level = 4  # its "device not available" lines are the expected answer here
        session = module.InferenceSession(
            relu_model(),
            sess_options=options,
            providers=[PROVIDER, "CPUExecutionProvider"],
            provider_options=[{"device_type": target, "precision": "FP32" if target == "CPU" else "ACCURACY"}, {}],
        )
    except Exception as error:
        return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    providers = list(session.get_providers())
    return None if providers[:1] == [PROVIDER] else f"ONNX Runtime started {providers[:1] or 'nothing'} instead"


def relu_model() -> bytes:
    """An ONNX model (IR 8, opset 17) of one Relu over float[1, 4], encoded by hand: the server has no `onnx`."""
    tensor = _field(1, _varint_field(1, 1) + _field(2, _field(1, _varint_field(1, 1)) + _field(1, _varint_field(1, 4))))
    node = _field(1, b"x") + _field(2, b"y") + _field(4, b"Relu")
    values = [_field(1, name) + _field(2, tensor) for name in (b"x", b"y")]  # ValueInfoProto: name, type
    graph = _field(1, node) + _field(2, b"probe") + _field(11, values[0]) + _field(12, values[1])
    opset = _field(1, b"") + _varint_field(2, 17)
    return _varint_field(1, 8) + _field(7, graph) + _field(8, opset)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _varint_field(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload
