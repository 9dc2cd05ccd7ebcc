"""The progress line: bytes and speed, throttled, honest across resumes and restarts."""

from __future__ import annotations

from imageforge.server.downloads.meter import TransferMeter, format_rate


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def meter_with(total: int, reports: list, clock: Clock) -> TransferMeter:
    return TransferMeter(lambda fraction, message: reports.append((fraction, message)), total_bytes=total, clock=clock)


def test_message_shows_percent_and_recent_speed():
    reports, clock = [], Clock()
    meter = meter_with(1_000_000_000, reports, clock)
    meter.start_file("BEN2 Base", 1_000_000_000)
    on_disk = 380_000_000 - 5 * 12_400_000
    for second in range(6):
        meter.file_progress(on_disk + second * 12_400_000, 1_000_000_000)
        clock.now += 1.0
    assert reports[-1] == (0.38, "Downloading BEN2 Base 38% · 12.4 MB/s")
    assert format_rate(12_400_000) == "12.4 MB/s" and format_rate(512_000) == "512 kB/s"


def test_speed_follows_the_last_seconds_not_the_average():
    reports, clock = [], Clock()
    meter = meter_with(100_000_000, reports, clock)
    meter.start_file("Model", 100_000_000)
    received = 0
    for rate in [1_000_000] * 4 + [10_000_000] * 4:
        meter.file_progress(received, 100_000_000)
        received += rate
        clock.now += 1.0
    meter.file_progress(received, 100_000_000)
    assert reports[-1][1].endswith("· 10.0 MB/s")


def test_updates_are_throttled():
    reports, clock = [], Clock()
    meter = meter_with(10_000_000, reports, clock)
    meter.start_file("Model", 10_000_000)
    for step in range(1, 1001):  # 1000 chunks over 2 s
        clock.now += 0.002
        meter.file_progress(step * 10_000, 10_000_000)
    assert 8 <= len(reports) <= 9  # one every 0.25 s, not one per chunk


def test_resumed_bytes_count_for_progress_but_not_for_speed():
    reports, clock = [], Clock()
    meter = meter_with(1_000_000, reports, clock)
    meter.start_file("Model", 1_000_000)
    meter.file_progress(900_000, 1_000_000)  # 900 kB were already on disk
    clock.now += 1.0
    meter.file_progress(950_000, 1_000_000)
    assert reports[-1] == (0.95, "Downloading Model 95% · 50 kB/s")


def test_progress_never_goes_backwards_when_a_file_restarts_and_unknown_sizes_join_the_total():
    reports, clock = [], Clock()
    meter = meter_with(1_000, reports, clock)
    meter.start_file("First", 1_000)
    meter.file_progress(600, 1_000)
    clock.now += 1
    meter.file_progress(0, 1_000)  # the server ignored Range: the file starts over
    assert [fraction for fraction, _ in reports] == [0.6, 0.6]
    meter.finish_file(1_000)
    meter.start_file("Second", None)  # size learned from the server's answer
    clock.now += 1
    meter.file_progress(0, 3_000)
    clock.now += 1
    meter.file_progress(3_000, 3_000)
    assert reports[-1][0] == 1.0 and reports[-2][0] == 0.6
