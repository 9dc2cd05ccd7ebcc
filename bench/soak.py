"""Soak the real job server: N sequential jobs, then M queued at once. Bounded in count and time.

    .venv/bin/python bench/soak.py [--sequential 500] [--queued 100] [--job remove-background]

Runs on loopback only, against kit models served by the loopback hub (no network). Prints failures,
queue order, server RSS at start / after the sequential phase / after the queued phase, and the growth.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402
from tests.kit.catalog import publish_kit_catalog  # noqa: E402
from tests.kit.hub import LoopbackHub  # noqa: E402
from tests.kit.server_env import install_server_environment  # noqa: E402

from imageforge.client.job_runner import make_runtime, run_job  # noqa: E402

DEADLINE_SECONDS = 1800


def server_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def sample_image(folder: Path) -> Path:
    path = folder / "soak input.png"
    pixels = np.random.default_rng(7).integers(0, 255, (48, 64, 3), dtype=np.uint8)
    buffer = BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    path.write_bytes(buffer.getvalue())
    return path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sequential", type=int, default=500)
    parser.add_argument("--queued", type=int, default=100)
    parser.add_argument("--job", default="remove-background")
    args = parser.parse_args()
    started = time.monotonic()

    with tempfile.TemporaryDirectory(prefix="imageforge-soak-") as scratch, LoopbackHub() as hub:
        folder = Path(scratch)
        catalog = publish_kit_catalog(hub, folder / "catalog")
        os.environ.update(
            IMAGEFORGE_MODEL_CATALOG=str(catalog.path), HF_ENDPOINT=hub.url, XDG_STATE_HOME=str(folder / "state")
        )
        storage = install_server_environment(folder / "storage")
        runtime = make_runtime(storage)
        parameters = {"input": str(sample_image(folder))}
        try:
            run_job(runtime, args.job, parameters)  # warm up: model download and session load
            pid = runtime.server.connection.pid
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:120]
            print(f"server process {pid}: {command}")
            rss = {"after warm-up": server_rss_mib(pid)}
            failures, durations = 0, []
            for _ in range(args.sequential):
                if time.monotonic() - started > DEADLINE_SECONDS:
                    print("deadline reached; stopping the sequential phase early")
                    break
                begin = time.perf_counter()
                try:
                    run_job(runtime, args.job, parameters, poll_interval=0.01)
                except Exception as error:  # counted and reported, the soak goes on
                    failures += 1
                    print(f"sequential failure: {error}")
                durations.append(time.perf_counter() - begin)
            rss["after sequential"] = server_rss_mib(pid)

            controller = runtime.server
            submitted = [controller.submit(args.job, parameters)["job_id"] for _ in range(args.queued)]
            finished_order, states = [], {}
            while len(states) < len(submitted) and time.monotonic() - started < DEADLINE_SECONDS:
                for job_id in submitted:
                    if job_id in states:
                        continue
                    status = controller.status(job_id)
                    if status["state"] in {"succeeded", "failed", "cancelled"}:
                        states[job_id] = status["state"]
                        finished_order.append((status.get("progress"), job_id))
                time.sleep(0.02)
            rss["after queued"] = server_rss_mib(pid)
            queued_failures = sum(state != "succeeded" for state in states.values())
            started_order = [
                json_time(storage / "jobs" / job_id / "job-state.json") for job_id in submitted if job_id in states
            ]
            in_order = started_order == sorted(started_order)
        finally:
            runtime.server.stop()

    print(f"sequential jobs: {len(durations)}, failures: {failures}")
    if durations:
        print(
            f"  per job: median {statistics.median(durations) * 1000:.1f} ms, "
            f"p95 {sorted(durations)[int(len(durations) * 0.95) - 1] * 1000:.1f} ms"
        )
    print(f"queued jobs: {len(submitted)}, finished: {len(states)}, failures: {queued_failures}")
    print(f"  queue order kept (finish times follow submission order): {in_order}")
    for label, value in rss.items():
        print(f"server RSS {label}: {value:.1f} MiB")
    growth = rss["after queued"] - rss["after warm-up"]
    print(f"server RSS growth over the soak: {growth:+.1f} MiB")
    print(f"total wall time: {time.monotonic() - started:.1f} s")
    return 0 if failures == 0 and queued_failures == 0 and in_order else 1


def json_time(path: Path) -> float:
    return float(json.loads(path.read_text())["time"])


if __name__ == "__main__":
    sys.exit(main())
