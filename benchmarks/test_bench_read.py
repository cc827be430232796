"""Read-path benchmarks (issue 11 goals 1, 2 and 5), each against its baseline in one run.

Run: ``python -m pytest benchmarks/test_bench_read.py --benchmark-only``.

* a 50 KB page at random offsets of a 64 MiB resource, verified on every
  read, against ``os.pread`` of the same bytes plus ``decode``;
* the first read by a store that has never seen the resource, against a warm read;
* its record's parse (``record_fields``, 1 and 64 MiB payloads), against
  ``json.loads`` plus ``bytes.fromhex``;
* ``overspill read URI --all | head -c 10`` of a 500 MB resource, against
  ``python -c pass`` plus ``head -c 10 FILE``; peak memory of a whole
  ``read --all`` in ``extra_info``.  The two alternate round by round (the
  ratio of medians is printed), both with bytecode cached, as an installed
  wheel's interpreter has it (``bytecode_environment``).
"""

from __future__ import annotations

import itertools
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import make_text, time_alternating

from overspill import ToolOutputStore, _kernels

IMPLEMENTATIONS = ["cython", "python"]
PAGE = 50 * 1024
SCRIPT = Path(sys.executable).with_name("overspill")


@pytest.fixture(params=IMPLEMENTATIONS)
def implementation(request):
    previous = _kernels.IMPLEMENTATION
    _kernels.use(request.param)
    yield request.param
    _kernels.use(previous)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("reads")


@pytest.fixture(scope="module")
def store(folder):
    with ToolOutputStore(folder, durable=False) as opened:
        yield opened


@pytest.fixture(scope="module")
def resource_64mib(store):
    data = make_text(64, True).encode()[: 64 * 2**20]
    return store.write("bench", "c", data)


@pytest.fixture(scope="module")
def offsets(resource_64mib):
    """2,000 deterministic random page offsets, cycled."""
    rng = random.Random(11)
    return [rng.randrange(0, resource_64mib.size - PAGE) for _ in range(2000)]


# ------------------------------------------------------------ goal 1: warm pages
def test_random_page_read(benchmark, implementation, store, resource_64mib, offsets):
    benchmark.group = "50 KB page at random offsets of 64 MiB (verified)"
    uri = resource_64mib.uri
    for offset in offsets:  # warm: record parsed, map open, pages faulted in
        store.read("bench", uri, offset=offset)
    cycle = itertools.cycle(offsets)
    page = benchmark(lambda: store.read("bench", uri, offset=next(cycle)))
    assert len(page.content.encode()) > PAGE - 4


def test_random_page_read_baseline_pread(benchmark, store, resource_64mib, offsets):
    benchmark.group = "50 KB page at random offsets of 64 MiB (verified)"
    fd = os.open(store.directory / f"{resource_64mib.id}.txt", os.O_RDONLY)
    try:
        for offset in offsets:
            os.pread(fd, PAGE, offset)
        cycle = itertools.cycle(offsets)
        benchmark(lambda: os.pread(fd, PAGE, next(cycle)).decode("utf-8", "replace"))
    finally:
        os.close(fd)


# ------------------------------------------------------------ goal 1 as perf_check.py judges it
# Issue 21: 80-byte ASCII log lines (most tool output) as well as mostly
# non-ASCII text, 2,000 pages at random offsets per round, the store and
# ``os.pread`` + ``decode`` alternating round by round (so a load spike hits
# both); the ratio of the medians is printed and kept in ``extra_info``.
_JUDGED_LINES = {"ascii": "".join(chr(97 + i % 26) for i in range(79)) + "\n",
                 "non-ascii": "row " + "é" * 20 + "中文字符" * 5 + "\n"}


@pytest.mark.parametrize("text", list(_JUDGED_LINES))
def test_page_read_alternating_with_pread(benchmark, implementation, store, text, request):
    from conftest import report_ratio

    benchmark.group = "issue 21 goal 1: 50 KB verified page vs pread + decode, alternating"
    line = _JUDGED_LINES[text]
    resource = store.write("bench", f"judged-{text}", line * (64 * 2**20 // len(line.encode())))
    rng = random.Random(7)
    offsets = [rng.randrange(0, resource.size - PAGE) for _ in range(2000)]
    fd = os.open(store.directory / f"{resource.id}.txt", os.O_RDONLY)
    baseline: list[float] = []

    def pread_round() -> None:
        start = time.perf_counter()
        for offset in offsets:
            os.pread(fd, PAGE, offset).decode("utf-8", "replace")
        baseline.append(time.perf_counter() - start)

    def store_round() -> None:
        for offset in offsets:
            store.read("bench", resource.uri, offset=offset, limit=PAGE)

    try:
        store_round()
        pread_round()
        baseline.clear()
        benchmark.pedantic(store_round, setup=pread_round, rounds=7, iterations=1)
    finally:
        os.close(fd)
    report_ratio(benchmark, request, statistics.median(baseline), "pread + decode alternating with it",
                 "baseline_median_s")


# ------------------------------------------------------------ goal 2: cold first read
def test_first_read_by_a_cold_store(benchmark, implementation, folder, resource_64mib, offsets):
    benchmark.group = "first read by a cold store vs a warm read"
    opened: list[ToolOutputStore] = []

    def setup():
        while opened:
            opened.pop().close()
        opened.append(ToolOutputStore(folder, durable=False))  # construction is not timed

    offset = offsets[0]
    benchmark.pedantic(lambda: opened[-1].read("bench", resource_64mib.uri, offset=offset),
                       setup=setup, rounds=300, warmup_rounds=5)
    while opened:
        opened.pop().close()


def test_first_read_kernels_alone(benchmark, implementation, folder, resource_64mib, offsets):
    """What the store's layers add to a first read: the same kernel calls (record
    read and parsed; window read, verified and paged by ``read_page``) with nothing around them."""
    benchmark.group = "first read by a cold store vs a warm read"
    managed = ToolOutputStore(folder, durable=False).directory
    resource_id = resource_64mib.uri.split("//")[1]
    record_path, payload_path = f"{managed}/{resource_id}.json", f"{managed}/{resource_id}.txt"
    offset = offsets[0]
    size = resource_64mib.size

    def first_read():
        fd, _, data = _kernels.read_regular(record_path, 0, 1 << 26, 1 << 26)
        fields = _kernels.record_fields(data, resource_id)
        chunk, sums = fields[7], fields[6]
        low, high = offset - 8, min(offset + PAGE + 8, size)
        base, stop = low - low % chunk, min(-(-high // chunk) * chunk + 1, size)
        window_fd, _, found = _kernels.read_page(payload_path, base, stop - base, size, low, high, offset, PAGE, 0,
                                                 16, sums, chunk)
        os.close(fd)
        os.close(window_fd)
        return found

    assert first_read()[2] == ToolOutputStore(folder, durable=False).read("bench", resource_64mib.uri,
                                                                          offset=offset).content
    benchmark.pedantic(first_read, rounds=300, warmup_rounds=5)


def test_first_read_baseline_warm_read(benchmark, store, resource_64mib, offsets):
    benchmark.group = "first read by a cold store vs a warm read"
    offset = offsets[0]
    store.read("bench", resource_64mib.uri, offset=offset)
    benchmark.pedantic(lambda: store.read("bench", resource_64mib.uri, offset=offset), rounds=300,
                       warmup_rounds=5)


# ------------------------------------------------------------ a cold read's record parse
@pytest.fixture(scope="module", params=[1, 64], ids=["1MiB", "64MiB"])
def record_bytes(request, store):
    """A record as the store writes it, for a payload of 1 or 64 MiB (64 or 4,096 checksums)."""
    written = store.write("bench", "c", make_text(request.param, True).encode()[: request.param * 2**20])
    resource_id = written.uri.split("//")[1]
    return resource_id, (store.directory / f"{resource_id}.json").read_bytes()


def test_record_parse(benchmark, implementation, record_bytes):
    """``record_fields`` (a cold read's parse of its record, hex checksums included)."""
    resource_id, data = record_bytes
    benchmark.group = f"record parse, {len(data)} bytes"
    assert _kernels.record_fields(data, resource_id) is not None
    benchmark(_kernels.record_fields, data, resource_id)


def test_record_parse_baseline_json(benchmark, record_bytes):
    """The obvious Python: json.loads, then the checksums' bytes.fromhex."""
    import json

    resource_id, data = record_bytes
    benchmark.group = f"record parse, {len(data)} bytes"
    benchmark(lambda: bytes.fromhex(json.loads(data)["checksums"]["values"]))


# ------------------------------------------------------------ goal 5: read --all streams
STREAM_MIB = int(os.environ.get("OVERSPILL_BENCH_STREAM_MIB", "500"))


@pytest.fixture(scope="module")
def resource_500mb(store):
    block = make_text(1, False).encode()
    resource = store.write_stream("bench", "c", (block for _ in range(STREAM_MIB * 2**20 // len(block))))
    os.sync()  # untimed: no writeback of these 500 MB during the timed rounds
    return resource


PEAK_PROBE = r"""
import os, subprocess, sys
child = subprocess.Popen([sys.argv[1], "read", sys.argv[2], "--all"], stdout=subprocess.PIPE)
total = 0
while block := child.stdout.read(1 << 20):
    total += len(block)
_, status, usage = os.wait4(child.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss, total)
"""


def _environment(base: dict[str, str], folder: Path, implementation: str) -> dict[str, str]:
    return {**base, "OVERSPILL_DATA_DIR": str(folder), "OVERSPILL_SESSION": "bench",
            "OVERSPILL_IMPLEMENTATION": implementation}


def test_read_all_head(benchmark, implementation, folder, resource_500mb, bytecode_environment, request):
    benchmark.group = "read --all | head -c 10 of 500 MB"
    command = f"'{SCRIPT}' read {resource_500mb.uri} --all | head -c 10 > /dev/null"
    path = folder / "tool-output" / "managed" / f"{resource_500mb.id}.txt"
    baseline = f"'{sys.executable}' -c pass; head -c 10 '{path}' > /dev/null"
    env = _environment(bytecode_environment, folder, implementation)
    time_alternating(benchmark, ["sh", "-c", command], ["sh", "-c", baseline], env, request, rounds=30)
    # Peak memory of a whole read --all to a pipe, whatever the size, measured
    # from a small probe process: a child's peak counts what it had before exec,
    # so it must not be forked from this (large) benchmark process.
    probe = subprocess.run([sys.executable, "-c", PEAK_PROBE, str(SCRIPT), resource_500mb.uri], env=env,
                           capture_output=True, text=True, check=True)
    status, peak_kib, total = map(int, probe.stdout.split())
    assert status == 0 and total == resource_500mb.size
    benchmark.extra_info["read_all_peak_rss_mib"] = round(peak_kib / 1024, 1)
