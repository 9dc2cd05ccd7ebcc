"""Session load time on the first acquire versus a reused acquire, through the real ModelManager.

Run: `.venv/bin/python bench/inference_reuse.py [--repeats N]` (CPU, the test kit's tiny models written to a
temporary storage root). Real models load in seconds, not milliseconds; the kit models show the floor of
what reuse saves: every reused acquire skips ONNX Runtime's graph load and optimisation entirely.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from tests.kit.onnx_models import build_ben2, build_da3, build_moge2, build_upscaler  # noqa: E402

from imageforge.contract import Device  # noqa: E402
from imageforge.contract.catalog import Family, ModelEntry, ModelFile  # noqa: E402
from imageforge.server.downloads.store import file_path  # noqa: E402
from imageforge.server.inference import ModelManager  # noqa: E402

MODELS = (
    ("KIT_BEN2_1024", Family("background"), lambda path: build_ben2(path, size=1024)),
    ("KIT_UPSCALER_R2", Family("upscale"), lambda path: build_upscaler(path, receptive_radius=2)),
    ("KIT_MOGE2", Family("geometry"), build_moge2),
    ("KIT_DA3", Family("multiview"), build_da3),
)


def entry(key: str, family: Family) -> ModelEntry:
    return ModelEntry(key, family, family, key, "MIT", f"kit/{key}", key.lower(), False, (ModelFile("m.onnx"),))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20, help="loads and reused acquires measured per model")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        storage = Path(folder)
        entries = []
        for key, family, build in MODELS:
            item = entry(key, family)
            build(file_path(storage, item, item.files[0]))
            entries.append(item)
        manager = ModelManager(storage)
        started = time.perf_counter()
        runtime = manager.runtime
        detect = time.perf_counter() - started
        print(f"onnxruntime {runtime.variant} {runtime.version}; devices {[d.value for d in runtime.devices]}")
        print(f"runtime detection (import + probes, once per server): {detect * 1e3:.1f} ms")
        print(f"{'model':<18}{'first acquire ms':>18}{'reused acquire ms':>19}{'ratio':>9}")
        for item in entries:
            loads, reuses = [], []
            for _ in range(args.repeats):
                manager.clear()
                started = time.perf_counter()
                handle = manager.acquire(item, Device.CPU)
                loads.append(time.perf_counter() - started)
                started = time.perf_counter()
                again = manager.acquire(item, Device.CPU)
                reuses.append(time.perf_counter() - started)
                assert again.session is handle.session
            load, reuse = statistics.median(loads), statistics.median(reuses)
            print(f"{item.key:<18}{load * 1e3:>18.2f}{reuse * 1e3:>19.3f}{load / reuse:>8.0f}x")
        manager.close()


if __name__ == "__main__":
    main()
