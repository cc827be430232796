"""Framework adapters: the time a bounded tool call adds over the unwrapped call (issue 18).

For each framework, one tool call as the framework makes it, returning a 1 KB
result (under the limits: passes untouched) and a 10 MB one (stored whole,
``durable=False`` as the other store benchmarks, preview returned).  The
unwrapped call is timed in the same test, right before, as the baseline; the
added time is the difference of the medians.

- OpenAI Agents SDK: ``await tool.on_invoke_tool(ctx, "{}")`` of an async tool, the bound copy vs the tool;
- LangChain: the middleware's ``wrap_tool_call`` around a handler that runs
  ``tool.invoke(tool_call)``, vs the handler alone;
- PydanticAI: the tool function then the capability's ``after_tool_execute``,
  vs the function then a capability that changes nothing;
- smolagents: ``tool(sanitize_inputs_outputs=True)`` as the agent calls it, the bound tool vs the tool.

Run: ``python -m pytest benchmarks/test_bench_adapters.py --benchmark-only``.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any, Callable

import pytest
from conftest import make_text

from overspill import ToolOutputStore, _kernels

SIZES = {"1KB": 1024, "10MB": 10 * 2**20}
BASELINE_ROUNDS = {"1KB": 2000, "10MB": 15}
OURS_ROUNDS = {"1KB": None, "10MB": 15}  # None: pytest-benchmark calibrates


@pytest.fixture(scope="module")
def results() -> dict[str, str]:
    text = make_text(10, False)
    return {name: text[:size] for name, size in SIZES.items()}


@pytest.fixture(params=["cython", "python"])
def implementation(request):
    previous = _kernels.IMPLEMENTATION
    _kernels.use(request.param)
    yield request.param
    _kernels.use(previous)


@pytest.fixture
def store(tmp_path):
    with ToolOutputStore(tmp_path / "store", durable=False) as opened:
        yield opened


def _median(call: Callable[[], Any], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(benchmark, request, size: str, unwrapped: Callable[[], Any], bounded: Callable[[], Any],
            store: ToolOutputStore, result: str) -> None:
    """Benchmark ``bounded``; time ``unwrapped`` before it; record and print the added time, and,
    for the large result, what ``store.truncate`` of it alone takes (the floor of any bounding)."""
    first = bounded()
    assert ("tool-output://" in str(first)) == (size == "10MB")
    unwrapped()
    baseline = _median(unwrapped, BASELINE_ROUNDS[size])
    calls = iter(range(10**9))
    alone = _median(lambda: store.truncate("bench", f"alone-{next(calls)}", result), BASELINE_ROUNDS[size])
    if OURS_ROUNDS[size] is None:
        benchmark(bounded)
    else:
        benchmark.pedantic(bounded, rounds=OURS_ROUNDS[size], iterations=1, warmup_rounds=1)
    ours = benchmark.stats.stats.median
    benchmark.extra_info.update({"unwrapped": baseline, "added": ours - baseline, "truncate_alone": alone})
    plugins = request.config.pluginmanager
    reporter, capture = plugins.getplugin("terminalreporter"), plugins.getplugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line(f"\n{request.node.name}: bounded {ours * 1e6:.1f} µs, unwrapped {baseline * 1e6:.1f} µs, "
                                f"added {(ours - baseline) * 1e6:.1f} µs; store.truncate alone {alone * 1e6:.1f} µs")


@pytest.mark.parametrize("size", list(SIZES))
def test_openai_agents(benchmark, request, implementation, store, results, size):
    agents = pytest.importorskip("agents")
    from agents.tool_context import ToolContext

    from overspill.adapters.openai_agents import bound

    result = results[size]

    # An async tool: the SDK runs a sync one on a worker thread, whose hop (50-100 µs, very noisy
    # on a loaded machine) would swamp the difference measured here.
    @agents.function_tool
    async def output() -> str:
        """Return the result."""
        return result

    (wrapped, _, _) = bound([output], store)
    context = ToolContext(context=None, tool_name="output", tool_call_id="call-1", tool_arguments="{}")
    loop = asyncio.new_event_loop()
    try:
        measure(benchmark, request, size, lambda: loop.run_until_complete(output.on_invoke_tool(context, "{}")),
                lambda: loop.run_until_complete(wrapped.on_invoke_tool(context, "{}")), store, result)
    finally:
        loop.close()


@pytest.mark.parametrize("size", list(SIZES))
def test_langchain(benchmark, request, implementation, store, results, size):
    pytest.importorskip("langchain.agents")
    from langchain_core.tools import tool
    from langgraph.prebuilt.tool_node import ToolCallRequest

    from overspill.adapters.langchain import middleware

    result = results[size]

    @tool
    def output() -> str:
        """Return the result."""
        return result

    bounding = middleware(store)
    request_ = ToolCallRequest(tool_call={"name": "output", "args": {}, "id": "call-1", "type": "tool_call"},
                               tool=output, state={"messages": [], "overspill_session": "bench"}, runtime=None)

    def handler(call: Any) -> Any:
        return call.tool.invoke(call.tool_call)

    measure(benchmark, request, size, lambda: handler(request_),
            lambda: bounding.wrap_tool_call(request_, handler), store, result)


@pytest.mark.parametrize("size", list(SIZES))
def test_pydantic_ai(benchmark, request, implementation, store, results, size):
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import RunContext
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import ToolCallPart
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai.usage import RunUsage

    from overspill.adapters.pydantic_ai import capability

    result = results[size]

    def output() -> str:
        return result

    class Unchanged(AbstractCapability[Any]):
        pass

    context = RunContext(deps=None, model=TestModel(), usage=RunUsage(), run_id="run", conversation_id="bench")
    call = ToolCallPart("output", {}, tool_call_id="call-1")
    definition = ToolDefinition(name="output")
    loop = asyncio.new_event_loop()

    def through(hooks: AbstractCapability[Any]) -> Callable[[], Any]:
        return lambda: loop.run_until_complete(
            hooks.after_tool_execute(context, call=call, tool_def=definition, args={}, result=output()))

    try:
        measure(benchmark, request, size, through(Unchanged()), through(capability(store)), store, result)
    finally:
        loop.close()


@pytest.mark.parametrize("size", list(SIZES))
def test_smolagents(benchmark, request, implementation, store, results, size):
    pytest.importorskip("smolagents")
    from smolagents import tool

    from overspill.adapters.smolagents import bound

    result = results[size]

    @tool
    def output() -> str:
        """Return the result."""
        return result

    (wrapped, _, _) = bound([output], store)
    measure(benchmark, request, size, lambda: output(sanitize_inputs_outputs=True),
            lambda: wrapped(sanitize_inputs_outputs=True), store, result)
