"""One model in one ONNX Runtime, timed: run by bench/ort_versions.py and bench/openvino_cpu.py with the python of
the environment under test (it imports only numpy and onnxruntime, whatever their versions).

    python bench/ort_timed_run.py MODEL SIDE THREADS RUNS OUT.npz TOKENS [PROVIDER]

A warm-up run (its outputs saved to OUT.npz), then RUNS timed runs; prints one JSON line
{"version", "wall": [s, ...], "cpu": [s, ...]}. Image inputs are a seeded (1, 3, SIDE, SIDE) float32 tensor, an int64
input (MoGe-2's num_tokens) is TOKENS. PROVIDER defaults to the CPU provider; OpenVINO runs its CPU device in FP32
with THREADS threads, CPU as the fallback, and the run fails if OpenVINO did not take the session.
"""

import json
import sys
import time

import numpy as np
import onnxruntime as ort


def main() -> None:
    path, side, threads, runs, out, tokens = sys.argv[1:7]
    provider = sys.argv[7] if len(sys.argv) > 7 else "CPUExecutionProvider"
    side_px, thread_count, run_count = int(side), int(threads), int(runs)
    options = ort.SessionOptions()
    options.intra_op_num_threads = thread_count
    if provider == "OpenVINOExecutionProvider":
        openvino = {"device_type": "CPU", "precision": "FP32", "num_of_threads": str(thread_count)}
        session = ort.InferenceSession(
            path, options, providers=[provider, "CPUExecutionProvider"], provider_options=[openvino, {}]
        )
    else:
        session = ort.InferenceSession(path, options, providers=[provider])
    assert session.get_providers()[0] == provider, session.get_providers()
    feed = {}
    for item in session.get_inputs():
        if item.type == "tensor(int64)":
            feed[item.name] = np.array(int(tokens), np.int64)
        else:
            feed[item.name] = np.random.default_rng(0).random((1, 3, side_px, side_px), dtype=np.float32)
    outputs = session.run(None, feed)
    np.savez(out, *[np.asarray(output) for output in outputs])
    wall, cpu = [], []
    for _ in range(run_count):
        began, began_cpu = time.perf_counter(), time.process_time()
        session.run(None, feed)
        wall.append(time.perf_counter() - began)
        cpu.append(time.process_time() - began_cpu)
    print(json.dumps({"version": ort.__version__, "wall": wall, "cpu": cpu}))


if __name__ == "__main__":
    main()
