"""The frame loop's writer thread: frames written in order, one waiting at most, errors not lost, big frames in line."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from imageforge.server.job_steps.write_behind import MAX_OVERLAP_BYTES, WriteBehind


def test_writes_run_in_order_beside_the_caller_and_at_most_one_waits():
    written: list[int] = []
    threads: set[str] = set()
    in_flight = threading.Semaphore(2)  # the caller's frame and one being written, never a third
    small = np.zeros(4, np.float32)

    def write(number: int) -> None:
        assert in_flight.acquire(blocking=False), "a second write started before the first ended"
        threads.add(threading.current_thread().name)
        time.sleep(0.01)
        written.append(number)
        in_flight.release()

    with WriteBehind() as behind:
        for number in range(6):
            behind.submit(lambda number=number: write(number), small)
    assert written == list(range(6))
    assert threads and all(name.startswith("imageforge-frame-writer") for name in threads)


def test_an_error_in_a_write_fails_the_loop():
    def broken() -> None:
        raise OSError("disk gone")

    with pytest.raises(OSError, match="disk gone"), WriteBehind() as behind:
        behind.submit(broken, np.zeros(1))
        behind.submit(lambda: None, np.zeros(1))  # the previous write's error surfaces here


def test_a_frame_too_big_to_hold_twice_and_the_switch_write_in_line():
    class Huge:
        nbytes = MAX_OVERLAP_BYTES + 1

    for behind, frame in ((WriteBehind(), Huge()), (WriteBehind(enabled=False), np.zeros(1))):
        seen: list[str] = []
        with behind:
            behind.submit(lambda seen=seen: seen.append(threading.current_thread().name), frame)  # type: ignore[arg-type]
            assert seen == [threading.current_thread().name]  # done before submit returned, in this thread
