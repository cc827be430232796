"""Kernel benchmarks: compiled, pure twin and a baseline on the same data, one run.

Run: ``python -m pytest benchmarks/test_bench_kernels.py --benchmark-only``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import LARGE_MIB, make_text

from overspill import _native, _speedups
from overspill.text import Preview

IMPLEMENTATIONS = {"cython": _speedups, "python": _native}
ROUNDS = 5


def run(benchmark, function, *args):
    return benchmark.pedantic(function, args=args, rounds=ROUNDS, iterations=1, warmup_rounds=1)


# ------------------------------------------------------------------ count_lines
COUNTERS = {
    "cython": _speedups.count_lines,
    "python": _native.count_lines,
    "builtin": lambda data: data.count("\n" if isinstance(data, str) else b"\n") + 1,
    "numpy": lambda data: int(np.count_nonzero(np.frombuffer(data, np.uint8) == 10)) + 1,
}


@pytest.mark.parametrize("counter", COUNTERS)
def test_count_lines_bytes(benchmark, counter, variant, large_bytes):
    benchmark.group = f"count_lines bytes {variant} {LARGE_MIB} MiB"
    data = large_bytes[variant]
    assert run(benchmark, COUNTERS[counter], data) == data.count(b"\n") + 1


@pytest.mark.parametrize("counter", ["cython", "python", "builtin"])
def test_count_lines_str(benchmark, counter, variant, large_texts):
    benchmark.group = f"count_lines str {variant} {LARGE_MIB} MiB"
    text = large_texts[variant]
    assert run(benchmark, COUNTERS[counter], text) == text.count("\n") + 1


MMAP_COUNTERS = {
    "cython": _speedups.count_lines,
    "python": _native.count_lines,
    # mmap has no count(): the obvious way copies it into bytes first.
    "builtin": lambda view: view[:].count(b"\n") + 1,
    "numpy": COUNTERS["numpy"],
}


@pytest.mark.parametrize("counter", MMAP_COUNTERS)
def test_count_lines_mmap(benchmark, counter, variant, large_maps, large_bytes):
    benchmark.group = f"count_lines mmap {variant} {LARGE_MIB} MiB"
    assert run(benchmark, MMAP_COUNTERS[counter], large_maps[variant]) == large_bytes[variant].count(b"\n") + 1


# ---------------------------------------------------------------------- preview
def obvious_preview(content, max_lines: int, max_bytes: int) -> tuple[str, str]:
    """What one writes without overspill: split, join, encode, cut, decode."""
    text = content if isinstance(content, str) else bytes(content).decode("utf-8", "replace")
    lines = text.split("\n")
    head = "\n".join(lines[: (max_lines + 1) // 2])
    tail = "\n".join(lines[len(lines) - max_lines // 2 :])
    head_bytes = head.encode("utf-8", "surrogateescape")[: (max_bytes + 1) // 2]
    tail_bytes = tail.encode("utf-8", "surrogateescape")[-(max_bytes // 2) :]
    return head_bytes.decode("utf-8", "ignore"), tail_bytes.decode("utf-8", "ignore")


def preview_with(module):
    def preview(content, max_lines, max_bytes):
        return module.preview_cuts(content, max_lines, max_bytes)

    return preview


PREVIEWERS = {"cython": preview_with(_speedups), "python": preview_with(_native), "obvious": obvious_preview}


@pytest.fixture(scope="session")
def small_inputs() -> dict[str, dict[str, object]]:
    texts = {"ascii": make_text(1, False), "cjk": make_text(1, True)}
    return {"str": texts, "bytes": {name: text.encode() for name, text in texts.items()}}


@pytest.mark.parametrize("previewer", PREVIEWERS)
@pytest.mark.parametrize("form", ["bytes", "str", "mmap"])
def test_preview_large(benchmark, previewer, form, variant, large_texts, large_bytes, large_maps):
    benchmark.group = f"preview {form} {variant} {LARGE_MIB} MiB"
    content = {"bytes": large_bytes, "str": large_texts, "mmap": large_maps}[form][variant]
    run(benchmark, PREVIEWERS[previewer], content, 2000, 50 * 1024)


@pytest.mark.parametrize("previewer", ["cython", "python"])
@pytest.mark.parametrize("form", ["bytes", "str"])
def test_preview_1mib(benchmark, previewer, form, variant, small_inputs):
    benchmark.group = f"preview {form} {variant} 1 MiB"
    benchmark(PREVIEWERS[previewer], small_inputs[form][variant], 2000, 50 * 1024)


# -------------------------------------------------------------------- StreamCap
PIPE_MIB = min(LARGE_MIB * 2, 512)
CHUNK = 1 << 20


_PRODUCER = (
    "import os, sys\n"
    "line = b'0123456789 the quick brown fox jumps over the lazy dog, again and again\\n'\n"
    "block = (line * (2**20 // len(line) + 1))[: 2**20]\n"
    "for _ in range(int(sys.argv[1])): os.write(1, block)\n"
)


def drain(cap_factory) -> int:
    """Read a child's stdout in 1 MiB reads; feed a StreamCap when given one."""
    child = subprocess.Popen([sys.executable, "-c", _PRODUCER, str(PIPE_MIB)], stdout=subprocess.PIPE, bufsize=0)
    fd = child.stdout.fileno()
    if hasattr(fcntl, "F_SETPIPE_SZ"):
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, CHUNK)
    cap = cap_factory() if cap_factory else None
    total = 0
    while chunk := os.read(fd, CHUNK):
        total += len(chunk)
        if cap is not None:
            cap.feed(chunk)
    child.wait()
    child.stdout.close()
    return total


FEEDERS = {
    "baseline-read-only": None,
    "cython": lambda: _speedups.StreamCap(1 << 20, keep="head_tail"),
    "python": lambda: _native.StreamCap(1 << 20, keep="head_tail"),
}


@pytest.mark.parametrize("feeder", FEEDERS)
def test_stream_cap_pipe(benchmark, feeder):
    benchmark.group = f"StreamCap.feed from a pipe, {PIPE_MIB} MiB"
    assert run(benchmark, drain, FEEDERS[feeder]) == PIPE_MIB * 2**20
