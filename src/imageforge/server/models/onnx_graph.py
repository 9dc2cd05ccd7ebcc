"""Read which operator produces an ONNX graph's output, without the `onnx` package (the server does not ship it).

An ONNX file is a protobuf `ModelProto`; its `graph` (field 7) lists `node`s (field 1), each with `input`s
(field 1), `output`s (field 2) and an `op_type` (field 4). Weights (`initializer`, field 5) are skipped by their
length, and the file is memory-mapped, so a 200 MB model costs a scan of its node list, not a copy.
Used to verify a model's last operation (BEN2's matte must end in a sigmoid) when its file is loaded.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

_MODEL_GRAPH, _GRAPH_NODE = 7, 1
_NODE_INPUT, _NODE_OUTPUT, _NODE_OP_TYPE = 1, 2, 4
Span = tuple[int, int]  # (start, end) of a length-delimited field's bytes
# Operators that pass values through unchanged (or only change their dtype or shape): looked through.
PASS_THROUGH = frozenset({"Cast", "Identity", "Reshape", "Squeeze", "Unsqueeze", "Flatten"})


def _varint(data: memoryview, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7


def _fields(data: memoryview, start: int, end: int) -> Iterator[tuple[int, int, int | Span]]:
    """(field number, wire type, value or (start, end) of a length-delimited field) of one message."""
    position = start
    while position < end:
        key, position = _varint(data, position)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, position = _varint(data, position)
            yield number, wire, value
        elif wire == 2:
            length, position = _varint(data, position)
            yield number, wire, (position, position + length)
            position += length
        elif wire == 1:
            position += 8
        elif wire == 5:
            position += 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")


def _text(data: memoryview, span: Span) -> str:
    return bytes(data[span[0] : span[1]]).decode("utf-8")


@lru_cache(maxsize=8)
def _producers(path: str, size: int, mtime_ns: int) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Tensor name → (op_type, inputs) of the node that produces it."""
    producers: dict[str, tuple[str, tuple[str, ...]]] = {}
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        view = memoryview(data)
        try:
            # A span (not an int) is a length-delimited field: wire type 2.
            for number, _wire, graph in _fields(view, 0, len(view)):
                if number != _MODEL_GRAPH or not isinstance(graph, tuple):
                    continue
                for field, _kind, node in _fields(view, *graph):
                    if field != _GRAPH_NODE or not isinstance(node, tuple):
                        continue
                    inputs: list[str] = []
                    outputs: list[str] = []
                    op_type = ""
                    for part, _part_kind, value in _fields(view, *node):
                        if not isinstance(value, tuple):
                            continue
                        if part == _NODE_INPUT:
                            inputs.append(_text(view, value))
                        elif part == _NODE_OUTPUT:
                            outputs.append(_text(view, value))
                        elif part == _NODE_OP_TYPE:
                            op_type = _text(view, value)
                    for name in outputs:
                        producers[name] = (op_type, tuple(inputs))
        finally:
            view.release()
    return producers


def final_operator(path: Path, output: str) -> str | None:
    """The op_type that computes `output`, looking through casts and reshapes; None for a graph input."""
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
