"""The same-shape-run rule (``overspill.preview``'s ``runs``, ``overspill._runs``):
a naive reference, and ``truncate``'s head and tail as ``overspill.preview``
gives them (the compiled kernel against its twin: test_kernels_views.py)."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from strategies import contents, limits, run_texts

import overspill
from overspill import ToolOutputStore, _kernels
from overspill.text import RUN_KEEP, encode_content, line_slack


def stored(content: str | bytes) -> bytes:
    return encode_content(content)


def naive_trim(content: str | bytes, cuts: tuple[int, int, int, int], max_lines: int, keep: int
               ) -> tuple[int, int]:
    """The run rule as README states it, on whole lists of lines: the trimmed (head_end, tail_start)."""
    head_end, tail_start, head_index, tail_index = cuts
    if not keep or head_end >= tail_start:
        return head_end, tail_start
    newline = "\n" if isinstance(content, str) else b"\n"

    def shape(line):
        text = line if isinstance(line, str) else line.decode("utf-8", "replace")
        uuid = r"[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}(?![0-9a-f])"  # red team G14: a UUID is one number
        # review R21, 3: an uppercase one too, when no hex digit of either case is glued before it
        upper = r"(?<![0-9A-Fa-f])[0-9A-F]{8}(?:-[0-9A-F]{4}){3}-[0-9A-F]{12}(?![0-9A-F])"
        return re.sub(uuid + "|" + upper + r"|[0-9a-f]{7,}|[0-9]+", "#", text)

    head, tail = content[:head_index], content[tail_index:]
    if head.endswith(newline) and head.count(newline) < math.ceil(max_lines / 2):
        lines = head.split(newline)[:-1]
        run = 0
        while run < len(lines) and shape(lines[-1 - run]) == shape(lines[-1]):
            run += 1
        if run > 2 * keep:
            head = newline.join(lines[: len(lines) - run + keep]) + newline
    if tail and content[tail_index - 1 : tail_index] == newline:
        lines = (tail[:-1] if tail.endswith(newline) else tail).split(newline)
        run = 0
        while run < len(lines) and shape(lines[run]) == shape(lines[0]):
            run += 1
        if len(lines) < max_lines // 2 and run > 2 * keep:
            tail = newline.join(lines[run - keep :]) + (newline if tail.endswith(newline) else newline[:0])
    return len(stored(head)), len(stored(content)) - len(stored(tail))


@given(st.one_of(run_texts(), run_texts().map(str.encode)), st.integers(1, 60), st.integers(1, 600),
       st.integers(0, 40), st.integers(0, 4))
@example("a1\na2\na3\na4\na5\na6\nb\n", 100, 12, 10, 1)
@example("x\n" + "".join(f"n{i}\n" for i in range(30)), 100, 40, 20, 2)
# Red team G14: lines that differ only in a UUID are a run ("000a" in one is no letter of its shape);
# with a 13-digit last group the id is no UUID, and they are not.
@example("x\n" + "".join(f"id {i:08x}-{i:04x}-4abc-8def-{i:012x} ok\n" for i in range(10, 40)), 100, 600, 40, 2)
@example("x\n" + "".join(f"id {i:08x}-{i:04x}-4abc-8def-{i:013x} ok\n" for i in range(10, 40)), 100, 600, 40, 2)
# Review R21, 3: an uppercase UUID (SQL Server, Windows GUIDs) is one number too.
@example("x\n" + "".join(f"id {i:08X}-{i:04X}-4ABC-8DEF-{i:012X} ok\n" for i in range(10, 40)), 100, 600, 40, 2)
def test_runs_match_the_rule(content, max_lines, max_bytes, slack, keep):
    plain = _kernels.preview_cuts(content, max_lines, max_bytes, slack)
    cuts = _kernels.preview_cuts(content, max_lines, max_bytes, slack, keep)
    assert cuts[:2] == naive_trim(content, plain, max_lines, keep)
    # Trimming only ever omits more, on line boundaries, and never changes whether the text was truncated.
    assert cuts[0] <= plain[0] and cuts[1] >= plain[1] and (cuts[0] < cuts[1]) == (plain[0] < plain[1])
    form = stored(content)
    if cuts[0] != plain[0]:
        assert form[cuts[0] - 1] == 10
    if cuts[1] != plain[1]:
        assert form[cuts[1] - 1] == 10
    if not isinstance(content, str):
        assert cuts[2:] == cuts[:2]
    else:
        assert len(stored(content[: cuts[2]])) == cuts[0] and len(stored(content[cuts[3] :])) == len(form) - cuts[1]


@given(contents, limits, limits, st.integers(0, 20))
def test_zero_runs_is_the_old_rule(content, max_lines, max_bytes, slack):
    assert _kernels.preview_cuts(content, max_lines, max_bytes, slack, 0) == _kernels.preview_cuts(
        content, max_lines, max_bytes, slack)
    assert overspill.preview(content, max_lines, max_bytes, line_slack=slack) == overspill.preview(
        content, max_lines, max_bytes, line_slack=slack, runs=0)


def test_runs_example():
    lines = ["start"] + [f"tests/t.py::test_x[{i}] PASSED [{i // 10}%]" for i in range(900)] + ["end"]
    text = "\n".join(lines) + "\n"
    plain = overspill.preview(text, 2000, 4000, line_slack=200)
    trimmed = overspill.preview(text, 2000, 4000, line_slack=200, runs=10)
    assert trimmed.head.splitlines() == lines[:11] and trimmed.tail.splitlines() == lines[-11:]
    assert plain.head.startswith(trimmed.head) and plain.tail.endswith(trimmed.tail)
    assert trimmed.head_end == len(trimmed.head.encode()) and trimmed.truncated
    assert trimmed.tail_start == len(text.encode()) - len(trimmed.tail.encode())
    # The line limit decides: nothing is trimmed.
    assert overspill.preview(text, 40, 10**6, runs=10) == overspill.preview(text, 40, 10**6)


@pytest.mark.parametrize("runs", [-1, True, None, 1.5, "3"])
def test_runs_rejects(runs):
    error = ValueError if runs == -1 else TypeError
    with pytest.raises(error):
        overspill.preview("a\n" * 100, 10, 10, runs=runs)


# ---------------------------------------------------------------- truncate
@given(run_texts(max_run=70), st.integers(4, 300), st.integers(40, 4000), st.booleans())
@settings(max_examples=60, deadline=None)
@example("".join(f"2026-01-01 INFO processed record {i}\n" for i in range(400)), 2000, 2000, True)
@example("head\n" + "".join(f"step {i}: loss=0.{i * 37 % 1000}\n" for i in range(300)) + "done", 2000, 1500, False)
def test_truncate_shows_what_preview_gives(tmp_path_factory, text, max_lines, max_bytes, as_bytes):
    # Text without ESC or \r is its own view; without signal lines or an outline, truncate's head and tail
    # (and truncate_stream's) are exactly preview's with truncate's slack and runs.
    content = text.encode() if as_bytes else text
    config = {"tool_output": {"signals": [], "outline": False}}
    store = ToolOutputStore(tmp_path_factory.mktemp("runs"), durable=False, config=config)
    expected = overspill.preview(content, max_lines, max_bytes, line_slack=line_slack(max_bytes), runs=RUN_KEEP)
    results = [store.truncate("s", "c", content, max_lines=max_lines, max_bytes=max_bytes)]
    data = stored(content)
    chunks = [data[i : i + 97] for i in range(0, len(data), 97)]
    results.append(store.truncate_stream("s", "d", chunks, max_lines=max_lines, max_bytes=max_bytes))
    for result in results:
        if not expected.truncated:
            assert not result.truncated and result.content == text
            continue
        assert (store.directory / f"{result.resource.id}.txt").read_bytes() == data
        # (An empty head: the marker comes first.)
        separator = "" if not expected.head else "\n" if expected.head.endswith("\n") else "\n\n"
        assert result.content.startswith(expected.head + separator + "... output truncated")
        assert f"starts at byte offset {expected.head_end} ..." in result.content
        if expected.tail:
            assert result.content.endswith('pattern="...")\n\n' + expected.tail)
        else:
            assert result.content.endswith('pattern="...")')
    # Switched off, the content is preview's without runs.
    off = ToolOutputStore(tmp_path_factory.mktemp("off"), durable=False,
                          config={"tool_output": {"signals": [], "outline": False, "trim_runs": False}})
    plain = overspill.preview(content, max_lines, max_bytes, line_slack=line_slack(max_bytes))
    result = off.truncate("s", "c", content, max_lines=max_lines, max_bytes=max_bytes)
    if plain.truncated:
        separator = "" if not plain.head else "\n" if plain.head.endswith("\n") else "\n\n"
        assert result.content.startswith(plain.head + separator + "...")
        assert result.content.endswith(("\n\n" + plain.tail) if plain.tail else 'pattern="...")')


def test_runs_of_a_view_are_trimmed_as_shown(tmp_path):
    # Coloured lines: the run is judged on what the model is shown, and every offset is in the stored bytes.
    lines = [b"\x1b[1m== test session starts ==\x1b[0m"]
    lines += [f"tests/t.py::test_x[{i}] \x1b[32mPASSED\x1b[0m [{i * 100 // 30000:3d}%]".encode() for i in range(3000)]
    lines += [b"\x1b[31m== 3000 passed ==\x1b[0m"]
    data = b"\n".join(lines) + b"\n"
    store = ToolOutputStore(tmp_path, durable=False)
    result = store.truncate("s", "c", data)
    shown = [re.sub(r"\x1b\[[0-9;]*m", "", line.decode()) for line in lines]
    content = result.content
    head = content[: content.index("\n... output truncated")]
    assert head.splitlines() == shown[:11]
    assert result.next_offset == len(b"\n".join(lines[:11]) + b"\n")
    tail = content[content.rindex("\n\n") + 2 :]
    assert tail.splitlines() == shown[-11:]
    for line in content.split("\n"):
        match = re.match(r"(\d+):(.*)", line)
        if match:
            assert data[int(match.group(1)) - 1] == 10
