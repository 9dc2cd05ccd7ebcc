"""An fp16 ONNX model rewritten as the fp32 model ONNX Runtime's CPU provider runs at full speed.

ONNX Runtime's CPU kernels are float32: on an fp16 graph it wraps nearly every node in Cast nodes and its
fusions (GELU, LayerNorm, bias-GELU), which match float32 patterns only, no longer apply. Upcasting the weights
alone changes nothing, because the graph still computes in fp16. This rewrite makes the graph fp32 throughout:

1. every fp16 initializer, constant tensor and attribute tensor becomes float32 (values upcast exactly);
2. every fp16 type (graph outputs, value infos, Cast targets, `dtype` attributes) becomes float32; an fp16
   graph input keeps its type and gets one Cast, so the copy takes the original's feeds;
3. Cast nodes whose input is now already of their target type are dropped (an output Cast becomes Identity);
4. scalar constants that are the fp16 rounding of GELU's constants (√2, 1/√2, √(2/π), 0.044715) get their
   exact float32 value back: ONNX Runtime recognises GELU only within a relative 1e-5 of those values, and
   fp16 rounding is ~1e-4 off, so without this step the fp16 file's slowdown remains (docs/benchmarks.md).

Tensor types are followed node by node (ONNX graphs are topologically sorted) with per-operator rules; a Cast
whose input type is not known stays, which is always correct. The result's numbers differ from the fp16
file's only by the fp16 rounding the original did between nodes; cpu_copy.py verifies that on a sample.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from .onnx_messages import (
    ATTRIBUTE_GRAPH,
    ATTRIBUTE_GRAPHS,
    ATTRIBUTE_INT,
    ATTRIBUTE_TENSOR,
    ATTRIBUTE_TENSORS,
    EXTERNAL,
    FLOAT,
    FLOAT16,
    NodeProto,
    parse_model,
)

INT64, BOOL = 7, 9
GELU_CONSTANTS = (math.sqrt(2.0), 1.0 / math.sqrt(2.0), math.sqrt(2.0 / math.pi), 0.044715)

# Operators whose outputs have their first input's element type (float ops, shape ops that move data).
SAME_AS_FIRST = frozenset(
    """Abs Acos Acosh Add Asin Asinh Atan Atanh AveragePool BatchNormalization Ceil Celu Clip Concat Conv
    ConvTranspose Cos Cosh CumSum DepthToSpace Div Dropout Einsum Elu Erf Exp Expand Flatten Floor Gather
    GatherElements GatherND Gelu Gemm GlobalAveragePool GlobalMaxPool GroupNormalization HardSigmoid HardSwish
    Identity InstanceNormalization LayerNormalization LeakyRelu Log LogSoftmax LpNormalization LRN MatMul Max
    Mean Min Mish Mod Mul Neg Pad Pow PRelu Reciprocal ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp ReduceMax
    ReduceMean ReduceMin ReduceProd ReduceSum ReduceSumSquare Relu Reshape Resize Round ScatterElements ScatterND
    Selu Shrink Sigmoid Sign Sin Sinh Slice Softmax Softplus Softsign SpaceToDepth Split Sqrt Squeeze Sub Sum
    Tan Tanh ThresholdedRelu Tile Transpose Trilu Unsqueeze Upsample""".split()  # noqa: SIM905 (a readable list)
)
INT64_OUTPUTS = frozenset({"Shape", "Size", "NonZero", "ArgMax", "ArgMin"})
BOOL_OUTPUTS = frozenset(
    {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not", "And", "Or", "Xor", "IsNaN", "IsInf"}
)
DTYPE_ATTRIBUTE_OPS = frozenset(
    {"EyeLike", "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli"}
)
# AttributeProto types of Constant's value_* attributes → the tensor element type they make.
CONSTANT_ATTRIBUTE_TYPES = {1: FLOAT, 6: FLOAT, 2: INT64, 7: INT64, 3: 8, 8: 8}


class UnsupportedModel(Exception):
    """The model cannot be rewritten here (external data, sparse fp16 weights); the original is used."""


@dataclass(frozen=True)
class Conversion:
    data: bytes | None  # the fp32 model; None when the model has no fp16 weights (nothing to gain)
    fp16_tensors: int  # fp16 initializers and constant tensors upcast
    removed_casts: int
    kept_casts: int  # Cast nodes still in the top-level graph (between integer and float types, or untyped)
    restored_constants: int  # GELU constants given their exact float32 value back


def rewrite_file(source: Path, target: Path) -> dict[str, Any]:
    """Convert `source` and write the result to `target` atomically; returns what happened as plain data."""
    try:
        conversion = convert(source.read_bytes())
    except UnsupportedModel as error:
        return {"status": "unsupported", "reason": str(error)}
    except DecodeError as error:
        return {"status": "unreadable", "reason": f"not an ONNX file protobuf can read: {error}"}
    figures = {
        "fp16_tensors": conversion.fp16_tensors,
        "removed_casts": conversion.removed_casts,
        "restored_constants": conversion.restored_constants,
    }
    if conversion.data is None:
        return {"status": "not-needed", **figures}
    temporary = target.with_name(f"{target.name}.{os.getpid()}.part")
    try:
        with temporary.open("wb") as stream:
            stream.write(conversion.data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
    return {"status": "converted", **figures}


def main(arguments: list[str]) -> None:
    """`<source> <target>`: the child process cpu_copy.py runs (parsing a large model holds the GIL for
    seconds, and the server must keep answering meanwhile). Prints rewrite_file's result as one JSON line."""
    source, target = (Path(argument) for argument in arguments)
    print(json.dumps(rewrite_file(source, target)))


def fp16_weight_count(model: Any) -> int:
    """How many initializers and constant tensors of `model` (anywhere in it) are fp16."""
    return sum(tensor.data_type == FLOAT16 for tensor in _tensors(model))


def convert(data: bytes) -> Conversion:
    """The fp32 rewrite of a serialized ONNX model (see the module docstring); raises UnsupportedModel."""
    model = parse_model(data)
    count = fp16_weight_count(model)
    if count == 0:
        return Conversion(None, 0, 0, 0, 0)
    restored = sum(_upcast(tensor) for tensor in _tensors(model))
    _widen_fp16_inputs(model.graph)
    for graph in _graphs(model):
        for node in graph.node:
            _retarget_attributes(node)
        inputs = [] if graph is model.graph else list(graph.input)  # the model's own inputs keep their types
        for value in (*inputs, *graph.output, *graph.value_info):
            _retype(value.type)
    for function in model.functions:
        for node in function.node:
            _retarget_attributes(node)
        for value in function.value_info:
            _retype(value.type)
    removed = _drop_redundant_casts(model.graph)
    kept = sum(node.op_type == "Cast" for node in model.graph.node)
    return Conversion(model.SerializeToString(), count, removed, kept, restored)


def _graphs(model: Any) -> Iterator[Any]:
    """The main graph, then every subgraph (If/Loop/Scan bodies) of it and of local functions."""
    pending = [model.graph]
    for function in model.functions:
        pending.extend(_subgraphs_of(function.node))
    while pending:
        graph = pending.pop()
        yield graph
        pending.extend(_subgraphs_of(graph.node))


def _subgraphs_of(nodes: Any) -> Iterator[Any]:
    for node in nodes:
        for attribute in node.attribute:
            if attribute.type == ATTRIBUTE_GRAPH:
                yield attribute.g
            elif attribute.type == ATTRIBUTE_GRAPHS:
                yield from attribute.graphs


def _tensors(model: Any) -> Iterator[Any]:
    """Every weight-carrying tensor: initializers and tensors inside node attributes (Constant, ConstantOfShape)."""
    node_lists = [function.node for function in model.functions]
    for graph in _graphs(model):
        yield from graph.initializer
        for sparse in graph.sparse_initializer:
            if sparse.values.data_type == FLOAT16:
                raise UnsupportedModel("the model has sparse fp16 weights")
        node_lists.append(graph.node)
    for nodes in node_lists:
        for node in nodes:
            for attribute in node.attribute:
                if attribute.type == ATTRIBUTE_TENSOR:
                    yield attribute.t
                elif attribute.type == ATTRIBUTE_TENSORS:
                    yield from attribute.tensors


def _upcast(tensor: Any) -> bool:
    """fp16 → float32 in place; True when a GELU constant got its exact value back."""
    if tensor.data_type != FLOAT16:
        return False
    if tensor.data_location == EXTERNAL or len(tensor.external_data):
        raise UnsupportedModel("the model keeps its weights in external data files")
    if tensor.HasField("raw_data"):
        half = np.frombuffer(tensor.raw_data, dtype="<f2")
    else:
        half = np.asarray(tensor.int32_data, dtype=np.int64).astype(np.uint16).view("<f2")
    wide = half.astype("<f4")
    restored = False
    if wide.size == 1:
        for constant in GELU_CONSTANTS:
            if np.float16(constant) == half[0] and wide[0] != np.float32(constant):
                wide[0] = np.float32(constant)
                restored = True
    tensor.ClearField("int32_data")
    tensor.data_type = FLOAT
    tensor.raw_data = wide.tobytes()
    return restored


def _widen_fp16_inputs(graph: Any) -> None:
    """The copy takes exactly the feeds the original takes (an adapter sized its arrays from the original's
    session, and a CPU fallback reruns the same feeds): an fp16 input stays fp16 and gets one Cast to float32."""
    renamed = {}
    for value in graph.input:
        if value.type.HasField("tensor_type") and value.type.tensor_type.elem_type == FLOAT16:
            renamed[value.name] = f"{value.name}.fp32"
    if not renamed:
        return
    _rename_inputs(graph.node, renamed)
    for index, (name, wide) in enumerate(renamed.items()):
        cast = NodeProto(op_type="Cast", input=[name], output=[wide], name=f"{name}.to_fp32")
        cast.attribute.add(name="to", type=ATTRIBUTE_INT, i=FLOAT)
        graph.node.insert(index, cast)


def _retarget_attributes(node: Any) -> None:
    standard = node.domain in ("", "ai.onnx")
    for attribute in node.attribute:
        if attribute.type != ATTRIBUTE_INT or attribute.i != FLOAT16:
            continue
        if (attribute.name == "to" and standard and node.op_type == "Cast") or (
            attribute.name == "dtype" and standard and node.op_type in DTYPE_ATTRIBUTE_OPS
        ):
            attribute.i = FLOAT


def _retype(value_type: Any) -> None:
    if value_type.HasField("tensor_type") and value_type.tensor_type.elem_type == FLOAT16:
        value_type.tensor_type.elem_type = FLOAT
    if value_type.HasField("sparse_tensor_type") and value_type.sparse_tensor_type.elem_type == FLOAT16:
        value_type.sparse_tensor_type.elem_type = FLOAT
    for nested in ("sequence_type", "optional_type"):
        if value_type.HasField(nested):
            _retype(getattr(value_type, nested).elem_type)
    if value_type.HasField("map_type"):
        _retype(value_type.map_type.value_type)


def _drop_redundant_casts(graph: Any) -> int:
    """Remove Casts of the top-level graph whose input already has the target type; returns how many."""
    types = {tensor.name: tensor.data_type for tensor in graph.initializer}
    types.update(
        (value.name, value.type.tensor_type.elem_type) for value in graph.input if value.type.HasField("tensor_type")
    )
    outputs = {value.name for value in graph.output}
    renamed: dict[str, str] = {}
    dropped = []
    for index, node in enumerate(graph.node):
        inputs = [renamed.get(name, name) for name in node.input]
        if node.op_type == "Cast" and node.domain in ("", "ai.onnx") and inputs:
            target = _attribute(node, "to")
            if target is not None and types.get(inputs[0]) == target.i:
                if node.output[0] not in outputs:
                    renamed[node.output[0]] = inputs[0]
                    dropped.append(index)
                    continue
                node.op_type = "Identity"
                del node.attribute[:]
        for name, element_type in zip(node.output, _output_types(node, inputs, types), strict=False):
            if element_type is not None:
                types[name] = element_type
    for index in reversed(dropped):
        del graph.node[index]
    _rename_inputs(graph.node, renamed)
    for value in [value for value in graph.value_info if value.name in renamed]:
        graph.value_info.remove(value)
    return len(dropped)


def _output_types(node: Any, inputs: list[str], types: dict[str, int]) -> list[int | None]:
    count = len(node.output)
    if node.domain not in ("", "ai.onnx"):
        return [None] * count
    op = node.op_type
    first = types.get(inputs[0]) if inputs else None
    if op == "Cast":
        target = _attribute(node, "to")
        return [target.i if target is not None else None]
    if op == "Constant":
        (attribute,) = node.attribute or (None,)
        if attribute is None:
            return [None]
        if attribute.type == ATTRIBUTE_TENSOR:
            return [attribute.t.data_type]
        return [CONSTANT_ATTRIBUTE_TYPES.get(attribute.type)]
    if op == "ConstantOfShape":
        value = _attribute(node, "value")
        return [value.t.data_type if value is not None else FLOAT]
    if op in INT64_OUTPUTS:
        return [INT64] * count
    if op in BOOL_OUTPUTS:
        return [BOOL] * count
    if op in ("Where", "CastLike"):
        return [types.get(inputs[1]) if len(inputs) > 1 else None]
    if op in ("TopK", "MaxPool"):
        return [first, INT64][:count]
    if op in SAME_AS_FIRST:
        return [first] * count
    return [None] * count


def _attribute(node: Any, name: str) -> Any | None:
    return next((attribute for attribute in node.attribute if attribute.name == name), None)


def _rename_inputs(nodes: Any, renamed: dict[str, str]) -> None:
    """Point every consumer of a dropped Cast (including nodes of subgraphs, which see outer names) at its input."""
    for node in nodes:
        for index, name in enumerate(node.input):
            if name in renamed:
                node.input[index] = renamed[name]
        for subgraph in _subgraphs_of([node]):
            _rename_inputs(subgraph.node, renamed)
            for value in subgraph.output:
                if value.name in renamed:  # a body that returns an outer value by name
                    value.name = renamed[value.name]
