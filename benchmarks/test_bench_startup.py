"""Start-up benchmarks: a fresh interpreter importing overspill, and the
console script, against ``python -c pass`` in the same run.

Every case is a new process (``subprocess.run``), timed wall-clock from
spawn to exit.  Bytecode is cached in a temporary ``PYTHONPYCACHEPREFIX``
(warmed before timing) with ``PYTHONDONTWRITEBYTECODE`` cleared, as for an
installed package whose ``.pyc`` files pip wrote: without it every run
would compile overspill's sources and time the compiler.

Run: ``python -m pytest benchmarks/test_bench_startup.py --benchmark-only``;
the table's ``(x.xx)`` factors are the ratios to the baseline row.  As
issue 21 judges it, the interpreter should be a fresh virtual environment's
with only overspill installed (a development environment's ``.pth`` files
slow its ``python -c pass`` and flatter every ratio): set
``OVERSPILL_BENCH_PYTHON`` to it (``python -m venv /tmp/fresh &&
/tmp/fresh/bin/pip install . && OVERSPILL_BENCH_PYTHON=/tmp/fresh/bin/python
python -m pytest benchmarks/test_bench_startup.py --benchmark-only``).
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
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import time_alternating

ROUNDS = int(os.environ.get("OVERSPILL_BENCH_STARTUP_ROUNDS", "30"))
# The interpreter whose start-up is timed (see the module docstring).
PYTHON = os.environ.get("OVERSPILL_BENCH_PYTHON") or sys.executable
IMPLEMENTATIONS = ["cython", "python"]


def children_cpu_time() -> float:
    """Seconds of CPU used by this process's waited-for children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


CLOCK = children_cpu_time if os.environ.get("OVERSPILL_BENCH_STARTUP_CLOCK") == "cpu" else time.perf_counter
pytestmark = pytest.mark.benchmark(timer=CLOCK)


@pytest.fixture(scope="module")
def environment(bytecode_environment, tmp_path_factory) -> dict[str, str]:
    return {**bytecode_environment, "OVERSPILL_DATA_DIR": str(tmp_path_factory.mktemp("data"))}


def _console_script() -> str:
    """The installed ``overspill`` script beside this interpreter (as pip wrote it)."""
    script = Path(PYTHON).with_name("overspill")
    found = str(script) if script.exists() else shutil.which("overspill")
    if found is None:
        pytest.skip("the overspill console script is not installed")
    return found


BASELINE = [PYTHON, "-c", "pass"]


def _time(benchmark, command: list[str], env: dict[str, str], request) -> None:
    time_alternating(benchmark, command, BASELINE, env, request, ROUNDS, CLOCK)


def _with(env: dict[str, str], implementation: str) -> dict[str, str]:
    return {**env, "OVERSPILL_IMPLEMENTATION": implementation}


# ------------------------------------------------------------ import overspill
def test_import_baseline_pass(benchmark, environment, request):
    benchmark.group = "import overspill"
    _time(benchmark, BASELINE, environment, request)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_import_overspill(benchmark, environment, implementation, request):
    benchmark.group = "import overspill"
    _time(benchmark, [PYTHON, "-c", "import overspill"], _with(environment, implementation), request)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_import_overspill_and_its_store(benchmark, environment, implementation, request):
    # What a program that uses the store pays (the package may load its names on first use).
    benchmark.group = "import overspill"
    _time(benchmark, [PYTHON, "-c", "import overspill; overspill.ToolOutputStore"],
          _with(environment, implementation), request)


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


def test_cli_import_re(benchmark, environment, request):
    # What pip's console-script template would add to the two rows above (it
    # imports ``re`` before overspill.cli): why ``overspill`` is our own
    # launcher, scripts/overspill, which imports only sys and the CLI.
    benchmark.group = "overspill --version / run -- true"
    _time(benchmark, [PYTHON, "-c", "import re"], environment, request)


# ------------------------------------------------------------ goal 5: read --all | head -c 10
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_cli_read_all_into_head(benchmark, environment, implementation, request, tmp_path_factory):
    """``overspill read URI --all | head -c 10`` of 300 MiB, as perf_check times it (the
    two processes of the pipeline, spawned directly), alternating with ``python -c pass``
    plus ``head -c 10 FILE``.  The reader's peak RSS is printed too: measured here
    from a small parent, it is the reader's own (see README: a parent's peak is
    carried into a child's ``ru_maxrss``)."""
    from conftest import report_ratio

    from overspill import ToolOutputStore

    benchmark.group = "issue 21 goal 5: read --all | head -c 10 of 300 MiB"
    env = {**_with(environment, implementation), "OVERSPILL_SESSION": "bench"}
    line = "".join(chr(97 + i % 26) for i in range(79)) + "\n"
    block = "".join(f"{i:07d} " + line[8:] for i in range(2**20 // 80)).encode()
    with ToolOutputStore(env["OVERSPILL_DATA_DIR"], durable=False) as store:
        huge = store.write_stream("bench", "huge", (block for _ in range(300)))
        path = str(store.directory / f"{huge.id}.txt")
    script = _console_script()
    baseline: list[float] = []
    peaks: list[float] = []

    def pipeline() -> None:
        reader = subprocess.Popen([script, "read", huge.uri, "--all"], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env=env)
        head = subprocess.Popen(["head", "-c", "10"], stdin=reader.stdout, stdout=subprocess.PIPE)
        reader.stdout.close()
        assert head.stdout.read() == block[:10]
        head.stdout.close()
        _, _, usage = os.wait4(reader.pid, 0)
        reader.returncode = 0
        head.wait()
        peaks.append(usage.ru_maxrss / 1024)

    def spawn_baseline() -> None:
        start = CLOCK()
        subprocess.run(BASELINE, env=env, stdout=subprocess.DEVNULL, check=True)
        subprocess.run(["head", "-c", "10", path], stdout=subprocess.DEVNULL, check=True)
        baseline.append(CLOCK() - start)

    pipeline()
    spawn_baseline()
    baseline.clear()
    benchmark.pedantic(pipeline, setup=spawn_baseline, rounds=min(ROUNDS, 15), iterations=1, warmup_rounds=1)
    benchmark.extra_info["peak_rss_mib"] = max(peaks)
    report_ratio(benchmark, request, statistics.median(baseline),
                 f"'python -c pass' + 'head -c 10 FILE' alternating with it (reader's peak RSS {max(peaks):.0f} MiB)",
                 "baseline_median_s")
