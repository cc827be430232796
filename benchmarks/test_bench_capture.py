"""Capture benchmarks: ``run`` of a command printing 1 GiB against draining the
same pipe with plain ``os.read`` and against ``subprocess.run(capture_output=True)``;
peak memory of each (and of ``truncate_stream`` of 1 GiB) measured in a child
process and attached to the results as ``extra_info``.

Run: ``python -m pytest benchmarks/test_bench_capture.py --benchmark-only``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from overspill import _kernels, run

GIB_BLOCKS = int(os.environ.get("OVERSPILL_BENCH_CAPTURE_MIB", "1024"))
PRODUCER = [sys.executable, "-c",
            "import os, sys\nblock = (b'0123456789 the quick brown fox jumps over the lazy dog\\n' * 20000)[: 1 << 20]\n"
            f"for _ in range({GIB_BLOCKS}): os.write(1, block)"]


def drain_with_os_read() -> int:
    child = subprocess.Popen(PRODUCER, stdout=subprocess.PIPE, bufsize=0)
    total = 0
    while chunk := os.read(child.stdout.fileno(), 1 << 20):
        total += len(chunk)
    child.wait()
    child.stdout.close()
    return total


def overspill_run() -> int:
    return run(PRODUCER).stdout_bytes


def subprocess_capture() -> int:
    return len(subprocess.run(PRODUCER, capture_output=True).stdout)


VARIANTS = {"baseline-os.read": drain_with_os_read, "overspill.run": overspill_run,
            "subprocess.run-capture": subprocess_capture}

MEMORY_PROBE = """
import json, resource, sys, tempfile
sys.path.insert(0, {here!r})
import overspill, test_bench_capture as bench
overspill._kernels.use({implementation!r})
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if {variant!r} == "truncate_stream":
    store = overspill.ToolOutputStore(tempfile.mkdtemp(), durable=False)
    block = (b"0123456789 the quick brown fox jumps over the lazy dog\\n" * 20000)[: 1 << 20]
    result = store.truncate_stream("s", "c", (block for _ in range(bench.GIB_BLOCKS)))
    assert result.resource.size == bench.GIB_BLOCKS << 20
else:
    assert bench.VARIANTS[{variant!r}]() == bench.GIB_BLOCKS << 20
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"peak_growth_mib": round((after - before) / 1024, 1)}}))
"""


def peak_growth(variant: str, implementation: str = "cython") -> float:
    code = MEMORY_PROBE.format(here=os.path.dirname(__file__), variant=variant, implementation=implementation)
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=1200)
    assert child.returncode == 0, child.stderr
    return json.loads(child.stdout)["peak_growth_mib"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_capture_1gib(benchmark, variant):
    benchmark.group = f"capture {GIB_BLOCKS} MiB from a pipe"
    benchmark.extra_info["peak_growth_mib"] = peak_growth(variant)
    assert benchmark.pedantic(VARIANTS[variant], rounds=3, warmup_rounds=0) == GIB_BLOCKS << 20


@pytest.mark.parametrize("implementation", ["cython", "python"])
def test_run_1gib_by_implementation(benchmark, implementation):
    benchmark.group = f"overspill.run {GIB_BLOCKS} MiB by implementation"
    previous = _kernels.IMPLEMENTATION
    _kernels.use(implementation)
    try:
        benchmark.extra_info["peak_growth_mib"] = peak_growth("overspill.run", implementation)
        assert benchmark.pedantic(overspill_run, rounds=3, warmup_rounds=0) == GIB_BLOCKS << 20
    finally:
        _kernels.use(previous)


def test_truncate_stream_1gib_memory(benchmark):
    benchmark.group = f"truncate_stream {GIB_BLOCKS} MiB"
    growth = peak_growth("truncate_stream")
    benchmark.extra_info["peak_growth_mib"] = growth
    benchmark.pedantic(lambda: growth, rounds=1)
    assert growth < 64
