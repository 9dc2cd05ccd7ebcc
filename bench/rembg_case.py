"""One rembg measurement, run by bench/image_jobs.py inside the throwaway rembg environment.

    .venv-bench-rembg/bin/python bench/rembg_case.py MODEL.onnx IMAGE.png OUTPUT.png THREADS

rembg's `ben_custom` session runs the same ONNX file ImageForge's remove-background runs. Like the job, the
timed part decodes the file, removes the background and writes an RGBA PNG; a first, untimed call warms the
session up as the job's server does. Prints JSON: total seconds, seconds inside the ONNX session, load seconds.
"""

from __future__ import annotations

import json
import os
import sys
import time

# rembg loads custom models only from its home folder: make that the folder holding the exported file.
os.environ["REMBG_HOME"] = os.path.dirname(os.path.abspath(sys.argv[1]))

import onnxruntime as ort  # noqa: E402
from PIL import Image  # noqa: E402
from rembg import new_session, remove  # noqa: E402


def main(model: str, image: str, output: str, threads: int) -> None:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    started = time.perf_counter()
    session = new_session("ben_custom", model_path=model, sess_opts=options, providers=["CPUExecutionProvider"])
    load = time.perf_counter() - started
    inner = session.inner_session
    spent = [0.0]
    run = inner.run

    def timed_run(*args, **kwargs):
        begun = time.perf_counter()
        try:
            return run(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - begun

    inner.run = timed_run
    remove(Image.open(image), session=session)  # warm-up, as a warm server has run the model before
    spent[0] = 0.0
    started = time.perf_counter()
    result = remove(Image.open(image), session=session)
    result.save(output)
    total = time.perf_counter() - started
    print(json.dumps({"total_s": total, "model_s": spent[0], "load_s": load, "onnxruntime": ort.__version__}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
