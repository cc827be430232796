"""Start-up benchmarks: a fresh interpreter importing overspill, and the
console script, against ``python -c pass`` in the same run.

Every case is a new process (``subprocess.run``), timed wall-clock from
spawn to exit.  Bytecode is cached in a temporary ``PYTHONPYCACHEPREFIX``
(warmed before timing) with ``PYTHONDONTWRITEBYTECODE`` cleared, as for an
installed package whose ``.pyc`` files pip wrote: without it every run
would compile overspill's sources and time the compiler.

Run: ``python -m pytest benchmarks/test_bench_startup.py --benchmark-only``;
the table's ``(x.xx)`` factors are the ratios to the baseline row.
``OVERSPILL_BENCH_STARTUP_CLOCK=cpu`` times the children's CPU (user + system,
from ``getrusage``) instead of the wall clock: on a shared, loaded machine
that is the steadier of the two, and for these single-threaded start-ups the
two agree when the machine is idle.
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import time
import subprocess
import sys
from pathlib import Path

import pytest

ROUNDS = int(os.environ.get("OVERSPILL_BENCH_STARTUP_ROUNDS", "30"))
IMPLEMENTATIONS = ["cython", "python"]


def children_cpu_time() -> float:
    """Seconds of CPU used by this process's waited-for children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


CLOCK = children_cpu_time if os.environ.get("OVERSPILL_BENCH_STARTUP_CLOCK") == "cpu" else time.perf_counter
pytestmark = pytest.mark.benchmark(timer=CLOCK)


@pytest.fixture(scope="module")
def environment(tmp_path_factory) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path_factory.mktemp("pycache"))
    env["OVERSPILL_DATA_DIR"] = str(tmp_path_factory.mktemp("data"))
    return env


def _console_script() -> str:
    """The installed ``overspill`` script beside this interpreter (as pip wrote it)."""
    script = Path(sys.executable).with_name("overspill")
    found = str(script) if script.exists() else shutil.which("overspill")
    if found is None:
        pytest.skip("the overspill console script is not installed")
    return found


BASELINE = [sys.executable, "-c", "pass"]


def _time(benchmark, command: list[str], env: dict[str, str], request) -> None:
    """Time ``command``; before each round, untimed by the table, time the
    baseline, so that the two alternate and a load spike hits both alike."""
    baseline: list[float] = []

    def spawn(command: list[str] = command) -> None:
        subprocess.run(command, env=env, stdout=subprocess.DEVNULL, check=True)

    def spawn_baseline() -> None:
        start = CLOCK()
        spawn(BASELINE)
        baseline.append(CLOCK() - start)

    spawn()  # writes the bytecode cache, warms the page cache
    spawn_baseline()
    baseline.clear()
    benchmark.pedantic(spawn, setup=spawn_baseline, rounds=ROUNDS, iterations=1, warmup_rounds=1)
    ours, theirs = benchmark.stats.stats.median, statistics.median(baseline)
    benchmark.extra_info.update(baseline_median_s=theirs, ratio=ours / theirs)
    plugins = request.config.pluginmanager
    reporter, capture = plugins.getplugin("terminalreporter"), plugins.getplugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line(f"\n{request.node.name}: {ours * 1000:.1f} ms; `python -c pass` alternating "
                                f"with it: {theirs * 1000:.1f} ms; ratio {ours / theirs:.2f}x")


def _with(env: dict[str, str], implementation: str) -> dict[str, str]:
    return {**env, "OVERSPILL_IMPLEMENTATION": implementation}


# ------------------------------------------------------------ import overspill
def test_import_baseline_pass(benchmark, environment, request):
    benchmark.group = "import overspill"
    _time(benchmark, BASELINE, environment, request)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_import_overspill(benchmark, environment, implementation, request):
    benchmark.group = "import overspill"
    _time(benchmark, [sys.executable, "-c", "import overspill"], _with(environment, implementation), request)


# ------------------------------------------------------------ console script
def test_cli_baseline_pass(benchmark, environment, request):
    benchmark.group = "overspill --version / run -- true"
    _time(benchmark, BASELINE, environment, request)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_cli_version(benchmark, environment, implementation, request):
    benchmark.group = "overspill --version / run -- true"
    _time(benchmark, [_console_script(), "--version"], _with(environment, implementation), request)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_cli_run_true(benchmark, environment, implementation, request):
    benchmark.group = "overspill --version / run -- true"
    _time(benchmark, [_console_script(), "run", "--", "true"], _with(environment, implementation), request)
