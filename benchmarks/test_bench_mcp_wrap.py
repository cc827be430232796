"""``overspill mcp --wrap`` as a client sees it: the SDK's own client over stdio calls
the test upstream (``tests/mcp_upstream_server.py``) directly and through the
wrapper (the installed console script, a durable store in a temporary folder),
alternating round by round so a load spike hits both alike.

- a small result (passed through untouched): the wrapper's added latency; the
  goal is at most 1.2x the direct call plus 2 ms;
- a 10 MiB result: the direct call returns all of it, the wrapped one stores it
  (fsynced) and returns the preview; the goal is no slower than the direct call
  plus writing 10 MiB durably (timed here too), and the wrapper's peak memory
  growth (VmHWM over its RSS before the first large call) under 3x the result.

Run: ``python -m pytest benchmarks/test_bench_mcp_wrap.py --benchmark-only``
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import pytest
from conftest import report_ratio

pytest.importorskip("mcp")

from anyio.from_thread import start_blocking_portal  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

UPSTREAM = str(Path(__file__).parents[1] / "tests" / "mcp_upstream_server.py")
SCRIPT = str(Path(sys.executable).with_name("overspill"))
UNIT = "0123456789abcdef" * 4 + "\n"  # 65 bytes
LARGE = {"unit": UNIT, "count": 10 * 2**20 // len(UNIT)}


@pytest.fixture(scope="module")
def clients(tmp_path_factory):
    data = tmp_path_factory.mktemp("wrap-bench")
    env = dict(os.environ)
    direct = StdioServerParameters(command=sys.executable, args=[UPSTREAM], env=env)
    wrapped = StdioServerParameters(command=SCRIPT, env=env, args=[
        "mcp", "--data-dir", str(data / "store"), "--wrap", "--", sys.executable, UPSTREAM])
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(Client(direct, mode="legacy")) as plain, \
                portal.wrap_async_context_manager(Client(wrapped, mode="legacy")) as through:
            yield portal, plain, through, data


def call(portal, client, arguments):
    return portal.call(client.call_tool, "text", arguments)


def memory(pid: int) -> dict[str, int]:
    with open(f"/proc/{pid}/status") as status:
        return {line.split(":")[0]: int(line.split()[1]) for line in status if line.startswith(("VmRSS", "VmHWM"))}


def test_small_call_wrapped_vs_direct(benchmark, clients, request):
    portal, plain, through, _ = clients
    small = {"unit": "a small result"}
    direct: list[float] = []

    def baseline() -> None:
        start = time.perf_counter()
        call(portal, plain, small)
        direct.append(time.perf_counter() - start)

    for _ in range(20):  # warm both (imports, caches)
        baseline()
        call(portal, through, small)
    direct.clear()
    benchmark.pedantic(call, args=(portal, through, small), setup=baseline, rounds=300, iterations=1)
    theirs = statistics.median(direct)
    report_ratio(benchmark, request, theirs, "the same call direct, alternating", "direct_median_s", digits=2)
    goal = 1.2 * theirs + 0.002
    ours = benchmark.stats.stats.median
    benchmark.extra_info.update(goal_s=goal, goal_met=ours <= goal)
    plugins = request.config.pluginmanager
    reporter, capture = plugins.getplugin("terminalreporter"), plugins.getplugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line(f"goal 1.2x + 2 ms = {goal * 1000:.2f} ms: {'met' if ours <= goal else 'NOT met'}; "
                                f"added {1000 * (ours - theirs):.2f} ms")


def test_ten_mebibytes_wrapped_vs_direct(benchmark, clients, request):
    portal, plain, through, data = clients
    pid_text = portal.call(through.call_tool, "pid", {}).content[0].text
    wrapper = int(pid_text.split()[2])  # the upstream's parent is the wrapper
    before = memory(wrapper)["VmRSS"]
    direct: list[float] = []
    writes: list[float] = []
    payload = (UNIT * LARGE["count"]).encode()

    def baseline() -> None:
        start = time.perf_counter()
        result = call(portal, plain, LARGE)
        direct.append(time.perf_counter() - start)
        assert len(result.content[0].text) == len(payload)
        start = time.perf_counter()  # what storing it costs at disk speed: write and fsync, then remove
        path = data / "disk-speed"
        with open(path, "wb") as file:
            file.write(payload)
            file.flush()
            os.fsync(file.fileno())
        path.unlink()
        writes.append(time.perf_counter() - start)

    def wrapped() -> None:
        result = call(portal, through, LARGE)
        assert result.structured_content["size"] == len(payload)

    baseline()
    wrapped()
    direct.clear()
    writes.clear()
    benchmark.pedantic(wrapped, setup=baseline, rounds=8, iterations=1)
    theirs = statistics.median(direct) + statistics.median(writes)
    report_ratio(benchmark, request, theirs, "direct + a durable 10 MiB write, alternating", "direct_plus_write_s")
    grown = memory(wrapper)["VmHWM"] - before
    benchmark.extra_info.update(direct_median_s=statistics.median(direct), write_median_s=statistics.median(writes),
                                wrapper_peak_growth_kib=grown, result_kib=len(payload) // 1024,
                                peak_ratio=grown * 1024 / len(payload))
    plugins = request.config.pluginmanager
    reporter, capture = plugins.getplugin("terminalreporter"), plugins.getplugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line(f"wrapper peak memory growth: {grown} KiB, {grown * 1024 / len(payload):.2f}x "
                                f"the {len(payload) // 1024} KiB result; direct {statistics.median(direct) * 1000:.0f}"
                                f" ms, durable write {statistics.median(writes) * 1000:.0f} ms")
