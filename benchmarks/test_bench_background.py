"""Background commands (issue 22): reading the newest 50 KB of a command writing 100 MB/s.

Two figures, in one run:

* latency from write to readable: a producer writes 100 MB/s in 1 MiB
  chunks, each ending with a line holding the wall-clock time it was
  written; a reader polls the handle every 10 ms, reads its newest 50 KB and
  takes the time of the last complete stamp it finds (goal: at most 1.5 s at
  the default seal interval);
* the writer's throughput: the same command (as fast as it can write,
  ``OVERSPILL_BENCH_BACKGROUND_MIB``, default 512 MiB) through a background
  job against ``overspill run``'s path (``tools.bash.execute``, spill on),
  alternating, both into a fresh store (goal: at least 0.9x).

    python -m pytest benchmarks/test_bench_background.py --benchmark-only -s
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import pytest

from overspill import ToolOutputStore, background
from overspill.tools.bash import execute

SESSION = "bench"
MIB = int(os.environ.get("OVERSPILL_BENCH_BACKGROUND_MIB", "512"))
RATE_SECONDS = float(os.environ.get("OVERSPILL_BENCH_BACKGROUND_SECONDS", "6"))

# 100 MB/s in 1 MiB chunks; each chunk's last line is "T <time_ns>".
_PACED = f"""
import os, sys, time
line = b"x" * 99 + b"\\n"
body = line * (1048576 // 100 - 1)
start = time.monotonic()
for index in range(int({RATE_SECONDS} * 100)):
    due = start + index * 1048576 / 100e6
    pause = due - time.monotonic()
    if pause > 0:
        time.sleep(pause)
    os.write(1, body + b"T %d\\n" % time.time_ns())
"""
_FAST = f"yes 'a log line of a fast build, eighty characters long, as compilers write it.' | head -c {MIB << 20}"


def _newest_stamp(text: str) -> int | None:
    position = text.rfind("\nT ")
    while position >= 0:
        end = text.find("\n", position + 1)
        if end > 0:
            return int(text[position + 3 : end])
        position = text.rfind("\nT ", 0, position)
    return None


def test_latency_from_write_to_readable(tmp_path):
    with ToolOutputStore(tmp_path / "data") as store:
        job = background.start(store, SESSION, "paced", [sys.executable, "-c", _PACED])
        latencies = []
        while not job.exited.is_set():
            size = store.status(SESSION, job.uri).resource.size
            if size:
                page = store.read(SESSION, job.uri, offset=max(size - 50 * 1024, 0), limit=50 * 1024)
                stamp = _newest_stamp(page.content)
                if stamp is not None:
                    latencies.append((time.time_ns() - stamp) / 1e9)
            time.sleep(0.01)
        job.wait(None)
        record = store.status(SESSION, job.uri)
    assert record.state == "exited" and record.exit_code == 0
    rate = record.resource.size / RATE_SECONDS / 1e6
    print(f"\nwrite-to-readable latency at {rate:.0f} MB/s over {len(latencies)} reads of the newest 50 KB: "
          f"median {statistics.median(latencies):.3f} s, p95 {sorted(latencies)[int(len(latencies) * 0.95)]:.3f} s, "
          f"max {max(latencies):.3f} s (goal <= 1.5 s)")


def _background_run(folder) -> float:
    with ToolOutputStore(folder) as store:
        began = time.perf_counter()
        job = background.start(store, SESSION, "fast", _FAST)
        job.wait(None)
        elapsed = time.perf_counter() - began
        assert job.final is not None and job.final.resource.size == MIB << 20
    return elapsed


def _foreground_run(folder) -> float:
    with ToolOutputStore(folder) as store:
        began = time.perf_counter()
        ran = execute(store, SESSION, "fast", _FAST, timeout=600)
        elapsed = time.perf_counter() - began
        assert ran.resource is not None and ran.resource.size == MIB << 20
    return elapsed


@pytest.mark.benchmark(group="background writer")
def test_writer_throughput_against_run(benchmark, tmp_path):
    rounds = int(os.environ.get("OVERSPILL_BENCH_BACKGROUND_ROUNDS", "3"))
    background_times, foreground_times = [], []
    for index in range(rounds):  # alternating, each into a fresh folder, nothing dirty left behind
        for label, function, times in (("bg", _background_run, background_times),
                                       ("fg", _foreground_run, foreground_times)):
            os.sync()
            times.append(function(tmp_path / f"{label}-{index}"))
    benchmark.pedantic(lambda: None, rounds=1)
    background_speed = MIB / statistics.median(background_times)
    foreground_speed = MIB / statistics.median(foreground_times)
    benchmark.extra_info.update(background_mib_s=background_speed, run_mib_s=foreground_speed)
    print(f"\nwriter throughput, {MIB} MiB: background {background_speed:.0f} MiB/s, overspill run "
          f"{foreground_speed:.0f} MiB/s, ratio {background_speed / foreground_speed:.2f}x (goal >= 0.9x)")
