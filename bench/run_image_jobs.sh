#!/usr/bin/env bash
# The image-job benchmark in one command (see bench/README.md). Exports the models once if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -f bench/models/ben2-shaped.onnx || ! -f bench/models/realesr-general-x4v3.onnx || ! -f bench/models/realesrgan-x4plus.onnx ]]; then
  .venv-bench-image/bin/python bench/export_image_models.py
fi
exec .venv/bin/python bench/image_jobs.py "$@"
