"""The fp32 CPU copies of fp16 model files, and the ONNX protobuf reading and rewriting they need (openspec/0012).

`cpu_copy.py` derives, verifies and records the copy beside the model file; `fp32_graph.py` rewrites an fp16
graph to fp32 (run in a child process of the server environment for large files: server/child_python.py);
`onnx_messages.py` is ONNX's protobuf schema without the `onnx` package, also used to read which operator
produces a model's output from a memory map (models/ben2.py). inference/model_manager.py asks for a copy before
loading a CPU session; nothing here imports the session cache.
"""
