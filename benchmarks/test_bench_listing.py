"""Listing benchmark (issue 11, goal 7): listing one session of 100 resources
in a folder that also holds 100,000 of other sessions, against the same 100
alone, each by a fresh store in a fresh process (as ``overspill ls`` does).

Each round starts a new interpreter that opens the store and lists the
session; the child times the listing itself (opening the store included,
interpreter start and imports not) and reports it.  The table's times are
those reports: the benchmark's clock advances by what the child measured.

Rows: the store (index kept in ``data_dir/tool-output/index``), with the
compiled kernels and the twin; the old path (``LocalBackend`` without an
index, which reads every record); and the store right after another session
wrote one more pair (the folder changed, so the listing catches up: one
``listdir`` of the whole folder and one record read).

Run: ``python -m pytest benchmarks/test_bench_listing.py --benchmark-only``
(``OVERSPILL_BENCH_LIST_OTHERS=100000`` other resources by default; building
that folder takes from one minute to many on a busy machine, so
``OVERSPILL_BENCH_LIST_DATA=/some/dir`` keeps it between runs).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import report_ratio

from overspill import ToolOutputStore
from overspill.backends._index import RACY_NS

OTHERS = int(os.environ.get("OVERSPILL_BENCH_LIST_OTHERS", "100000"))
SESSION_SIZE = 100
ROUNDS = int(os.environ.get("OVERSPILL_BENCH_LIST_ROUNDS", "15"))

_elapsed = 0.0


def child_clock() -> float:
    """The benchmark's clock: the sum of the listing times children reported."""
    return _elapsed


pytestmark = pytest.mark.benchmark(timer=child_clock)

CHILD = r"""
import sys, time
from pathlib import Path
mode, data, session = sys.argv[1:]
from overspill import ToolOutputStore
from overspill.backends.local import LocalBackend
start = time.perf_counter()
if mode == "store":
    records = ToolOutputStore(data).records(session)
else:
    records = LocalBackend(Path(data) / "tool-output" / "managed").records(session)
print(time.perf_counter() - start, len(records))
"""


def _fill(data: Path, others: int) -> None:
    with ToolOutputStore(data, durable=False) as store:
        for number in range(others):
            store.write(f"other-{number % 1000}", f"call-{number}", b"an output of another session\n" * 4)
        for number in range(SESSION_SIZE):
            store.write("target", f"call-{number}", b"an output of the listed session\n" * 4)


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    alone = tmp_path_factory.mktemp("alone")
    _fill(alone, 0)
    kept = os.environ.get("OVERSPILL_BENCH_LIST_DATA")
    if kept:
        # A crowded folder kept between runs (building it is most of the time).
        crowded = Path(kept)
        marker = crowded / f"bench-listing-{OTHERS}"
        if not marker.exists():
            _fill(crowded, OTHERS)
            marker.touch()
    else:
        crowded = tmp_path_factory.mktemp("crowded")
        _fill(crowded, OTHERS)
    time.sleep(RACY_NS / 1e9 + 0.1)  # the folders' times settle, so a catch-up can mark the index complete
    for data in (crowded, alone):
        _list("store", data, "cython")  # builds the index (reads every record once)
    return {"crowded": crowded, "alone": alone}


def _list(mode: str, data: Path, implementation: str) -> float:
    env = {**os.environ, "OVERSPILL_IMPLEMENTATION": implementation}
    result = subprocess.run([sys.executable, "-c", CHILD, mode, str(data), "target"], env=env,
                            capture_output=True, text=True, check=True, timeout=600)
    seconds, count = result.stdout.split()
    assert int(count) == SESSION_SIZE, result.stdout
    return float(seconds)


def _bench(benchmark, request, mode: str, data: Path, baseline: Path, implementation: str = "cython",
           setup=None, rounds: int = ROUNDS):
    """Before each timed listing, untimed by the table, list the session in
    the ``baseline`` folder with the store and time that too: the two
    alternate, so load from other processes hits both, and the ratio of
    their medians is printed."""
    alone: list[float] = []

    def listing() -> None:
        global _elapsed
        _elapsed += _list(mode, data, implementation)

    def before_each() -> None:
        if setup is not None:
            setup()
        alone.append(_list("store", baseline, implementation))

    benchmark.pedantic(listing, setup=before_each, rounds=rounds, iterations=1, warmup_rounds=1)
    report_ratio(benchmark, request, statistics.median(alone[1:]), "the 100 alone (store, alternating)",
                 "alone_median_s", digits=2)


@pytest.mark.parametrize("implementation", ["cython", "python"])
def test_list_session_in_crowded_folder(benchmark, request, folders, implementation):
    benchmark.group = "list a session of 100 (fresh process)"
    _bench(benchmark, request, "store", folders["crowded"], folders["alone"], implementation)


def test_list_session_alone(benchmark, request, folders):
    benchmark.group = "list a session of 100 (fresh process)"
    _bench(benchmark, request, "store", folders["alone"], folders["alone"])


def test_list_session_alone_without_index(benchmark, request, folders):
    benchmark.group = "list a session of 100 (fresh process)"
    _bench(benchmark, request, "backend", folders["alone"], folders["alone"])


def test_list_session_in_crowded_folder_without_index(benchmark, request, folders):
    benchmark.group = "list a session of 100 (fresh process)"
    _bench(benchmark, request, "backend", folders["crowded"], folders["alone"], rounds=3)


def test_list_session_after_another_session_wrote(benchmark, request, folders):
    benchmark.group = "list a session of 100 (fresh process)"
    store = ToolOutputStore(folders["crowded"], durable=False)
    counter = iter(range(10**9))

    def another_write() -> None:
        store.write("other-busy", f"late-{next(counter)}", b"a late output\n")

    try:
        _bench(benchmark, request, "store", folders["crowded"], folders["alone"], setup=another_write)
    finally:
        store.close()
