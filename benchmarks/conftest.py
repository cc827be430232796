"""Deterministic, realistic benchmark data, shared by the benchmark modules.

``OVERSPILL_BENCH_MIB`` sets the size of the large inputs (256 by default).
Each input is built once per session from a seeded generator: log-like
80-character lines, in an ASCII variant and a variant with about 30 % CJK
and emoji characters.
"""

from __future__ import annotations

import mmap
import os
import random
import statistics
import subprocess
import time
from typing import Callable

import pytest

LARGE_MIB = int(os.environ.get("OVERSPILL_BENCH_MIB", "256"))
_WORDS = ["error", "warning", "compiling", "module", "test_case", "passed", "failed", "src/app.py",
          "0x7f3a", "GET", "/api/v1/items", "200", "latency=12ms", "retry", "connection", "timeout"]
_WIDE = ["中文", "日本語", "한국어", "测试", "通过", "失败", "😀", "🚀", "✅", "❌"]


def _lines(rng: random.Random, wide: bool) -> str:
    lines = []
    for number in range(20_000):
        words, size = [f"{number:06d}"], 6
        while size < 73:
            word = rng.choice(_WIDE) if wide and rng.random() < 0.3 else rng.choice(_WORDS)
            words.append(word)
            size += len(word) + 1
        lines.append(" ".join(words)[:79])
    return "\n".join(lines) + "\n"


def make_text(mib: float, wide: bool) -> str:
    """About ``mib`` MiB (in UTF-8) of log-like text."""
    block = _lines(random.Random(7 if wide else 3), wide)
    block_size = len(block.encode())
    return block * max(1, round(mib * 2**20 / block_size))


@pytest.fixture(scope="session", params=["ascii", "cjk"])
def variant(request) -> str:
    return request.param


@pytest.fixture(scope="session")
def large_texts() -> dict[str, str]:
    return {"ascii": make_text(LARGE_MIB, False), "cjk": make_text(LARGE_MIB, True)}


@pytest.fixture(scope="session")
def large_bytes(large_texts) -> dict[str, bytes]:
    return {name: text.encode() for name, text in large_texts.items()}


@pytest.fixture(scope="session")
def large_maps(large_bytes, tmp_path_factory):
    maps, files = {}, []
    for name, data in large_bytes.items():
        path = tmp_path_factory.mktemp("bench") / f"{name}.txt"
        path.write_bytes(data)
        file = open(path, "rb")
        files.append(file)
        maps[name] = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    yield maps
    for view in maps.values():
        view.close()
    for file in files:
        file.close()


@pytest.fixture(scope="session")
def bytecode_environment(tmp_path_factory) -> dict[str, str]:
    """``os.environ`` for timing a fresh interpreter as an installed package
    runs: bytecode cached in a temporary ``PYTHONPYCACHEPREFIX``, with
    ``PYTHONDONTWRITEBYTECODE`` cleared (this machine sets it).  pip writes
    the ``.pyc`` files of a wheel it installs; without them every run would
    compile overspill's sources and time the compiler (about 30 ms here)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path_factory.mktemp("pycache"))
    return env


def time_alternating(benchmark, command: list[str], baseline_command: list[str], env: dict[str, str], request,
                     rounds: int, clock: Callable[[], float] = time.perf_counter) -> None:
    """Time ``command`` in fresh processes; before each round, untimed by the
    table, time ``baseline_command``, so that the two alternate and a load
    spike hits both alike.  The baseline's median and the ratio of the
    medians go into ``extra_info`` and are printed."""
    baseline: list[float] = []

    def spawn(command: list[str] = command) -> None:
        subprocess.run(command, env=env, stdout=subprocess.DEVNULL, check=True)

    def spawn_baseline() -> None:
        start = clock()
        spawn(baseline_command)
        baseline.append(clock() - start)

    spawn()  # writes the bytecode cache, warms the page cache
    spawn_baseline()
    baseline.clear()
    benchmark.pedantic(spawn, setup=spawn_baseline, rounds=rounds, iterations=1, warmup_rounds=1)
    report_ratio(benchmark, request, statistics.median(baseline), f"{' '.join(baseline_command)!r} alternating with it",
                 "baseline_median_s")


def report_ratio(benchmark, request, theirs: float, label: str, key: str, digits: int = 1) -> None:
    """Put the baseline's median (under ``key``) and the ratio of the medians
    into ``extra_info``, and print them beside the benchmark's own median."""
    ours = benchmark.stats.stats.median
    benchmark.extra_info.update({key: theirs, "ratio": ours / theirs})
    plugins = request.config.pluginmanager
    reporter, capture = plugins.getplugin("terminalreporter"), plugins.getplugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line(f"\n{request.node.name}: {ours * 1000:.{digits}f} ms; {label}: "
                                f"{theirs * 1000:.{digits}f} ms; ratio {ours / theirs:.2f}x")
