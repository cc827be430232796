"""Views and signal lines: compiled, pure twin and ``re`` over bytes, on the same data.

The signal scan reads the whole omitted middle of a large output, so it is
measured on ``OVERSPILL_ECONOMY_MIB`` (1024 by default: 1 GiB) of a build
log with a few errors and warnings; the view on a coloured, redrawn output.

Run: ``python -m pytest benchmarks/test_bench_economy.py --benchmark-only``.
"""

from __future__ import annotations

import os
import random
import re

import pytest

from overspill import ToolOutputStore, _native, _speedups
from overspill.config import DEFAULT_SIGNALS
from overspill.text import compile_signals

MIB = int(os.environ.get("OVERSPILL_ECONOMY_MIB", "1024"))
PATTERNS = compile_signals(DEFAULT_SIGNALS)
# A GiB is slow for the twin and for re: one round of each is enough there.
ROUNDS = 1 if MIB >= 512 else 3
WARMUP = 0 if MIB >= 512 else 1
# The baseline: one regex of the same words, case-insensitive, over the bytes.
BASELINE = re.compile(rb"(?i:" + b"|".join(re.escape(p[3]) for p in PATTERNS if not p[1]) + rb")")


def run(benchmark, function, *args):
    return benchmark.pedantic(function, args=args, rounds=ROUNDS, iterations=1, warmup_rounds=WARMUP)


@pytest.fixture(scope="module")
def build_log() -> bytes:
    rng = random.Random(5)
    lines = []
    for number in range(40_000):
        unit = f"src/module_{rng.randint(1, 400)}/file_{number % 997}.c"
        lines.append(f"[{number:6d}/40000] gcc -O2 -Wall -c {unit} -o build/{unit[:-2]}.o -I include -DNDEBUG")
        if number % 9973 == 0:
            lines.append(f"{unit}:12:5: warning: unused variable 'tmp' [-Wunused-variable]")
    block = ("\n".join(lines) + "\n").encode()
    data = block * max(1, MIB * 2**20 // len(block))
    middle = len(data) // 2
    return data[:middle] + b"src/core/alloc.c:88:3: error: 'size' undeclared\n" + data[middle:]


@pytest.fixture(scope="module")
def coloured() -> bytes:
    rng = random.Random(9)
    lines = []
    for number in range(20_000):
        lines.append(f"\x1b[32mtests/test_{number % 300}.py::test_case_{number}\x1b[0m \x1b[1m\x1b[32mPASSED\x1b[0m"
                     f"\x1b[32m [{number // 200:3d}%]\x1b[0m")
        if number % 50 == 0:
            lines.append("".join(f"\r\x1b[2K{p:3d}% |{'#' * (p // 5):<20}|" for p in range(0, 101, rng.choice((5, 10)))))
    block = ("\r\n".join(lines) + "\r\n").encode()
    return block * max(1, 64 * 2**20 // len(block))


SCANNERS = {
    "cython": lambda data: _speedups.signal_lines(data, 0, len(data), PATTERNS, 3, 256)[1],
    "python": lambda data: _native.signal_lines(data, 0, len(data), PATTERNS, 3, 256)[1],
    "re over bytes": lambda data: sum(1 for _ in BASELINE.finditer(data)),
}


@pytest.mark.parametrize("scanner", SCANNERS)
def test_signal_scan(benchmark, scanner, build_log):
    benchmark.group = f"signal scan, build log, {len(build_log) >> 20} MiB"
    assert run(benchmark, SCANNERS[scanner], build_log)


VIEWERS = {
    "cython": lambda data: _speedups.view_bytes(data, 3),
    "python": lambda data: _native.view_bytes(data, 3),
    "re.sub of CSI": lambda data: re.sub(rb"\x1b\[[0-?]*[ -/]*[@-~]", b"", data),
}


@pytest.mark.parametrize("viewer", VIEWERS)
def test_view(benchmark, viewer, coloured):
    benchmark.group = f"view, coloured output with redraws, {len(coloured) >> 20} MiB"
    assert len(run(benchmark, VIEWERS[viewer], coloured)) < len(coloured)


@pytest.mark.parametrize("setting", ["defaults", "raw (no views, no signals)"])
def test_truncate_of_the_build_log(benchmark, setting, build_log, tmp_path_factory):
    benchmark.group = f"truncate of {len(build_log) >> 20} MiB bytes, durable=False"
    config = None if setting == "defaults" else {"tool_output": {"views": [], "signals": []}}
    store = ToolOutputStore(tmp_path_factory.mktemp("economy"), durable=False, config=config)
    result = run(benchmark, store.truncate, "s", "c", build_log)
    assert result.truncated and (setting != "defaults" or "error: 'size' undeclared" in result.content)
    store.cleanup(now=10**11)


# ---------------------------------------------------------------- outline scan
# The outline reads the whole omitted middle too: a listing (find-like paths,
# runs by prefix at 8 levels) and a JSON document (the streaming structure scan).
@pytest.fixture(scope="module")
def listing() -> bytes:
    rng = random.Random(11)
    rows = []
    for package in range(400):
        for number in range(60):
            rows.append(f"/usr/share/doc/package-{package}/sub{number % 7}/file_{rng.randint(1, 99999)}.txt")
    block = ("\n".join(rows) + "\n").encode()
    return block * max(1, MIB * 2**20 // len(block))


@pytest.fixture(scope="module")
def document() -> bytes:
    rng = random.Random(13)
    items = ",\n".join(
        f'    {{"metadata": {{"name": "package-{n}", "version": "{rng.randint(0, 9)}.{rng.randint(0, 99)}"}}, '
        f'"files": [{", ".join(str(rng.randint(0, 10**6)) for _ in range(12))}], "requested": true}}'
        for n in range(20_000))
    body = items.encode()
    copies = max(1, MIB * 2**20 // len(body))
    return b'{"version": "1", "installed": [\n' + b",\n".join([body] * copies) + b'\n], "environment": {}}\n'


def outline_listing(kernels, data: bytes) -> int:
    # Blocks as views, as overspill._outline passes them (the scan reads the stored bytes in place).
    block = 8 << 20
    section = b""
    runs = 0
    view = memoryview(data)
    for start in range(0, len(data), block):
        chunk = view[start : start + block]
        found = kernels.outline_lines(chunk, 0, len(chunk), section, 8, 512, 64)
        section = found[4]
        runs += len(found[0][0] or ())
    return runs


def outline_json(kernels, data: bytes) -> int:
    scanner = kernels.JsonOutline(1 << 16, len(data) - (1 << 16), 4, 64, 2048)
    view = memoryview(data)
    for start in range(0, len(data), 8 << 20):
        scanner.feed(view[start : start + (8 << 20)])
    return len(scanner.result()[2])


PREFIX = re.compile(rb"^(/[^/\n]*/[^/\n]*/[^/\n]*)", re.M)
OUTLINERS = {
    "cython": lambda data: outline_listing(_speedups, data),
    "python": lambda data: outline_listing(_native, data),
    "re over bytes (3-level prefixes only)": lambda data: sum(1 for _ in PREFIX.finditer(data)),
}


@pytest.mark.parametrize("outliner", OUTLINERS)
def test_outline_scan_listing(benchmark, outliner, listing):
    benchmark.group = f"outline scan, listing, {len(listing) >> 20} MiB"
    assert run(benchmark, OUTLINERS[outliner], listing)


JSON_OUTLINERS = {
    "cython": lambda data: outline_json(_speedups, data),
    "python": lambda data: outline_json(_native, data),
    "json.loads (a full parse, in memory)": lambda data: len(__import__("json").loads(data)["installed"]),
}


@pytest.mark.parametrize("outliner", JSON_OUTLINERS)
def test_outline_scan_json(benchmark, outliner, document):
    if outliner.startswith("json.loads") and MIB > 256:
        pytest.skip("a full parse of this size takes several times its size in memory")
    benchmark.group = f"outline scan, JSON, {len(document) >> 20} MiB"
    assert run(benchmark, JSON_OUTLINERS[outliner], document)
