"""A BEN2-shaped model that is slow to turn into a session: the kit's luma matte followed by a long chain of
`+c` / `-c` pairs (numerically the same matte), which ONNX Runtime's graph optimiser walks for seconds (6,000
pairs, measured here: 4.6 s with onnxruntime 1.23.2, 3.3 s of it holding Python's GIL; 5.6 s with 1.31.1, which
holds the GIL for at most 0.09 s at a time; the optimiser's time grows faster than the chain: 24,000 pairs took
40 s with 1.31.1)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tests.kit.onnx_models import BEN2_LUMA, IR_VERSION, OPSET


def build_slow_ben2(path: Path, *, size: int = 64, pairs: int = 6000) -> Path:
    weights = numpy_helper.from_array(np.array(BEN2_LUMA, np.float32).reshape(1, 3, 1, 1), "luma")
    step = numpy_helper.from_array(np.array(0.25, np.float32), "step")
    nodes = [helper.make_node("Conv", ["input", "luma"], ["y0"], kernel_shape=[1, 1])]
    previous = "y0"
    for index in range(pairs):
        nodes.append(helper.make_node("Add", [previous, "step"], [f"a{index}"]))
        nodes.append(helper.make_node("Sub", [f"a{index}", "step"], [f"s{index}"]))
        previous = f"s{index}"
    nodes.append(helper.make_node("Cast", [previous], ["output"], to=TensorProto.FLOAT16))
    graph = helper.make_graph(
        nodes,
        "slow_ben2",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT16, [1, 1, size, size])],
        initializer=[weights, step],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path


def slow_catalog_entry(content: bytes) -> dict:
    return {
        "key": "SLOW_BEN2",
        "family": "background",
        "adapter": "ben2",
        "label": "Slow Ben2",
        "license": "MIT",
        "repository": "kit/slow-ben2",
        "directory": "slow-ben2",
        "default": False,
        "normalization": "none",
        "files": [{"path": "model.onnx", "size": len(content), "sha256": hashlib.sha256(content).hexdigest()}],
    }
