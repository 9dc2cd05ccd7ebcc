"""The verified-model cache (contract/model_files.py) is updated by the job server and the CLI, each in its own
process: concurrent updates lose no record, and the lock they share serialises processes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from imageforge.contract.file_lock import exclusive_file_lock

WRITERS, RECORDS = 4, 120

WRITER = """
import sys
from pathlib import Path
from imageforge.contract.model_files import remember_hash
root, tag, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
sys.stdin.readline()  # every writer starts at once
for index in range(count):
    remember_hash(root, root / "models" / tag / f"{index}.onnx", f"{index:064x}")
"""


def test_writers_in_several_processes_lose_no_record(tmp_path: Path):
    for writer in range(WRITERS):
        folder = tmp_path / "models" / f"w{writer}"
        folder.mkdir(parents=True)
        for index in range(RECORDS):
            (folder / f"{index}.onnx").write_bytes(b"model")
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path), f"w{writer}", str(RECORDS)],
            stdin=subprocess.PIPE,
            text=True,
        )
        for writer in range(WRITERS)
    ]
    time.sleep(1.0)  # let every interpreter start before any writes
    for process in processes:
        process.stdin.write("go\n")
        process.stdin.close()
    assert [process.wait(timeout=120) for process in processes] == [0] * WRITERS
    cache = json.loads((tmp_path / "models" / ".verified.json").read_text(encoding="utf-8"))
    expected = {f"w{writer}/{index}.onnx" for writer in range(WRITERS) for index in range(RECORDS)}
    assert set(cache) == expected
    assert cache["w3/7.onnx"]["sha256"] == f"{7:064x}"


HOLDER = """
import sys, time
from pathlib import Path
from imageforge.contract.file_lock import exclusive_file_lock
with exclusive_file_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(1.0)
"""


def test_the_lock_waits_for_another_process(tmp_path: Path):
    path = tmp_path / "lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "held\n"
    started = time.monotonic()
    with exclusive_file_lock(path):
        waited = time.monotonic() - started  # the holder keeps it for a second after saying so
    holder.wait()
    assert waited > 0.5
    assert path.stat().st_mode & 0o777 == 0o600
