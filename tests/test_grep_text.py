"""grep of a stored output: matched as decoded text, line by line, with byte offsets."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overspill import PatternTooSlowError, ToolOutputStore, tools
from overspill.tools.grep import grep, search_resource
from overspill.text import view_flags
from processes import regex_workers_of, wait_until

SCRIPT = Path(sys.executable).with_name("overspill")


@pytest.fixture
def store(tmp_path):
    with ToolOutputStore(tmp_path, durable=False) as opened:
        yield opened


def stored(store: ToolOutputStore, data: bytes) -> str:
    return store.write("s", "c", data).uri


def test_dot_matches_a_character_and_case_folds_beyond_ascii(store):
    data = "unit.c:3:9: error: ‘counter’ undeclared (first use in this function)\nÉCHEC du test\nok\n".encode()
    uri = stored(store, data)
    # gcc's quotes are 3 bytes each: `.` is one character of the text, as in a file search.
    found = search_resource(store, "s", uri, r"error: .counter. undeclared")
    assert found.lines == ("0:unit.c:3:9: error: ‘counter’ undeclared (first use in this function)",)
    assert found.total == 1
    offset = data.index("ÉCHEC".encode())
    assert search_resource(store, "s", uri, "(?i)échec").lines == (f"{offset}:ÉCHEC du test",)
    assert search_resource(store, "s", uri, "échec", ignore_case=True).total == 1
    assert search_resource(store, "s", uri, "échec").total == 0


def test_context_lines_and_separators(store):
    data = "".join(f"line {i}\n" for i in range(20)).encode()
    uri = stored(store, data)
    found = search_resource(store, "s", uri, r"^line (3|4|12)$", context=1)
    offset = {i: data.index(f"line {i}\n".encode()) for i in range(20)}
    assert found.lines == (
        f"{offset[2]}-line 2", f"{offset[3]}:line 3", f"{offset[4]}:line 4", f"{offset[5]}-line 5", "--",
        f"{offset[11]}-line 11", f"{offset[12]}:line 12", f"{offset[13]}-line 13")
    assert (found.total, found.listed) == (3, 3)


def test_matches_are_counted_and_listing_is_bounded(store):
    uri = stored(store, b"".join(b"hit %d\n" % i for i in range(5000)))
    found = search_resource(store, "s", uri, "hit", max_matches=10)
    assert (found.total, found.listed, len(found.lines)) == (5000, 10, 10)
    answer = tools.grep(store, "s", "g", "hit", resource=uri)
    assert not answer.is_error and answer.metadata["matches"] == 5000
    assert answer.output.endswith("[5000 matching lines; 4900 not listed: narrow the pattern or raise max_matches]")


def test_the_view_is_searched_and_offsets_are_stored_bytes(store):
    data = b"\x1b[32mok\x1b[0m\n  50%\r100%\n\x1b[31merror\x1b[0m: boom\n"
    uri = stored(store, data)
    red = data.index(b"\x1b[31m")
    assert search_resource(store, "s", uri, "^error: boom$").lines == (f"{red}:error: boom",)
    assert search_resource(store, "s", uri, "^100%$").lines == (f"{data.index(b'  50%')}:100%",)
    raw = ToolOutputStore(store.directory.parent.parent, config={"tool_output": {"views": []}})
    assert raw.views == () and search_resource(raw, "s", uri, "^error: boom$").total == 0


def test_long_outputs_cross_search_blocks(store, monkeypatch):
    monkeypatch.setattr(sys.modules["overspill.tools.grep"], "_SEARCH_BLOCK", 64)
    data = b"".join(b"row %03d %s\n" % (i, b"needle" if i % 7 == 0 else b"hay") for i in range(100))
    uri = stored(store, data)
    found = search_resource(store, "s", uri, "needle", context=1)
    expected = search_resource_naive(data, "needle", 1)
    assert found.lines == expected


def search_resource_naive(data: bytes, pattern: str, context: int) -> tuple[str, ...]:
    """grep -C over ``data.split(b"\\n")``, the obvious way (no views: data without ESC or \\r)."""
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    offsets, position = [], 0
    for line in lines:
        offsets.append(position)
        position += len(line) + 1
    texts = [line.decode("utf-8", "surrogateescape") for line in lines]
    matched = [i for i, text in enumerate(texts) if re.search(pattern, text, re.MULTILINE)]
    shown: dict[int, str] = {}
    for i in matched:
        for j in range(max(0, i - context), min(len(lines), i + context + 1)):
            shown.setdefault(j, "-")
        shown[i] = ":"
    out, last = [], None
    for j in sorted(shown):
        if context and last is not None and j > last + 1:
            out.append("--")
        text = texts[j].encode("utf-8", "surrogateescape").decode("utf-8", "replace").removesuffix("\r")
        out.append(f"{offsets[j]}{shown[j]}{text}")
        last = j
    return tuple(out)


@given(st.lists(st.sampled_from([b"alpha", b"beta", b"\xc3\xa9t\xc3\xa9", b"\xff", b" ", b"\n", b"\n", b"x"]),
                max_size=60).map(b"".join), st.sampled_from(["a", "^b", "é.é", "x$", "(?i)ÉTÉ", "."]),
       st.integers(0, 2))
@settings(max_examples=60)
def test_search_matches_a_naive_reference(tmp_path_factory, data, pattern, context):
    store = ToolOutputStore(tmp_path_factory.mktemp("grep"), durable=False)
    uri = stored(store, data)
    assert search_resource(store, "s", uri, pattern, context=context, max_matches=1000).lines == \
        search_resource_naive(data, pattern, context)


def test_bad_arguments_are_one_line_errors(store):
    uri = stored(store, b"abc\n")
    assert tools.grep(store, "s", "g", "(", resource=uri).is_error
    assert tools.grep(store, "s", "g", "a", resource=uri, context=-1).is_error
    assert tools.grep(store, "s", "g", "a", resource="tool-output://nope").is_error
    assert tools.grep(store, "other", "g", "a", resource=uri).is_error
    with pytest.raises(ValueError):
        search_resource(store, "s", uri, "(")


def test_cli_grep(tmp_path, subprocess_env):
    env = {**subprocess_env, "OVERSPILL_DATA_DIR": str(tmp_path / "data")}
    env.pop("OVERSPILL_SESSION", None)

    def cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([str(SCRIPT), *args], input=stdin, capture_output=True, timeout=120, env=env)

    data = "".join(f"step {i}\n" for i in range(30000)) + "fatal: ‘disk’ full\n" + "done\n"
    ran = cli("truncate", "-", stdin=data.encode())
    uri = "tool-output://" + ran.stdout.decode().split("tool-output://")[1][:26]
    offset = data.encode().index("fatal".encode())
    found = cli("grep", uri, "FATAL: .disk. full", "-i", "-C", "1")
    assert found.returncode == 0
    assert found.stdout.decode().splitlines() == [
        f"{offset - len('step 29999') - 1}-step 29999", f"{offset}:fatal: ‘disk’ full", f"{data.encode().index(b'done')}-done",
        "[1 matching line]"]
    assert cli("grep", uri, "nothing here").returncode == 1
    assert cli("grep", uri, "(").returncode == 2
    assert cli("grep", "tool-output://" + "0" * 26, "x").returncode == 3
    assert cli("grep", uri, "step", "--json", "-m", "2").stdout.decode().startswith('{"lines": ["0:step 0", "7:step 1"], "total": 30000')


# ------------------------------------------------------------------ bounded work (issue 19, item 13)
# A pattern that backtracks without end on this output: 2**34 ways to split the a's before 'b' fails $.
BACKTRACKING = "(a+)+$"
EVIL = b"".join(b"line %d\n" % i for i in range(3000)) + b"a" * 34 + b"b\n"


def busy_workers_of(parent: int) -> list[int]:
    """Regex workers of ``parent`` that are running (matching), not waiting for a request."""
    busy = []
    for pid in regex_workers_of(parent):
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "R":
                busy.append(pid)
        except OSError:
            continue
    return busy


def test_a_backtracking_pattern_is_stopped_with_a_clear_error(store):
    uri = stored(store, EVIL)
    with pytest.raises(PatternTooSlowError, match=r"^pattern too slow: '\(a\+\)\+\$' was stopped after .*narrow it"):
        search_resource(store, "s", uri, BACKTRACKING, time_limit=0.5)
    # The worker that ran out of time is gone; the next search gets a fresh one.
    assert busy_workers_of(os.getpid()) == []
    assert search_resource(store, "s", uri, r"a+b$").lines == (f"{EVIL.index(b'aaa')}:{'a' * 34}b",)
    with pytest.raises(TypeError):
        search_resource(store, "s", uri, "a", time_limit="1")
    with pytest.raises(ValueError):
        search_resource(store, "s", uri, "a", time_limit=0)


def test_the_grep_tool_says_pattern_too_slow_in_one_line(store, monkeypatch):
    monkeypatch.setattr(sys.modules["overspill.tools.grep"], "TIME_LIMIT", 0.5)
    uri = stored(store, EVIL)
    result = tools.grep(store, "s", "g", BACKTRACKING, resource=uri)
    assert result.is_error and result.output.startswith("pattern too slow: ") and "\n" not in result.output
    assert "narrow it" in result.output


def test_cli_grep_honours_sigint_during_a_slow_search(tmp_path, subprocess_env):
    env = {**subprocess_env, "OVERSPILL_DATA_DIR": str(tmp_path / "data")}
    ran = subprocess.run([str(SCRIPT), "truncate", "-"], input=EVIL, capture_output=True, timeout=120, env=env)
    uri = "tool-output://" + ran.stdout.decode().split("tool-output://")[1][:26]
    child = subprocess.Popen([str(SCRIPT), "grep", uri, BACKTRACKING], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert wait_until(lambda: busy_workers_of(child.pid))  # the search is under way
        worker = busy_workers_of(child.pid)[0]
        child.send_signal(signal.SIGINT)
        child.communicate(timeout=60)  # a bound on a hang, not a timing claim
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 128 + signal.SIGINT
    assert wait_until(lambda: not Path(f"/proc/{worker}").exists()
                      or Path(f"/proc/{worker}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z")


def test_idle_search_workers_are_reaped_when_the_interpreter_exits(tmp_path, implementation):
    """A grep leaves its worker idle for the next search; at exit the pool ends and reaps it
    (it was left running, and the interpreter warned "subprocess ... is still running")."""
    code = ("import sys, warnings\nwarnings.simplefilter('always')\nimport overspill, overspill.tools as tools\n"
            "store = overspill.ToolOutputStore(sys.argv[1])\nstored = store.write('s', 'c', 'abc\\n' * 10)\n"
            "assert not tools.call(store, 's', 'c', 'grep', {'pattern': '(a+)+b', 'resource': stored.uri}).is_error\n")
    env = {**os.environ, "OVERSPILL_IMPLEMENTATION": implementation}
    result = subprocess.run([sys.executable, "-X", "dev", "-c", code, str(tmp_path)], capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "still running" not in result.stderr and "ResourceWarning" not in result.stderr, result.stderr


@pytest.mark.parametrize("context", [sys.maxsize, sys.maxsize + 1, 2**64, 10**40])
def test_a_context_past_any_line_count_shows_every_line(store, tmp_path, context):
    """Regression (red team K f05): a context of 2**63 or more (``grep -C``, the Python API)
    raised OverflowError from the deque that holds the lines before a match; it shows every line
    now, as any context at least the output's line count does.  The tool's schema caps it at 20."""
    data = "".join(f"line {i}\n" for i in range(10)).encode()
    uri = stored(store, data)
    everything = search_resource(store, "s", uri, "^line 5$", context=10)
    assert search_resource(store, "s", uri, "^line 5$", context=context) == everything
    assert len(everything.lines) == 10
    answer = grep(store, "s", "t", "^line 5$", resource=uri, context=context)
    assert not answer.is_error and answer.output.startswith("0-line 0\n")
    refused = tools.call(store, "s", "t", "grep", {"pattern": "x", "resource": uri, "context": context})
    assert refused.is_error and "at most 20" in refused.output
    env = {**os.environ, "OVERSPILL_DATA_DIR": str(tmp_path / "cli")}
    truncated = subprocess.run([str(SCRIPT), "truncate", "--json", "--max-lines", "3"], input=data, capture_output=True,
                               env=env, timeout=120, check=True)
    uri = json.loads(truncated.stdout)["resource"]["uri"]
    ran = subprocess.run([str(SCRIPT), "grep", uri, "^line 5$", "-C", str(context)], capture_output=True, env=env,
                         timeout=120)
    assert ran.returncode == 0 and ran.stderr == b"" and ran.stdout.startswith(b"0-line 0\n7-line 1\n")


def test_a_large_context_lists_a_large_output_in_bounded_memory(store, monkeypatch, tmp_path):
    """Regression (red team F7 f06): with a context as large as the output (``grep -C``, "any
    size"), every line before a match was held as a string in a deque, then the listing as
    another list of strings, then as one joined string: 268 MB of allocations for a 13 MB output.
    The lines before a match are read again from the stored bytes when it comes, and the listing
    is streamed into the store: memory is a search block's, whatever the output's size (blocks
    of 64 KiB here, so that a few MB show it)."""
    import tracemalloc

    monkeypatch.setattr(sys.modules["overspill.tools.grep"], "_SEARCH_BLOCK", 1 << 16)
    # The listing's preview alone: the outline and signal lines of its omitted part read tens of MB
    # of it in the pure twin (a cost of the store's, bounded too, that would hide the search's).
    store = ToolOutputStore(tmp_path / "bare", durable=False,
                            config={"tool_output": {"outline": False, "signals": []}})
    peaks, sizes = [], []
    for count in (100_000, 400_000):
        data = b"".join(b"line %d\n" % i for i in range(count)) + b"needle\n"
        uri = stored(store, data)
        tracemalloc.start()
        try:
            answer = grep(store, "s", "t", "needle", resource=uri, context=10**8)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        sizes.append(len(data))
        assert not answer.is_error and answer.metadata["matches"] == 1, answer.output[:200]
        with store.view("s", answer.resource.uri) as (_, listing):
            expected = "\n".join(search_resource_naive(data, "needle", 10**8)) + "\n[1 matching line]"
            assert bytes(listing) == expected.encode()
    # Four times the output (3.5 MB more) costs next to nothing more (it cost 20 times the output).
    assert peaks[1] - peaks[0] < (sizes[1] - sizes[0]) // 4, (peaks, sizes)
    # overspill grep streams its listing alike, --json too (spooled, printed once the search is done).
    env = {**os.environ, "OVERSPILL_DATA_DIR": str(tmp_path / "cli")}
    small = b"".join(b"row %d%s\n" % (i, b" hit" if i in (20, 24, 40) else b"") for i in range(50))
    truncated = subprocess.run([str(SCRIPT), "truncate", "--json", "--max-lines", "3"], input=small,
                               capture_output=True, env=env, timeout=120, check=True)
    cli_uri = json.loads(truncated.stdout)["resource"]["uri"]
    expected_lines = search_resource_naive(small, "hit", 3)
    as_json = subprocess.run([str(SCRIPT), "grep", cli_uri, "hit", "-C", "3", "-m", "2", "--json"],
                             capture_output=True, env=env, timeout=120)
    assert as_json.returncode == 0 and as_json.stderr == b"", as_json.stderr
    assert json.loads(as_json.stdout) == {"lines": list(expected_lines[:expected_lines.index("--", 5)]),
                                          "total": 3, "listed": 2}
    as_text = subprocess.run([str(SCRIPT), "grep", cli_uri, "hit", "-C", "3"], capture_output=True, env=env,
                             timeout=120)
    assert as_text.returncode == 0 and as_text.stdout.decode() == "\n".join(expected_lines) + "\n[3 matching lines]\n"
    nothing = subprocess.run([str(SCRIPT), "grep", cli_uri, "absent", "-C", "3", "--json"], capture_output=True,
                             env=env, timeout=120)
    assert nothing.returncode == 1 and json.loads(nothing.stdout) == {"lines": [], "total": 0, "listed": 0}


def test_dollar_matches_before_a_crlf_in_a_stored_output_as_in_a_file(store, tmp_path):
    """Red team J f02: grep of a stored output ran its pattern over the whole text with re.MULTILINE,
    where ``$`` matches only before ``\\n``: ``^123456$`` found nothing in CRLF lines, while grep of the
    same bytes as a file (each line also tried without its final ``\\r``) found the line."""
    data = b"booting\r\nserver ready\r\nready? no\r\n123456\r\n1234567\r\nunix ready\n"
    uri = stored(store, data)
    path = tmp_path / "same.log"
    path.write_bytes(data)
    offsets = {0: 1, 9: 2, 23: 3, 34: 4, 42: 5, 51: 6}  # each line's byte offset: its number in the file
    for pattern, expected in (("^123456$", [4]), ("ready$", [2, 6]), ("6$", [4]), (r"\r$", [1, 2, 3, 4, 5]),
                              (r"y\r?$", [2, 6]), ("^server ready$|^booting$", [1, 2])):
        found = search_resource(store, "s", uri, pattern)
        assert [offsets[int(line.split(":", 1)[0])] for line in found.lines] == expected, pattern
        as_file = grep(store, "s", "f", pattern, path=str(path))
        numbers = [int(line[len(str(path)) + 1:].split(":")[0]) for line in as_file.output.split("\n")
                   if line.startswith(f"{path}:")]
        assert numbers == expected, as_file.output


def _old_match_lines(regex: re.Pattern[str], text: str, count: int) -> list[int]:
    """The lines in which a match of ``regex.finditer`` starts (the rule before red team P8 f01, walking every match)."""
    found: list[int] = []
    line = position = 0
    for match in regex.finditer(text):
        line += text.count("\n", position, match.start())
        position = match.start()
        if line < count and (not found or found[-1] < line):
            found.append(line)
    return found


class _CountingPattern:
    """A compiled pattern that counts the matches it hands out (by search or finditer)."""

    def __init__(self, regex: re.Pattern[str]) -> None:
        self._regex = regex
        self.pattern, self.flags = regex.pattern, regex.flags
        self.matches = 0

    def search(self, *args):
        found = self._regex.search(*args)
        self.matches += found is not None
        return found

    def finditer(self, *args):
        for match in self._regex.finditer(*args):
            self.matches += 1
            yield match


def test_grep_of_a_stored_output_costs_per_matching_line_not_per_match():
    """Red team P8 f01: lines_with_a_match walked every match of the pattern over the text, so ``\\d``
    or ``.`` (a match per character) on a large numeric output ran out of time ("pattern too slow")
    where a search line by line takes a second. A pattern that matches no newline now looks at one
    match per matching line; the lines found are the same."""
    from overspill.tools._regex_worker import lines_with_a_match

    lines = [b"%d,%d,%d" % (i, i * 7919 % 1000003, i * 31) for i in range(2000)]
    for crlf in (False, True):
        payload = (b"\r\n" if crlf else b"\n").join(lines) + b"\n"
        for pattern in (r"\d", ".", "1", ",", "^", "$", r"(?<=,)\d"):
            regex = re.compile(pattern, re.MULTILINE)
            counting = _CountingPattern(regex)
            found = lines_with_a_match(counting, payload)  # type: ignore[arg-type]
            assert found == [i for i, line in enumerate(lines) if regex.search(line.decode())], pattern
            assert counting.matches <= (2 if crlf else 1) * len(found), (pattern, counting.matches)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="ab\n\r x1", max_size=40),
       st.sampled_from(["a", "b", ".", "a*", "x?", "^", "$", "^$", r"\b", r"\B", "(?<=a)b", "(?<!a)b", r"\Aa",
                        r"a\Z", "a$", "^b", "(?=\n)", "[^\n]", "[^a]", r"\s", r"a\nb", r"b\s*a", "(?s).", "(?s)a.b",
                        r"\D+", r"[\r\n]+", "a|b\nb", r"(a)\1", "x|b\r?$", ".*", "(?s:.?)$", "a{0,2}?", "(?m)$a?"]))
def test_lines_with_a_match_lists_what_a_walk_of_every_match_lists(text, pattern):
    """The faster walk of red team P8 f01 (a search from each next line's start) lists the lines the
    walk of every match (finditer) listed, with empty matches, anchors and look-behinds, for the
    patterns it is used for (``_line_bound``: none that can match a newline or use ``\\A``, ``\\Z``,
    red team R9 f02); for every pattern the lines are those a search of each line alone finds."""
    from overspill.tools._regex_worker import _line_bound, _match_lines, lines_with_a_match

    regex = re.compile(pattern, re.MULTILINE)
    payload = text.encode("utf-8", "surrogateescape")
    count = text.count("\n") + (not text.endswith("\n"))
    alone = [index for index, line in enumerate(text.split("\n")[:count])
             if regex.search(line) or (line.endswith("\r") and regex.search(line[:-1]))]
    if _line_bound(regex):
        for lines in range(text.count("\n") + 2):
            assert _match_lines(regex, text, lines) == _old_match_lines(regex, text, lines)
        stripped = text.replace("\r\n", "\n").removesuffix("\r")
        walked = _old_match_lines(regex, text, count)
        if "\r\n" in text or text.endswith("\r"):
            walked = sorted(set(walked) | set(_old_match_lines(regex, stripped, count)))
        assert walked == alone
    assert lines_with_a_match(regex, payload) == alone


# Patterns for long lines, each with the bytes of view a match of it spans, look-arounds included.
_LONG_LINE_PATTERNS = {"needle": 6, "^x": 1, "x$": 2, "a.b": 4, r"b\b": 2, "(?<=a)b": 2, "^$": 1, "é": 2,
                       "ab|x ": 2, r"\bx": 2, "b(?!b)": 2, "a$": 2, "^ab": 2, "le$": 3, "ti": 2, "31m": 3}


def _view_lines_matching(data: bytes, pattern: str, views: int) -> list[int]:
    """Offsets of the lines of ``data`` whose view (each line alone, as ``view_bytes`` shows it)
    holds a match, a CRLF line's final \r optional before ``$``: what grep of a stored output lists."""
    from overspill import _kernels

    found, position = [], 0
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    for index, line in enumerate(lines):
        ended = line + b"\n" if index < len(lines) - 1 or data.endswith(b"\n") else line
        shown = _kernels.view_bytes(ended, views) if views else None
        text = (ended if shown is None else shown).removesuffix(b"\n").decode("utf-8", "surrogateescape")
        if re.search(pattern, text, re.MULTILINE) or (text.endswith("\r") and re.search(pattern, text[:-1], re.M)):
            found.append(position)
        position += len(line) + 1
    return found


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from([b"ab", b"x", b" ", b"\xc3\xa9", b"\xff", b"needle", b"\n", b"\r\n", b"a" * 40,
                                 b"b" * 70, b"\r", b"\x1b[31m", b"\x1b]0;ti\x07", b"\x1b[", b"\x1b"]),
                min_size=1, max_size=40).map(b"".join),
       st.sampled_from(sorted(_LONG_LINE_PATTERNS)), st.sampled_from([16, 17, 64]), st.booleans())
def test_a_line_longer_than_the_search_block_is_one_line(tmp_path_factory, data, pattern, block, views):
    """Red team P8 f02: a line longer than the search block (8 MiB) was searched as several lines, one a
    block, each listed at an offset that starts no line, and a match across a block's edge was lost. Now
    such a line is one line (its view made as a stream), searched in overlapping pieces: a match that
    spans no more than a piece's context is found as in the whole line's view, and no line is listed
    that the search of each line's view would not list (the failing CI example is the first case)."""
    from unittest import mock

    config = None if views else {"tool_output": {"views": []}}
    store = ToolOutputStore(tmp_path_factory.mktemp("grep"), durable=False, config=config)
    uri = stored(store, data)
    module = sys.modules["overspill.tools.grep"]
    with mock.patch.object(module, "_SEARCH_BLOCK", block):
        found = search_resource(store, "s", uri, pattern, max_matches=1000).lines
    listed = [int(line.split(":")[0]) for line in found]
    expected = _view_lines_matching(data, pattern, view_flags(store.views))
    if pattern == "^$" and not data.endswith(b"\n"):
        # (Left alone: a final line without newline whose view is empty, such as a lone \r, is not
        # listed by a block's search, long lines or not; not what this test is about.)
        expected = [offset for offset in expected if offset <= data.rfind(b"\n")]
        listed = [offset for offset in listed if offset <= data.rfind(b"\n")]
    context = min(module._PIECE_CONTEXT, (block - 8) // 2)
    if _LONG_LINE_PATTERNS[pattern] <= context:
        assert listed == expected
    else:  # a longer match across a piece's edge may be missed, as the README says; none is made up
        assert set(listed) <= set(expected) and len(set(listed)) == len(listed)


def test_a_line_longer_than_the_search_block_ci_example(store, monkeypatch):
    """The example hypothesis found in CI: a 77-byte line searched in 16-byte blocks, ``needle`` at its end."""
    monkeypatch.setattr(sys.modules["overspill.tools.grep"], "_SEARCH_BLOCK", 16)
    uri = stored(store, b"a" + b"b" * 70 + b"needle")
    assert [row.split(":")[0] for row in search_resource(store, "s", uri, "needle").lines] == ["0"]


def test_a_long_line_is_listed_once_at_its_start_and_found_across_piece_edges(store, monkeypatch):
    """Red team P8 f02, by hand: a long line holding ``needle`` twice is one matching line at its own
    offset; ``NEEDLE`` across a piece's edge is found; ``^`` and ``$`` hold only at the line's ends;
    the ``cr`` view of a long line is its last segment."""
    monkeypatch.setattr(sys.modules["overspill.tools.grep"], "_SEARCH_BLOCK", 256)
    line = bytearray(b"x" * 2000)
    line[10:16] = b"needle"
    line[1500:1506] = b"needle"
    line[253:259] = b"NEEDLE"  # across the first piece's end
    line[192:193] = b"y"  # ends the first piece's part: not an end of line
    data = b"first\n" + bytes(line) + b"\r\nlast y\n"
    uri = stored(store, data)
    assert [row.split(":")[0] for row in search_resource(store, "s", uri, "needle").lines] == ["6"]
    assert search_resource(store, "s", uri, "needle", context=1).total == 1
    assert [row[:2] for row in search_resource(store, "s", uri, "needle", context=1).lines] == ["0-", "6:", "20"]
    assert search_resource(store, "s", uri, "NEEDLE").total == 1
    assert search_resource(store, "s", uri, "^x").total == 1
    assert search_resource(store, "s", uri, "^needle").total == 0
    assert search_resource(store, "s", uri, "y$").total == 1  # only "last y"
    assert search_resource(store, "s", uri, "x$").total == 1  # the long line, before its CRLF
    redrawn = b"old progress " * 100 + b"\rdone 100%" + b" " * 600 + b"\n"
    uri = store.write("s", "r", redrawn).uri
    assert search_resource(store, "s", uri, "old").total == 0
    assert search_resource(store, "s", uri, "^done 100%").lines == ("0:done 100%" + " " * 600,)


def test_a_long_line_piece_makes_up_no_match_from_a_look_around_past_its_edge(store):
    """Review R1: a piece of a long line (real 8 MiB block) is a prefix of the line's text from some
    point on; a look-ahead reading past its end saw the end of a text ($ held, a negative look-ahead
    found nothing), a look-behind reaching its start saw a text's start, and a line was listed that
    the whole line's view does not hold."""
    mib = 1 << 20
    line = b"x" * (15 * mib // 2 - 10) + b"a" + b"b" * mib + b"c" + b"x" * (3 * mib) + b"\n"
    uri = stored(store, line)
    for pattern in (r"a(?=b*$)", r"a(?!b{600000,}c)", r"a(?!(?:b{1000}){600})"):
        assert search_resource(store, "s", uri, pattern).total == 0, pattern
    assert search_resource(store, "s", uri, r"a(?=b{1000})").total == 1
    assert search_resource(store, "s", uri, r"(?<=xx)a(?=bb)").total == 1
    from overspill.tools._regex_worker import _PIECE, piece_matches

    def piece(pattern: str, before: bytes, middle: bytes, after: bytes) -> list[int]:
        payload = _PIECE.pack(len(before), len(middle), len(after), False) + before + middle + after
        return piece_matches(re.compile(pattern, re.MULTILINE), payload)

    for pattern in (r"(?<=^qqqq)a", r"(?<!q{5})a", r"(?<=\bqqqq)a", r"(?<=\Aqqqq)a"):
        assert piece(pattern, b"qqqq", b"a", b"bbbb") == [], pattern
    assert piece(r"(?<=qqq)a(?=b)", b"qqqq", b"a", b"bbbb") == [0]


def test_a_long_line_piece_ends_at_a_character_start(store, monkeypatch):
    """Review R1: a piece that does not end its long line ended at the block's byte count, cutting a
    multi-byte character; its first bytes, read as invalid ones, matched ``[^é]`` and a line was listed
    that the whole line's view does not hold."""
    monkeypatch.setattr(sys.modules["overspill.tools.grep"], "_SEARCH_BLOCK", 16)
    for before in range(3, 8):
        for run in range(7, 12):
            data = b"x" * before + b"y" + b"z" * run + "é".encode() * 12 + b"\n"
            uri = store.write("s", f"cut{before}-{run}", data).uri
            assert search_resource(store, "s", uri, r"yz{%d}[^é]" % run).total == 0, (before, run)


def test_grep_of_a_redis_output_reads_it_a_window_at_a_time(redis_server, tmp_path, monkeypatch):
    """Regression (red team D f02): grep of a stored output on Redis took a whole view of it (every
    chunk key read, then joined): the payload held in memory twice at the peak (128 MiB of
    allocations for 64 MiB).  It now reads and verifies the windows it searches, one at a time;
    the listing is the local folder's, context read again across windows and a line longer than a
    window included (windows of 256 KiB here, so that a few MB show it)."""
    import tracemalloc

    monkeypatch.setattr(sys.modules["overspill.tools.grep"], "_SEARCH_BLOCK", 1 << 18)
    # A long line's pieces overlap by twice this: kept well under the block, as the defaults are.
    monkeypatch.setattr(sys.modules["overspill.tools.grep"], "_PIECE_CONTEXT", 1 << 14)
    config = {"tool_output": {"outline": False, "signals": []}}  # the search's memory alone, not the preview's
    data = b"".join(b"line %d\n" % i for i in range(600_000)) + b"x" * 700_000 + b" needle in a long line\n"
    data += b"".join(b"row %d%s\n" % (i, b" needle" if i in (5, 90_000) else b"") for i in range(100_000))
    answers, peaks = [], []
    with ToolOutputStore(tmp_path / "local", durable=False, config=config) as local, \
            ToolOutputStore(url=redis_server.url, config=config) as remote:
        for store in (local, remote):
            uri = store.write("grep-windows", "c", data).uri
            tracemalloc.start()
            try:
                answer = grep(store, "grep-windows", "t", "needle", resource=uri, context=3)
                peaks.append(tracemalloc.get_traced_memory()[1])
            finally:
                tracemalloc.stop()
            assert not answer.is_error and answer.metadata["matches"] == 3, answer.output[:300]
            answers.append(answer.output)
    assert answers[0] == answers[1]
    # The search's own memory (the local folder's, its payload mapped) and a few windows more at
    # most; it was twice the payload.
    assert peaks[1] < min(peaks[0] + 4 * (1 << 18), len(data) // 2), (peaks, len(data))


def test_grep_of_a_stored_output_matches_each_line_alone_as_grep_of_a_file(store, tmp_path, monkeypatch):
    """Red team R9 f02: grep of a stored output searched a block as one text (re.MULTILINE), so a
    match could take a line's newline (``z[^a]`` listed ``xyz``; ``c\\s``, ``c\\W``, ``c\\D`` listed
    ``abc``; ``\\n`` listed every line) and ``\\Z`` held only at the text's end (``c\\Z`` found
    nothing), where grep of the same bytes as a file searches each line alone. Each line is now
    searched alone: in a block, in the last piece of a long line (its newline is not searched) and
    in a background command's unfinished last line (``wait``'s search)."""
    from overspill.tools._regex_worker import lines_with_a_match

    data = b"abc\nxyz\nend\n"
    uri = stored(store, data)
    (tmp_path / "files").mkdir()
    path = tmp_path / "files" / "f.txt"
    path.write_bytes(data)
    numbers = {0: 1, 4: 2, 8: 3}
    cases = {r"z[^a]": [], r"c\s": [], r"\n": [], r"c\Z": [1], r"c\W": [], r"c\D": [], r"\Ax": [2],
             r"(?<=c\n)x": [], r"c(?=\n)": [], r"c(?![^a])": [1], r"(?-m:^e)": [3], r"(?s)c.": [], "c$": [1]}
    for pattern, expected in cases.items():
        found = search_resource(store, "s", uri, pattern)
        assert [numbers[int(line.split(":")[0])] for line in found.lines] == expected, pattern
        as_file = grep(store, "s", "f", pattern, path=str(path))
        assert [int(n) for n in re.findall(r"f\.txt:(\d+):", as_file.output)] == expected, (pattern, as_file.output)
    # A long line searched in pieces: its last piece is searched without the newline.
    monkeypatch.setattr(sys.modules["overspill.tools.grep"], "_SEARCH_BLOCK", 16)
    long_uri = store.write("s", "long", b"x" * 60 + b"abc\nnext\n").uri
    for pattern, expected in ((r"c\s", 0), (r"c\Z", 1), (r"c[^a]", 0), (r"c\n", 0), (r"c$", 1)):
        assert search_resource(store, "s", long_uri, pattern).total == expected, pattern
    # wait(pattern=) searches an unfinished last line as a line: \Z holds at its end so far.
    assert lines_with_a_match(re.compile(r"y\Z", re.MULTILINE), b"abc\nready") == [1]
    assert lines_with_a_match(re.compile(r"c\s", re.MULTILINE), b"abc\nready") == []


_PER_LINE_PATTERNS = ["[^a]", r"b[^a]", r"\s", r"b\s", r"\W", r"a\W", r"\D", r"b\D", r"\n", r"b\n", r"\Z", r"a\Z",
                      r"\Ab", r"\A\Z", r"(?<=\n)a", r"(?<!\n)a", r"b(?=\n)", r"b(?!\n)", r"(?<=a\s)b", r"a(?=\W)",
                      r"(?<![^a])b", r"a(?![^b])", r"(?s)a.", r"(?s)b.?$", r"(?-m:^a)", r"(?-m:b$)", r"\S\s*$",
                      r"\B", r"^$", r"a|\Ab", r"[\r\n]", r"\r", r"\r$", r"b\b", r"(a)\s*\1", "é[^é]"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"a", b"b", b" ", b"\n", b"\r\n", b"\r", b"\xc3\xa9", b"\xff", b"1", b",",
                                 b"\n\n", b"ab" * 12]),
                min_size=0, max_size=30).map(b"".join),
       st.sampled_from(_PER_LINE_PATTERNS), st.sampled_from([None, 16]))
def test_grep_of_a_stored_output_is_a_search_of_each_line(tmp_path_factory, data, pattern, block):
    """Red team R9 f02, by property: the lines grep lists of a stored output (views off, so the view
    is the bytes) are those in which a plain ``re.search`` of the line alone (without its ``\\n``, a
    final ``\\r`` optional) finds the pattern: negated classes, ``\\s``, ``\\W``, ``\\D``, ``\\n``, ``\\A``,
    ``\\Z``, look-arounds; in blocks, and in the pieces of lines longer than a (16-byte) block."""
    from unittest import mock

    if not data:
        return  # (nothing is stored for nothing)
    store = ToolOutputStore(tmp_path_factory.mktemp("perline"), durable=False, config={"tool_output": {"views": []}})
    uri = stored(store, data)
    module = sys.modules["overspill.tools.grep"]
    with mock.patch.object(module, "_SEARCH_BLOCK", block or module._SEARCH_BLOCK):
        found = search_resource(store, "s", uri, pattern, max_matches=1000).lines
    expected, position = [], 0
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    for line in lines:
        text = line.decode("utf-8", "surrogateescape")
        if re.search(pattern, text, re.MULTILINE) or (text.endswith("\r") and re.search(pattern, text[:-1], re.M)):
            expected.append(position)
        position += len(line) + 1
    assert [int(row.split(":")[0]) for row in found] == expected


def test_python_grep_of_files_skips_a_nul_far_from_a_newline_and_bounds_a_long_line(store, tmp_path, monkeypatch):
    """Regression (red team I10 f01): the Python search of files (a look-around pattern, or no rg)
    held a file's bytes until a newline came, and looked for a NUL only then: text followed by a
    hole of NULs (a preallocated log) was read into one growing buffer, a MemoryError or the OOM
    killer. Every byte read is now checked for a NUL (the file is skipped at the first, as rg
    does), and a line longer than the block is searched in pieces, never held whole."""
    import importlib
    import tracemalloc

    grep_module = importlib.import_module("overspill.tools.grep")
    monkeypatch.setattr(grep_module, "_ripgrep", lambda: None)  # the Python search, whatever the pattern
    holed = tmp_path / "holed.log"
    with open(holed, "wb") as handle:
        handle.write(b"".join(b"line %d ok\n" % number for number in range(1000)))  # > 8 KiB of text
        handle.truncate(96 << 20)  # then a hole of NULs, never ending in a newline
    tracemalloc.start()
    try:
        result = tools.grep(store, "s", "c", "line 5 ok", path=str(holed))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.output == "no matches for 'line 5 ok'"  # binary: skipped, its match before the NUL too
    assert peak < 32 << 20  # stopped at the NUL, not held to the end of the hole

    sizes = []
    search_lines, search_piece = grep_module.Search.lines, grep_module.Search.piece

    def lines(self, payload):
        sizes.append(len(payload))
        return search_lines(self, payload)

    def piece(self, before, middle, after, last):
        sizes.append(len(before) + len(middle) + len(after))
        return search_piece(self, before, middle, after, last)

    monkeypatch.setattr(grep_module.Search, "lines", lines)
    monkeypatch.setattr(grep_module.Search, "piece", piece)
    long = tmp_path / "long.txt"
    long.write_bytes(b"start\n" + b"ab" * (5 << 20) + b" needle " + b"cd" * (5 << 20) + b"\r\nend needle\n")
    name = str(long)
    shown = f"{name}:2:" + ("ab" * 1000)[:2000 - len(f"{name}:2:")] + "… [line cut]"
    for pattern, expected in [("(?<=a)b needle", [shown]), ("needle(?=\\s*$)", [f"{name}:3:end needle"]),
                              ("cd$", [shown]), ("^start", [f"{name}:1:start"]), ("^ab", [shown]),
                              ("^cd", ["no matches for '^cd'"])]:
        assert tools.grep(store, "s", "c", pattern, path=name).output.split("\n") == expected, pattern
    assert max(sizes) <= grep_module._SEARCH_BLOCK  # the long line (20 MiB) went to the matching in pieces, never whole
