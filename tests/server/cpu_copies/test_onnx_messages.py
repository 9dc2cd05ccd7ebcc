"""The one ONNX reader (server/cpu_copies/onnx_messages.py): a full parse for rewriting, and the top-level graph's
nodes read from a memory map (weights skipped) for checks at load time; both from the same schema."""

from __future__ import annotations

from pathlib import Path

from imageforge.server.cpu_copies.onnx_messages import field_number, final_operator, graph_nodes, parse_model
from tests.kit.onnx_models import build_ben2, build_ben2_fp16


def test_the_nodes_read_from_the_map_are_the_full_parses_nodes(tmp_path: Path):
    path = build_ben2_fp16(tmp_path / "model_fp16.onnx")  # weights, Casts, a Resize, attributes
    full = parse_model(path.read_bytes()).graph
    assert len(full.initializer) > 0
    nodes = graph_nodes(path)
    assert [node.SerializeToString() for node in nodes] == [node.SerializeToString() for node in full.node]
    assert [node.op_type for node in nodes] == [node.op_type for node in full.node] and len(nodes) > 5


def test_the_final_operator_looks_through_casts_and_reshapes(tmp_path: Path):
    sigmoid = build_ben2(tmp_path / "sigmoid.onnx", size=32, final_sigmoid=True)  # Sigmoid, then a Cast to fp16
    assert graph_nodes(sigmoid)[-1].op_type == "Cast"
    assert final_operator(sigmoid, "output") == "Sigmoid"
    assert final_operator(build_ben2(tmp_path / "logits.onnx", size=32), "output") == "Conv"
    assert final_operator(sigmoid, "input") is None  # a graph input: no operator computes it


def test_field_numbers_come_from_the_schema():
    assert (field_number("ModelProto", "graph"), field_number("GraphProto", "node")) == (7, 1)
    assert field_number("NodeProto", "op_type") == 4
