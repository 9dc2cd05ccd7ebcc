"""The ONNX protobuf messages this server reads and edits, declared from onnx.proto's field numbers, without the
onnx package: the one home of ONNX's wire format here.

Two uses: deriving a CPU copy of an fp16 model (cpu_copies/fp32_graph.py: `parse_model`, a full parse that is
rewritten and serialised), and checking a model's last operation when it loads (models/ben2.py:
`final_operator`, which reads only the top-level graph's nodes from a memory map, see `graph_nodes`).

The server environment ships protobuf (ONNX Runtime needs it) but not `onnx`, and both uses read or rewrite only
a few fields: graph nodes, initializers, attribute tensors, value types.
Protobuf keeps every field it does not know as unknown bytes and writes them back unchanged, so a subset of
the schema round-trips a whole model: shapes, doc strings, opset imports and everything else pass through.

Field numbers and wire types are those of onnx.proto (proto2); a test compares each one with the `onnx`
package's own descriptors. Enums are declared as int32 (the same varint on the wire), so values this code
does not know survive as numbers.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

PACKAGE = "imageforge.onnx_subset"

# TensorProto.DataType values used here.
FLOAT = 1
FLOAT16 = 10
# AttributeProto.AttributeType values used here.
ATTRIBUTE_INT = 2
ATTRIBUTE_TENSOR = 4
ATTRIBUTE_GRAPH = 5
ATTRIBUTE_TENSORS = 9
ATTRIBUTE_GRAPHS = 10
# TensorProto.DataLocation
EXTERNAL = 1

_F = descriptor_pb2.FieldDescriptorProto
_OPTIONAL, _REPEATED = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED
_SCALARS = {
    "int64": _F.TYPE_INT64,
    "int32": _F.TYPE_INT32,
    "float": _F.TYPE_FLOAT,
    "string": _F.TYPE_STRING,
    "bytes": _F.TYPE_BYTES,
}

# message → (field name, number, repeated, type: a scalar name above or a message name, packed)
SCHEMA: dict[str, tuple[tuple[str, int, bool, str, bool], ...]] = {
    "ModelProto": (
        ("graph", 7, False, "GraphProto", False),
        ("metadata_props", 14, True, "StringStringEntryProto", False),
        ("functions", 25, True, "FunctionProto", False),
    ),
    "GraphProto": (
        ("node", 1, True, "NodeProto", False),
        ("name", 2, False, "string", False),
        ("initializer", 5, True, "TensorProto", False),
        ("input", 11, True, "ValueInfoProto", False),
        ("output", 12, True, "ValueInfoProto", False),
        ("value_info", 13, True, "ValueInfoProto", False),
        ("sparse_initializer", 15, True, "SparseTensorProto", False),
    ),
    "FunctionProto": (
        ("node", 7, True, "NodeProto", False),
        ("value_info", 12, True, "ValueInfoProto", False),
    ),
    "NodeProto": (
        ("input", 1, True, "string", False),
        ("output", 2, True, "string", False),
        ("name", 3, False, "string", False),
        ("op_type", 4, False, "string", False),
        ("attribute", 5, True, "AttributeProto", False),
        ("domain", 7, False, "string", False),
    ),
    "AttributeProto": (
        ("name", 1, False, "string", False),
        ("f", 2, False, "float", False),
        ("i", 3, False, "int64", False),
        ("t", 5, False, "TensorProto", False),
        ("g", 6, False, "GraphProto", False),
        ("tensors", 10, True, "TensorProto", False),
        ("graphs", 11, True, "GraphProto", False),
        ("type", 20, False, "int32", False),
    ),
    "TensorProto": (
        ("dims", 1, True, "int64", False),
        ("data_type", 2, False, "int32", False),
        ("float_data", 4, True, "float", True),
        ("int32_data", 5, True, "int32", True),
        ("name", 8, False, "string", False),
        ("raw_data", 9, False, "bytes", False),
        ("external_data", 13, True, "StringStringEntryProto", False),
        ("data_location", 14, False, "int32", False),
    ),
    "SparseTensorProto": (("values", 1, False, "TensorProto", False),),
    "ValueInfoProto": (
        ("name", 1, False, "string", False),
        ("type", 2, False, "TypeProto", False),
    ),
    "TypeProto": (
        ("tensor_type", 1, False, "TypeProto.Tensor", False),
        ("sequence_type", 4, False, "TypeProto.Sequence", False),
        ("map_type", 5, False, "TypeProto.Map", False),
        ("sparse_tensor_type", 8, False, "TypeProto.SparseTensor", False),
        ("optional_type", 9, False, "TypeProto.Optional", False),
    ),
    "TypeProto.Tensor": (("elem_type", 1, False, "int32", False),),
    "TypeProto.SparseTensor": (("elem_type", 1, False, "int32", False),),
    "TypeProto.Sequence": (("elem_type", 1, False, "TypeProto", False),),
    "TypeProto.Optional": (("elem_type", 1, False, "TypeProto", False),),
    "TypeProto.Map": (("value_type", 2, False, "TypeProto", False),),
    "StringStringEntryProto": (
        ("key", 1, False, "string", False),
        ("value", 2, False, "string", False),
    ),
}


def _local_name(message: str) -> str:
    return message.replace(".", "_")  # nested ONNX messages become top-level ones: the wire does not care


def _file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto(name="imageforge_onnx_subset.proto", package=PACKAGE, syntax="proto2")
    for message, fields in SCHEMA.items():
        declared = file.message_type.add(name=_local_name(message))
        for name, number, repeated, kind, packed in fields:
            field = declared.field.add(name=name, number=number, label=_REPEATED if repeated else _OPTIONAL)
            if kind in _SCALARS:
                field.type = _SCALARS[kind]
            else:
                field.type = _F.TYPE_MESSAGE
                field.type_name = f".{PACKAGE}.{_local_name(kind)}"
            if packed:
                field.options.packed = True
    return file


def _classes() -> dict[str, Any]:
    pool = descriptor_pool.DescriptorPool()  # private: never clashes with the onnx package's own messages
    pool.Add(_file_descriptor())
    return {
        message: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{_local_name(message)}"))
        for message in SCHEMA
    }


_CLASSES = _classes()
ModelProto = _CLASSES["ModelProto"]
GraphProto = _CLASSES["GraphProto"]
NodeProto = _CLASSES["NodeProto"]
TensorProto = _CLASSES["TensorProto"]


def parse_model(data: bytes) -> Any:
    model = ModelProto()
    model.ParseFromString(data)
    return model


# -- reading a graph's nodes without reading its weights --------------------------------------------------------
#
# A full parse holds every weight twice (about twice the file in memory: 450 MB peak for a 200 MB model, against
# 5 MB for this), which a check at load time must not cost. The nodes are a small part of the file: their spans
# are found in a memory map from the schema's field numbers, and each is parsed by the same NodeProto class the
# rewrite uses. Initializers are skipped by their length, never copied.

Span = tuple[int, int]  # (start, end) of a length-delimited field's bytes
# Operators that pass values through unchanged (or only change their dtype or shape): looked through.
PASS_THROUGH = frozenset({"Cast", "Identity", "Reshape", "Squeeze", "Unsqueeze", "Flatten"})
_LENGTH_DELIMITED = 2


def field_number(message: str, name: str) -> int:
    """The field's number in SCHEMA (onnx.proto's, checked against the onnx package by a test)."""
    return next(number for field, number, *_ in SCHEMA[message] if field == name)


def _varint(data: memoryview, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7


def _spans(data: memoryview, span: Span, wanted: int) -> Iterator[Span]:
    """The spans of one message's length-delimited fields numbered `wanted`; every other field is skipped."""
    position, end = span
    while position < end:
        key, position = _varint(data, position)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, position = _varint(data, position)
        elif wire == _LENGTH_DELIMITED:
            length, position = _varint(data, position)
            if number == wanted:
                yield position, position + length
            position += length
        elif wire == 1:
            position += 8
        elif wire == 5:
            position += 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")


def graph_nodes(path: Path) -> list[Any]:
    """The NodeProtos of the model's top-level graph, read from a memory map of the file."""
    graph, node = field_number("ModelProto", "graph"), field_number("GraphProto", "node")
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        view = memoryview(data)
        try:
            return [
                NodeProto.FromString(bytes(view[start:end]))
                for graph_span in _spans(view, (0, len(view)), graph)
                for start, end in _spans(view, graph_span, node)
            ]
        finally:
            view.release()


@lru_cache(maxsize=8)
def _producers(path: str, size: int, mtime_ns: int) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Tensor name → (op_type, inputs) of the node that produces it."""
    return {output: (node.op_type, tuple(node.input)) for node in graph_nodes(Path(path)) for output in node.output}


def final_operator(path: Path, output: str) -> str | None:
    """The op_type that computes `output`, looking through casts and reshapes; None for a graph input.
    Used to verify a model's last operation (BEN2's matte must end in a sigmoid) when its file is loaded."""
    info = path.stat()
    producers = _producers(str(path), info.st_size, info.st_mtime_ns)
    name, seen = output, set()
    while name in producers and name not in seen:
        seen.add(name)
        op_type, inputs = producers[name]
        if op_type not in PASS_THROUGH or not inputs:
            return op_type
        name = inputs[0]
    return None
