"""The tools end to end: real processes, files, and an http.server on 127.0.0.1."""

from __future__ import annotations

import codecs
import gzip
import http.server
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import warnings
import zlib

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from processes import alive_in_group, wait_until, zombies_of

from overspill import ToolOutputStore, tools
from overspill.tools._html import html_to_markdown, html_to_text

# The submodule, not the function that tools/__init__ exports under the same name.
grep_module = importlib.import_module("overspill.tools.grep")


@pytest.fixture
def store(tmp_path):
    with ToolOutputStore(tmp_path / "data", durable=False) as opened:
        yield opened


# ------------------------------------------------------------------ bash
def test_bash_one_stream_then_a_status_line(store):
    result = tools.bash(store, "s", "c", "echo out; echo err >&2; echo out2; exit 4")
    assert result.output == "out\nerr\nout2\n[exit code 4]"
    assert not result.is_error and not result.truncated and result.resource is None
    assert result.metadata["exit_code"] == 4 and result.metadata["output_bytes"] == 13
    assert result.metadata["output_lines"] == 3 and result.metadata["stored_bytes"] == 0
    assert "stdout_bytes" not in result.metadata and "stderr_bytes" not in result.metadata
    assert tools.bash(store, "s", "c", "true").output == "(no output)"
    assert tools.bash(store, "s", "c", "kill -TERM $$").output == "[terminated by SIGTERM]"


def test_bash_cwd_and_env(store, tmp_path):
    result = tools.bash(store, "s", "c", "pwd; echo $GREETING", cwd=tmp_path, env={**os.environ, "GREETING": "hi"})
    assert result.output == f"{tmp_path}\nhi"


def test_bash_gives_the_command_dev_null(store):
    assert tools.bash(store, "s", "c", "cat; echo done").output == "done"


def test_bash_timeout_is_an_error_with_a_status_line(store):
    result = tools.bash(store, "s", "c", "echo started; sleep 30", timeout=0.5)
    assert result.is_error and result.metadata["timed_out"]
    assert result.output == "started\n[timed out after 0.5 s; process group killed]"


def test_bash_large_output_is_stored_exactly_and_advertised(store):
    result = tools.bash(store, "s", "c", "seq 1 100000")
    assert result.truncated and result.resource is not None
    assert result.resource.uri in result.output
    stored = (store.directory / f"{result.resource.id}.txt").read_bytes()
    assert stored == b"".join(b"%d\n" % i for i in range(1, 100001))
    assert result.metadata["stored_bytes"] == result.metadata["output_bytes"] == len(stored)
    assert result.metadata["output_lines"] == 100000


def test_bash_spills_by_default_past_the_capture_cap(store):
    result = tools.bash(store, "s", "c", "yes 0123456789 | head -c 5000000; echo THE-END; exit 1")
    assert result.truncated and result.resource is not None and result.resource.uri in result.output
    assert result.resource.size == 5000000 + 8 and "rerun" not in result.output
    assert result.output.endswith("THE-END\n[exit code 1]")
    marker_offset = int(result.output.split("starts at byte offset ")[1].split()[0])
    page = store.read("s", result.resource.uri, offset=marker_offset, limit=20)
    assert page.offset == marker_offset and page.content.startswith(("0123456789"[marker_offset % 11 :], "\n"))


@pytest.mark.parametrize("spill", [False, True])
def test_bash_reports_progress_and_the_stored_numbers(store, spill):
    totals: list[int] = []
    result = tools.call(store, "s", "c", "bash", {"command": "seq 1 100000"}, spill=spill, progress=totals.append)
    expected = "".join(f"{i}\n" for i in range(1, 100001)).encode()
    assert totals and totals == sorted(set(totals)) and totals[-1] == len(expected)
    assert result.resource is not None and result.resource.size in (len(expected), len(expected) - 1)
    assert result.metadata["lines"] in (100000, 100001)  # how a final newline counts is the counting rule's business
    # next_offset is where the preview's head stops: the stored bytes before it are the head the model sees.
    offset = result.metadata["next_offset"]
    assert 0 < offset < len(expected) and result.output.startswith(expected[:offset].decode().rstrip("\n"))
    assert store.read("s", result.resource.uri, offset=offset, limit=10).content == expected[offset : offset + 10].decode()


def test_bash_abort_ends_the_process_group(store, tmp_path):
    pid_file = tmp_path / "pid"
    abort = threading.Event()
    results = []
    command = f"echo $$ > {pid_file}; sleep 1000 & sleep 1000; wait"
    worker = threading.Thread(target=lambda: results.append(tools.call(
        store, "s", "c", "bash", {"command": command, "timeout": 3600}, spill=True, abort=abort)))
    worker.start()
    assert wait_until(lambda: pid_file.exists() and pid_file.read_text().strip())
    group = int(pid_file.read_text())
    assert alive_in_group(group)
    abort.set()
    worker.join(60)
    assert not worker.is_alive() and results[0].metadata["exit_code"] < 0
    assert wait_until(lambda: not alive_in_group(group)) and zombies_of(os.getpid()) == []


def test_bash_without_spill_keeps_what_capture_held(store):
    result = tools.bash(store, "s", "c", "yes 0123456789 | head -c 5000000; echo; echo THE-END", spill=False)
    assert result.truncated and result.resource is None
    assert "tool-output://" not in result.output and "rerun" not in result.output
    omitted = int(result.output.split("... ")[1].split()[0])
    assert omitted > 5000000 + 9 - 1024 * 1024 and "not stored" in result.output
    assert result.output.endswith("THE-END") and result.metadata["stored_bytes"] == 0
    assert store.resources("s") == []
    small = tools.bash(store, "s", "c2", "seq 1 100000", spill=False)
    assert small.resource is not None and small.resource.size == len(b"".join(b"%d\n" % i for i in range(1, 100001)))


def test_bash_binary_output_is_stored_and_described(store, tmp_path):
    data = bytes(range(256)) * 4
    (tmp_path / "blob").write_bytes(data)
    result = tools.bash(store, "s", "c", "cat blob", cwd=tmp_path)
    assert result.resource is not None and result.resource.mime == "application/octet-stream"
    assert (store.directory / f"{result.resource.id}.txt").read_bytes() == data
    assert result.output == (f"[binary output, 1024 bytes, stored as {result.resource.uri}; "
                             "it begins 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f ...]")
    assert "\ufffd" not in result.output


def test_bash_rejects_an_empty_command_and_a_missing_cwd(store, tmp_path):
    assert tools.bash(store, "s", "c", "  ").is_error
    missing = tools.bash(store, "s", "c", "true", cwd=tmp_path / "missing")
    assert missing.is_error and "could not run" in missing.output


# ------------------------------------------------------------------ read
def test_read_resource_pages_with_a_hint(store):
    resource = store.write("s", "c", "abcdefghij" * 10)
    page = tools.read(store, "s", "c", resource=resource.uri, offset=10, limit=20)
    assert page.output.startswith("abcdefghij" * 2) and "offset=30" in page.output and page.truncated
    last = tools.read(store, "s", "c", resource=resource.uri, offset=90)
    assert last.output == "abcdefghij" and not last.truncated


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [({"resource": "tool-output://nope"}, "not a tool-output URI"), ({}, "exactly one"),
     ({"resource": "x", "path": "y"}, "exactly one"), ({"resource": "tool-output://0123456789abcdefghijklmnop"},
                                                         "no resource"),
     ({"path": "f", "offset": -1}, "at least 0"), ({"path": "f", "limit": True}, "integer")],
)
def test_read_failures_are_one_line(store, kwargs, fragment):
    result = tools.read(store, "s", "c", **kwargs)
    assert result.is_error and fragment in result.output and "\n" not in result.output


def test_read_other_session_is_refused(store):
    resource = store.write("alice", "c", "secret")
    result = tools.read(store, "bob", "c", resource=resource.uri)
    assert result.is_error and "another session" in result.output


@pytest.fixture
def text_file(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("".join(f"line {i}\n" for i in range(1, 3001)) + "x" * 5000 + "\nlast")
    return path


def test_read_file_numbers_lines_and_hints(store, text_file):
    result = tools.read(store, "s", "c", path=str(text_file))
    lines = result.output.split("\n")
    assert lines[0] == "     1\tline 1" and lines[1999] == "  2000\tline 2000"
    assert result.output.endswith("[more lines follow: read again with offset=2001 to continue]")
    page = tools.read(store, "s", "c", path=text_file.name, offset=2999, limit=5, cwd=text_file.parent)
    assert page.output.split("\n")[0] == "  2999\tline 2999"
    long_line = page.output.split("\n")[2]
    assert long_line.startswith("  3001\t" + "x" * 2000 + "… [line cut at 2000 characters]")
    assert page.output.split("\n")[3] == "  3002\tlast" and not page.truncated


def test_read_file_is_bounded_in_bytes(store, tmp_path):
    path = tmp_path / "wide.txt"
    path.write_text(("y" * 1000 + "\n") * 200)
    result = tools.read(store, "s", "c", path=str(path))
    assert len(result.output.encode()) <= 51200 + 100 and "offset=" in result.output


@pytest.mark.parametrize("bound", [{"max_tokens": 1}, {"max_tokens": 4}, {"max_tokens": 5}, {"max_tokens": 10},
                                   {"max_tokens": 13}, {"max_bytes": 11}, {"max_bytes": 12}, {"max_bytes": 30},
                                   {"max_bytes": 60}])
def test_a_file_page_under_a_tiny_bound_shows_its_first_line_started_or_says_it_cannot(store, tmp_path, bound):
    """Regression (red team I12 #3): under a small token bound (or byte bound) a file's first line
    was shown as '     1\t… [line cut at 0 characters]', over the bound (13 tokens, 38 bytes) and
    with none of the line, and the hint moved on to offset=2: line 1 could never be read.  A page
    keeps within the bound and shows at least the line's first character (its note moved to the
    closing hint when it would not fit beside it); a bound too small for the number and one
    character is an error that says so and where the next lines are."""
    from overspill.config import resolve_limits

    if "max_tokens" in bound:
        pytest.importorskip("quicktok")
        from overspill._tokens import counter

        measure, most = counter(), bound["max_tokens"]
    else:
        measure, most = (lambda text: len(text.encode()) + 1), bound["max_bytes"]
    first = "error: undefined reference to `main'"
    (tmp_path / "f.txt").write_text(f"{first}\nsecond line\n")
    limits = resolve_limits({"tool_output": bound}, environ={})
    page = tools.read(store, "s", "c", path="f.txt", cwd=tmp_path, limits=limits)
    number = "     1\t"
    if measure(number + "e…") > most:  # not even the number and one character fit
        assert page.is_error and "\n" not in page.output, page.output
        assert "line 1 of f.txt" in page.output and "offset=2" in page.output, page.output
        return
    assert not page.is_error, page.output
    body, _, hint = page.output.partition("\n\n[")
    assert measure(body) <= most, (body, measure(body))
    assert body.startswith(number + "e") and first.startswith(body[len(number) :].partition("…")[0])
    assert hint.startswith("more lines follow: read again with offset=2 to continue"), hint
    if body.endswith("…"):  # cut, and the line's own note did not fit beside it: the hint says so
        shown = len(body[len(number) :].partition("…")[0])
        assert f"line 1 is cut at {shown} character" in hint, hint
    # The next page goes on with line 2.
    after = tools.read(store, "s", "c", path="f.txt", cwd=tmp_path, offset=2, limits=limits)
    assert not after.is_error and after.output.startswith("     2\ts"), after.output


@pytest.mark.parametrize(("setup", "fragment"), [("missing", "no such file"), ("folder", "is a directory"),
                                                 ("binary", "binary"), ("past", "past the end")])
def test_read_file_refusals(store, tmp_path, setup, fragment):
    path = tmp_path / "target"
    if setup == "folder":
        path.mkdir()
    elif setup == "binary":
        path.write_bytes(b"PK\x03\x04\x00\x00binary")
    elif setup == "past":
        path.write_text("one\ntwo\n")
    result = tools.read(store, "s", "c", path=str(path), offset=50 if setup == "past" else None)
    assert result.is_error and fragment in result.output


def test_read_schema_and_tool_agree_on_offset_zero_for_a_path(store, text_file):
    """Regression (issue 9, item 15): the schema allowed ``offset: 0`` for a path, the tool refused it.
    Protects "Tool descriptions in the schemas teach the paging protocol": what the schema allows works."""
    schema = next(d for d in tools.schemas("anthropic") if d["name"] == "read")["input_schema"]
    minimum = schema["properties"]["offset"]["minimum"]
    result = tools.call(store, "s", "c", "read", {"path": text_file.name, "offset": minimum, "limit": 2},
                        cwd=text_file.parent)
    assert not result.is_error and result.output.split("\n")[:2] == ["     1\tline 1", "     2\tline 2"]
    assert tools.read(store, "s", "c", path=str(text_file), offset=0).output == tools.read(
        store, "s", "c", path=str(text_file)).output
    wrong = tools.call(store, "s", "c", "read", {"path": "x", "offset": "3"})
    assert wrong.is_error and "must be an integer, not str" in wrong.output


def test_read_empty_file(store, tmp_path):
    (tmp_path / "empty").write_text("")
    assert tools.read(store, "s", "c", path=str(tmp_path / "empty")).output == "(empty file)"


# ------------------------------------------------------------------ webfetch
# Pages served as /html/<name>, for the converter's regressions end to end.
_PAGES = {
    "ol-start": "<html><body><h1>Steps</h1><ol start='a'><li>one</li><li>two</li></ol>"
                "<ol start='2.0'><li>three</li></ol></body></html>",
    # Valid HTML5 that leaves out the optional </head>, </p>, </li>, </body> and </html>.
    "omitted-end-tags": "<!doctype html><html><head><meta charset='utf-8'><title>Release notes</title>"
                        "<body><h1>Release 2.0</h1><p>Breaking change: the config key was renamed.<p>Also:"
                        "<ul><li>faster<li>smaller</ul>",
    # Marked sections html.parser raises AssertionError at.
    "marked-sections": "<p>one<![foo[ hidden ]]>two<![ x >three</p><p>four<![",
    # A Hacker News style layout: a table in a cell, then a cell outside any row.
    "nested-tables": "<html><body><table><tr><td>Story: Rust 2.0 released</td>"
                     "<td><table><tr><td>312 points</td><td>by alice</td></tr></table>posted 3 hours ago</td>"
                     "<td>154 comments</td></tr></table><table><td>lonely cell text</td></table></body></html>",
}


class _Handler(http.server.BaseHTTPRequestHandler):
    ranges: list = []  # the Range header of each request for /partial (None: there was none)

    def log_message(self, *args):  # keep test output clean
        pass

    def send(self, status: int, content_type: str, body: bytes, length: int | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        self.wfile.write(body)

    def stream(self, chunk: bytes, count: int, pause: float = 0.0) -> None:
        """A text body of no declared length: ``chunk`` ``count`` times, ``pause`` seconds apart."""
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            for _ in range(count):
                self.wfile.write(chunk)
                if pause:
                    self.wfile.flush()
                    time.sleep(pause)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client refused the body part way, as it should

    def do_GET(self):  # noqa: N802 - the http.server API
        if self.path == "/page":
            html = ("<html><head><meta charset='iso-8859-1'><script>alert(1)</script><style>p{}</style></head>"
                    "<body><h1>Caf\xe9</h1><p>Read <a href='/doc'>the doc</a>, <em>now</em>.</p>"
                    "<ul><li>one</li><li>two</li></ul><pre>x = 1\n  y</pre>"
                    "<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table></body></html>")
            self.send(200, "text/html; charset=iso-8859-1", html.encode("latin-1"))
        elif self.path == "/big":
            self.send(200, "text/plain", b"x" * (6 * 1024 * 1024))
        elif self.path == "/lying":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "10")
            self.end_headers()
            self.wfile.write(b"0123456789" + b"EXTRA" * 1000)
        elif self.path == "/unbounded":
            self.stream(b"z" * 65536, 6 * 16)
        elif self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/page")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path in ("/to-file", "/to-ftp"):
            self.send_response(302)
            self.send_header("Location", "file:///etc/passwd" if self.path == "/to-file" else "ftp://127.0.0.1/x")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/image":
            self.send(200, "image/png", b"\x89PNG\r\n\x1a\n" + b"\0" * 100)
        elif self.path == "/partial":  # a part of a page, whatever the request asked for
            type(self).ranges.append(self.headers.get("Range"))
            self.send_response(206)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Range", "bytes 0-4/11")
            self.send_header("Content-Length", "5")
            self.end_headers()
            self.wfile.write(b"hello")
        elif self.path == "/to-partial":
            self.send_response(302)
            self.send_header("Location", "/partial")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/json":
            self.send(200, "application/json", json.dumps({"key": "välue"}).encode())
        elif self.path.startswith("/encoded/"):  # a body compressed though the client asked for none
            name = self.path.rsplit("/", 1)[1]
            page = "<p>compressed café</p>".encode() * 50
            packed = {"gzip": gzip.compress(page), "deflate": zlib.compress(page),
                      "rawdeflate": zlib.compress(page, wbits=-15), "bomb": gzip.compress(b"y" * (6 << 20)),
                      "cut": gzip.compress(page)[:-12], "br": page}[name]
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Encoding", {"rawdeflate": "deflate", "bomb": "gzip", "cut": "gzip"}.get(name, name))
            self.send_header("Content-Length", str(len(packed)))
            self.end_headers()
            self.wfile.write(packed)
        elif self.path.startswith("/html/"):
            self.send(200, "text/html; charset=utf-8", _PAGES[self.path[len("/html/"):]].encode())
        elif self.path.startswith("/charset/"):  # names that codecs.lookup takes but are no text codec
            name = self.path.rsplit("/", 1)[1]
            if name == "meta":
                self.send(200, "text/html", '<meta charset="zlib"><p>caf\u00e9</p>'.encode())
            else:
                self.send(200, f"text/plain; charset={name}", "café".encode())
        elif self.path == "/drip":  # a byte every 0.2 s, for two minutes: only a deadline ends the fetch
            self.stream(b"x", 600, pause=0.2)
        else:
            self.send(404, "text/plain", b"missing")


def _serving(handler: type[http.server.BaseHTTPRequestHandler]):
    """An HTTP server on loopback answering with ``handler``: yields its base URL, then stops it."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def server():
    yield from _serving(_Handler)


def test_webfetch_html_as_markdown_text_and_html(store, server):
    markdown = tools.webfetch(store, "s", "c", f"{server}/page")
    assert not markdown.is_error
    assert "# Café" in markdown.output and "[the doc](/doc)" in markdown.output and "*now*" in markdown.output
    assert "- one\n- two" in markdown.output and "```\nx = 1\n  y\n```" in markdown.output
    assert "| k | v |" in markdown.output and "alert" not in markdown.output and "p{}" not in markdown.output
    text = tools.webfetch(store, "s", "c", f"{server}/page", format="text")
    assert "Café" in text.output and "[the doc]" not in text.output and "#" not in text.output
    raw = tools.webfetch(store, "s", "c", f"{server}/page", format="html")
    assert raw.output.startswith("<html>") and "<script>" in raw.output


def test_webfetch_refuses_a_large_body_and_keeps_nothing(store, server):
    for path in ("/big", "/unbounded"):
        result = tools.webfetch(store, "s", "c", f"{server}{path}")
        assert result.is_error and "refused" in result.output and "limit" in result.output
    assert store.resources("s") == []


def test_webfetch_lying_content_length_is_held_to_it(store, server):
    result = tools.webfetch(store, "s", "c", f"{server}/lying")
    assert result.output == "0123456789"


def test_webfetch_follows_http_redirects_only(store, server):
    assert "# Café" in tools.webfetch(store, "s", "c", f"{server}/redirect").output
    for path in ("/to-file", "/to-ftp"):
        refused = tools.webfetch(store, "s", "c", server + path)
        assert refused.is_error and "redirect" in refused.output.lower()


@pytest.mark.parametrize(("url", "fragment"), [("/image", "not text"), ("/missing", "HTTP 404")])
def test_webfetch_refusals(store, server, url, fragment):
    result = tools.webfetch(store, "s", "c", server + url)
    assert result.is_error and fragment in result.output


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "rawdeflate"])
def test_webfetch_undoes_a_content_encoding(store, server, encoding):
    result = tools.webfetch(store, "s", "c", f"{server}/encoded/{encoding}", format="text")
    assert not result.is_error, result.output
    assert result.output.startswith("compressed café")


@pytest.mark.parametrize(("encoding", "fragment"), [("bomb", "limit"), ("cut", "ends before"), ("br", "'br'")])
def test_webfetch_refuses_an_encoded_body_it_cannot_keep(store, server, encoding, fragment):
    result = tools.webfetch(store, "s", "c", f"{server}/encoded/{encoding}")
    assert result.is_error and fragment in result.output, result.output
    assert store.resources("s") == []


@pytest.mark.parametrize("charset", ["hex", "idna", "base64", "meta"])
def test_webfetch_a_charset_that_is_no_text_codec_is_passed_over(store, server, charset):
    result = tools.webfetch(store, "s", "c", f"{server}/charset/{charset}", format="text")
    assert not result.is_error and "café" in result.output, result.output


def test_webfetch_timeout_bounds_the_whole_body(store, server):
    started = time.monotonic()
    result = tools.webfetch(store, "s", "c", f"{server}/drip", timeout=1)
    assert result.is_error and "did not end within 1 seconds" in result.output, result.output
    assert time.monotonic() - started < 30  # a liveness bound: the drip goes on for 120 s


def test_webfetch_json_is_text(store, server):
    assert json.loads(tools.webfetch(store, "s", "c", f"{server}/json").output) == {"key": "välue"}


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/x", "not a url", "http://"])
def test_webfetch_only_http(store, url):
    result = tools.webfetch(store, "s", "c", url)
    assert result.is_error and "http" in result.output


@pytest.mark.parametrize("url", ["http://[::1", "http://[::1/x", "https://[zz]/", "http://127.0.0.1:99999/",
                                 "http://[::1]:port/"])
def test_webfetch_malformed_url_is_a_tool_error(store, url):
    """Regression (issue 9, item 10): ``http://[::1`` raised ValueError out of the tool.
    Protects "Errors for the model are one line": a tool returns an error, never raises."""
    for result in (tools.webfetch(store, "s", "c", url, timeout=5),
                   tools.call(store, "s", "c", "webfetch", {"url": url})):
        assert result.is_error and "\n" not in result.output


def test_webfetch_bad_format(store, server):
    assert tools.webfetch(store, "s", "c", f"{server}/page", format="pdf").is_error


def test_webfetch_an_ol_start_that_is_no_integer_is_read_as_browsers_read_it(store, server):
    """Regression: ``int(start)`` raised ValueError out of tools.call for start="a"."""
    for fmt in ("markdown", "text"):
        result = tools.call(store, "s", "c", "webfetch", {"url": f"{server}/html/ol-start", "format": fmt})
        assert not result.is_error and "1. one\n2. two" in result.output and "2. three" in result.output


@pytest.mark.parametrize(
    "start, first",
    [("a", 1), ("", 1), ("2.0", 2), (" +3 items", 3), ("-2", -2), ("007", 7), ("9" * 5000, 1),
     ("2147483647", 2147483647), ("2147483648", 1), ("-2147483649", 1), ("\u0663", 1)],
)
def test_html_ol_start_takes_leading_digits_and_ignores_the_rest(start, first):
    assert html_to_markdown(f"<ol start='{start}'><li>x</li><li>y</li></ol>") == f"{first}. x\n{first + 1}. y\n"
    assert html_to_markdown("<ol start><li>x</li></ol>") == "1. x\n"


def test_webfetch_a_page_that_leaves_out_optional_end_tags_keeps_its_body(store, server):
    """Regression: without </head> the dropped head never ended, so the page came back empty."""
    markdown = tools.webfetch(store, "s", "c", f"{server}/html/omitted-end-tags").output
    assert markdown == "# Release 2.0\n\nBreaking change: the config key was renamed.\n\nAlso:\n\n- faster\n- smaller\n"
    text = tools.webfetch(store, "s", "c", f"{server}/html/omitted-end-tags", format="text").output
    assert text == "Release 2.0\n\nBreaking change: the config key was renamed.\n\nAlso:\n\n• faster\n• smaller\n"


@pytest.mark.parametrize(
    "html, markdown",
    [  # the head ends at a tag that cannot be in it, or at text; its title and scripts stay dropped
     ("<head><title>T</title><script>s()</script><p>para", "para\n"),
     ("<head><meta charset=utf-8>Hello<p>x", "Hello\n\nx\n"),
     ("<head><noscript><link rel=x></noscript><style>p{}</style></head><body>ok", "ok\n"),
     ("<head><noscript><body>ok", "ok\n"),
     ("<title>T</title><p>body", "body\n"),
     # a <head> past the head is ignored, not dropped to the end
     ("<body><p>main</p><head><meta name=x><p>more", "main\n\nmore\n"),
     # an <svg> ends at the tags HTML5 breaks out of it with
     ("<p>a<svg><text>label</text><p>after", "a\n\nafter\n"),
     ("<svg><foreignObject><p>inside</p></foreignObject><div>out", "out\n"),
     ("<svg><font color=red>red</font>", "red\n"),
     # a dropped element never closed keeps its content rather than empty the page
     ("<body><noscript>Enable JS<p>Content", "Enable JS\n\nContent\n"),
     ("<p>a<template>t<p>b", "at\n\nb\n"),
     ("<head><title>Title<body><p>rest", "Title\n\nrest\n"),
     ("<div><svg><section>s</div>z", "s\n\nz\n"),
     # closed ones stay dropped, and script and style are raw text to their end tag
     ("<p>x<template>t</template>y<object>o</object>z<iframe>f</iframe>", "xyz\n"),
     ("<p>a<script>if (a<b) {}</p></script>b<style>p{}</style>c", "abc\n"),
     ],
)
def test_html_implied_and_missing_end_tags_of_dropped_elements(html, markdown):
    assert html_to_markdown(html) == markdown


def test_webfetch_a_marked_section_html_parser_cannot_read_is_a_bogus_comment(store, server):
    """Regression: ``<![foo[`` raised html.parser's AssertionError out of tools.call."""
    result = tools.call(store, "s", "c", "webfetch", {"url": f"{server}/html/marked-sections"})
    assert not result.is_error and result.output == "onetwothree\n\nfour<![\n"
    assert html_to_text("<![if !IE]>a<![endif]>b<![CDATA[c]]>d") == "abd\n"


def test_webfetch_a_table_in_a_cell_keeps_every_cell(store, server):
    """Regression: one current row and cell for all tables, so an inner <tr> or </td>
    threw away the outer row's cells; a <td> outside a <tr> was lost too."""
    markdown = tools.webfetch(store, "s", "c", f"{server}/html/nested-tables").output
    assert markdown == ("| Story: Rust 2.0 released | 312 points by alice posted 3 hours ago | 154 comments |\n"
                        "| --- | --- | --- |\n\n| lonely cell text |\n| --- |\n")
    text = tools.webfetch(store, "s", "c", f"{server}/html/nested-tables", format="text").output
    assert text == "Story: Rust 2.0 released\t312 points by alice posted 3 hours ago\t154 comments\n\nlonely cell text\n"


@pytest.mark.parametrize(
    "html, markdown",
    [  # the end tags HTML lets a page leave out: </td>, </th>, </tr>, </tbody>, </table>
     ("<table><tr><th>k<th>v<tr><td>a<td>1<tbody><tr><td>b<td>2</table>after",
      "| k | v |\n| --- | --- |\n| a | 1 |\n| b | 2 |\n\nafter\n"),
     ("<table><tr><td>a<td>b", "| a | b |\n| --- | --- |\n"),
     # a table among another's rows, not in a cell, ends that one, as HTML5 parses it
     ("<table><tr><td>a</td></tr><table><tr><td>b</td></tr></table></table>tail",
      "| a |\n| --- |\n\n| b |\n| --- |\n\ntail\n"),
     # an inner table left open takes the outer row's later cells; none is lost
     ("<table><tr><td>a<table><tr><td>b</td></tr></td><td>c</td></tr></table>", "| a b c |\n| --- |\n"),
     ("<table><caption>Prices</caption><tr><td>x</td></tr></table>", "Prices\n| x |\n| --- |\n"),
     ("<p>loose <td>cell</td> and <tr>row</tr> tags</p>", "loose cell and row tags\n"),
     ],
)
def test_html_tables_with_omitted_or_stray_tags_keep_their_text(html, markdown):
    assert html_to_markdown(html) == markdown


def test_webfetch_unreachable(store):
    result = tools.webfetch(store, "s", "c", "http://127.0.0.1:1/", timeout=5)
    assert result.is_error and "could not fetch" in result.output


# ------------------------------------------------------------------ websearch
def test_websearch(store):
    assert tools.websearch(store, "s", "c", "q", provider=lambda q: f"results for {q}").output == "results for q"
    assert tools.websearch(store, "s", "c", "q", provider=lambda q: "é".encode()).output == "é"


def test_websearch_cuts_at_256_kib_with_a_note(store):
    answer = "é" * 200_000  # 400,000 bytes
    result = tools.websearch(store, "s", "c", "q", provider=lambda q: answer)
    stored = (store.directory / f"{result.resource.id}.txt").read_bytes()
    assert len(stored) <= 256 * 1024 and stored.endswith(b"[search results cut at 262144 of 400000 bytes]")
    assert stored.decode()  # the cut split no character
    assert result.metadata == {"bytes": 400000, "cut": True, "lines": 3, "next_offset": result.metadata["next_offset"]}


@pytest.mark.parametrize("provider", [None, lambda q: 1 / 0, lambda q: 42])
def test_websearch_failures(store, provider):
    result = tools.websearch(store, "s", "c", "q", provider=provider)
    assert result.is_error


# ------------------------------------------------------------------ skill
@pytest.fixture
def skill_roots(tmp_path):
    first, second = tmp_path / "skills-a", tmp_path / "skills-b"
    (first / "pdf").mkdir(parents=True)
    (first / "pdf" / "SKILL.md").write_text("---\nname: pdf-tools\ndescription: Work with PDFs\n---\n# PDF\nUse it.")
    (second / "plain").mkdir(parents=True)
    (second / "plain" / "SKILL.md").write_text("# No front matter\n")
    (second / "empty").mkdir()
    return [first, str(second)]


def test_skill_loads_by_front_matter_name(store, skill_roots):
    result = tools.skill(store, "s", "c", "pdf-tools", roots=skill_roots)
    assert not result.is_error and result.output.endswith("# PDF\nUse it.")
    assert result.metadata["description"] == "Work with PDFs"
    assert tools.skill(store, "s", "c", "plain", roots=skill_roots).output.endswith("# No front matter\n")


@pytest.mark.parametrize("data", [
    b"\xef\xbb\xbf---\nname: pdf-tools\ndescription: Fill PDF forms\xe2\x80\xa8by field\n---\n# PDF\n",
    b"---\r\nname: pdf-tools\r\ndescription: Fill PDF forms\xe2\x80\xa8by field\r\n---\r\n# PDF\r\n",
    b"\xef\xbb\xbf---\r\nname: 'pdf-tools'\r\ndescription: Fill PDF forms\xe2\x80\xa8by field\r\n---\r\n# PDF\r\n",
], ids=["bom", "crlf", "bom-crlf"])
def test_skill_front_matter_after_a_byte_order_mark_or_with_crlf(store, tmp_path, data):
    """Regression (f08): a SKILL.md saved with a UTF-8 byte-order mark lost its front matter (listed
    under its folder's name, no description); a U+2028 inside a value cut it short."""
    (tmp_path / "pdf").mkdir()
    (tmp_path / "pdf" / "SKILL.md").write_bytes(data)
    result = tools.skill(store, "s", "c", "pdf-tools", roots=[tmp_path])
    assert not result.is_error, result.output
    assert result.metadata["description"] == "Fill PDF forms\u2028by field"
    assert "\ufeff" not in result.output and "\n\n---" in result.output


def test_unknown_skill_lists_the_available_ones(store, skill_roots):
    result = tools.skill(store, "s", "c", "nope", roots=skill_roots)
    assert result.is_error and "pdf-tools" in result.output and "plain" in result.output
    assert tools.skill(store, "s", "c", "pdf", roots=None).is_error


# ------------------------------------------------------------------ grep
@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "tree"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("import os\ndef main():\n    return TODO\n")
    (root / "src" / "util.txt").write_text("todo: nothing\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("TODO in git\n")
    (root / "image.bin").write_bytes(b"\0\0TODO\0")
    (root / "long.txt").write_text("TODO " + "w" * 3000 + "\n")
    return root


@pytest.fixture(params=["python", "ripgrep"])
def engine(request, monkeypatch):
    if request.param == "python":
        monkeypatch.setattr(grep_module, "_ripgrep", lambda: None)
    elif shutil.which("rg") is None:
        pytest.skip("rg is not on PATH")
    return request.param


def test_grep_files(store, tree, engine):
    result = tools.grep(store, "s", "c", "TODO", cwd=tree)
    lines = result.output.split("\n")
    assert lines[0] == ("long.txt:1:TODO " + "w" * 3000)[:2000] + "… [line cut]"  # each result line is cut
    assert lines[1:] == ["src/app.py:3:    return TODO"]
    insensitive = tools.grep(store, "s", "c", "todo", path="src", ignore_case=True, cwd=tree)
    assert insensitive.output.split("\n") == ["src/app.py:3:    return TODO", "src/util.txt:1:todo: nothing"]
    globbed = tools.grep(store, "s", "c", "o", glob="*.txt", path="src", cwd=tree)
    assert globbed.output == "src/util.txt:1:todo: nothing"


def test_grep_limits_and_counts_the_rest(store, tmp_path, engine):
    (tmp_path / "many.txt").write_text("hit\n" * 250)
    result = tools.grep(store, "s", "c", "hit", cwd=tmp_path, max_matches=10)
    assert result.output.count("\n") == 10 and result.output.endswith("[240 more matches not shown; narrow "
                                                                        "the pattern, path or glob]")
    assert result.metadata["matches"] == 250


def test_grep_no_match_and_bad_input(store, tree, engine):
    assert tools.grep(store, "s", "c", "absent-word", cwd=tree).output == "no matches for 'absent-word'"
    assert tools.grep(store, "s", "c", "(unclosed", cwd=tree).is_error
    assert tools.grep(store, "s", "c", "x", path="missing", cwd=tree).is_error
    assert tools.grep(store, "s", "c", "x", max_matches=0, cwd=tree).is_error


@pytest.mark.skipif(shutil.which("rg") is None, reason="rg is not on PATH")
def test_grep_files_rg_splits_its_results_on_newlines_only(store, tmp_path, monkeypatch):
    """Regression (f09): rg's output was split with str.splitlines(), so a matched line holding
    \\r, \\x0b, \\x0c, \\x1c-\\x1e, \\x85, U+2028 or U+2029 became two result lines (the second
    without its file:line:) and was counted twice; the Python search counted it once."""
    breaks = ["\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
    (tmp_path / "breaks.txt").write_text("".join(f"before{mark}error {index}\n" for index, mark in enumerate(breaks)),
                                         encoding="utf-8", newline="")
    (tmp_path / "crlf.txt").write_bytes(b"one error\r\ntwo\r\n")
    with_rg = tools.grep(store, "s", "c", "error", cwd=tmp_path)
    monkeypatch.setattr(grep_module, "_ripgrep", lambda: None)
    in_python = tools.grep(store, "s", "c", "error", cwd=tmp_path)
    assert with_rg.metadata["matches"] == in_python.metadata["matches"] == len(breaks) + 1
    assert with_rg.output == in_python.output
    assert with_rg.output.split("\n")[-1] == "crlf.txt:1:one error"


def test_grep_files_results_keep_their_place_through_the_cr_view(store, tmp_path, engine):
    """Regression (f10): the store's cr view shows only what follows a line's last \\r, so a matched
    line holding a redraw reached the model without its file:line:. The \\r is now written out."""
    (tmp_path / "build.log").write_bytes(b"ok\nDownloading 10%\rDownloading 100% error: checksum mismatch\r\n")
    result = tools.grep(store, "s", "c", "error", cwd=tmp_path)
    assert result.output == "build.log:2:Downloading 10%\\rDownloading 100% error: checksum mismatch"
    # Over the limits too: the stored results and the preview of them keep every prefix.
    (tmp_path / "many.log").write_bytes(b"".join(b"step %d 0%%\rstep %d 100%% error %s\n" % (i, i, b"x" * 80)
                                                 for i in range(900)))
    many = tools.call(store, "s", "c", "grep", {"pattern": "error", "path": "many.log", "max_matches": 1000},
                      cwd=tmp_path)
    assert many.truncated and many.metadata["matches"] == 900
    shown = [line for line in many.output.split("\n") if "error x" in line]  # head, signal lines, tail
    assert len(shown) > 10 and all("many.log:" in line and "\\rstep" in line for line in shown)
    stored = store.read("s", many.resource.uri, offset=0).content
    assert stored.split("\n")[0] == "many.log:1:step 0 0%\\rstep 0 100% error " + "x" * 80


@pytest.mark.parametrize(("pattern", "expected"), [
    (r"\d+(?=%)", "app.log:2:load at 97%"), (r"(?<!load )at \d", "app.log:3:wait at 5s"),
    (r"(\w)\1", "app.log:4:all good"), (r"good\Z", "app.log:4:all good"), (r"(?>\d+)s", "app.log:3:wait at 5s")])
def test_grep_files_the_pattern_is_pythons_with_either_engine(store, tmp_path, engine, pattern, expected):
    """Regression (f12): the pattern was checked with Python's re but given to rg's Rust engine,
    which refuses look-around, back-references, \\Z and atomic groups: grep failed with
    "rg failed: and look-around." instead of the matches the Python search gives."""
    (tmp_path / "app.log").write_text("retry 3 of 5\nload at 97%\nwait at 5s\nall good\n")
    result = tools.grep(store, "s", "c", pattern, cwd=tmp_path)
    assert not result.is_error and result.output == expected and result.metadata["matches"] == 1


def test_grep_files_rg_failure_is_whole_and_one_line(store, tmp_path, monkeypatch):
    """Regression (f12): only the last line of rg's message reached the model. (A glob rg refuses,
    the way this was once seen, is now refused before rg runs: see the red team B f06 test.)"""
    fake = tmp_path / "rg"
    fake.write_text("#!/bin/sh\necho \"error parsing something: it is wrong\" >&2\necho \"a second line\" >&2\n"
                    "exit 2\n")
    fake.chmod(0o755)
    monkeypatch.setattr(grep_module, "_ripgrep", lambda: str(fake))
    (tmp_path / "a.txt").write_text("x\n")
    result = tools.grep(store, "s", "c", "x", cwd=tmp_path)
    assert result.is_error and "\n" not in result.output
    assert result.output == ("rg failed with exit status 2: error parsing something: it is wrong a second line; "
                             "check the path and glob")


def test_grep_files_with_a_backtracking_pattern_ends(store, tmp_path, engine, monkeypatch):
    """Regression (issue 19, item 13): without rg, Python's re matched in this process with no
    bound; the matching now runs in a worker within a time budget."""
    monkeypatch.setattr(grep_module, "TIME_LIMIT", 0.5)
    (tmp_path / "evil.txt").write_text("x\n" * 100 + "a" * 34 + "b\n")
    result = tools.grep(store, "s", "c", "(a+)+$", cwd=tmp_path)
    if engine == "python":
        assert result.is_error and result.output.startswith("pattern too slow: ") and "\n" not in result.output
    else:  # rg's engine is linear-time
        assert result.output == "no matches for '(a+)+$'"
    assert tools.grep(store, "s", "c", "a+b$", cwd=tmp_path).output == "evil.txt:101:" + "a" * 34 + "b"


def test_grep_never_opens_a_fifo(store, tmp_path, engine):
    """Regression (issue 9, item 9): a FIFO in the searched folder hung the Python engine for
    ever. Protects "Commands run through overspill never hold ..." — a tool call returns."""
    (tmp_path / "a.txt").write_text("needle\n")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result = returns_without_blocking_on(fifo, lambda: tools.grep(store, "s", "c", "needle", cwd=tmp_path), "grep")
    assert result.output == "a.txt:1:needle"


def returns_without_blocking_on(fifo, call, what: str):
    """``call()``'s result; fails the test if it blocked opening ``fifo`` (released so its thread can end)."""
    results = []
    worker = threading.Thread(target=lambda: results.append(call()), daemon=True)
    worker.start()
    worker.join(120)  # a guard against a hang, not a timing assertion
    if worker.is_alive():
        with open(fifo, "wb"):  # release the blocked reader so the thread can end
            pass
        worker.join()
        pytest.fail(f"{what} opened a FIFO and blocked on it")
    return results[0]


def test_grep_of_proc_self_does_not_hang(subprocess_env, tmp_path):
    """Regression (issue 9, item 9): ``path: /proc/self`` opened /proc/self/fd/0 (a pipe held
    open by the parent) and never returned. Only regular files are searched."""
    code = ("import importlib, sys\n"
            "from overspill import ToolOutputStore, tools\n"
            "importlib.import_module('overspill.tools.grep')._ripgrep = lambda: None\n"
            "with ToolOutputStore(sys.argv[1], durable=False) as store:\n"
            "    result = tools.grep(store, 's', 'c', 'no-such-text-zq', path='/proc/self')\n"
            "print(result.output)\n")
    stdin_read, stdin_write = os.pipe()  # the write end stays open here: a read of fd 0 would block
    try:
        child = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdin=stdin_read,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=subprocess_env, text=True)
        try:
            output, errors = child.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            pytest.fail("grep of /proc/self hung")
    finally:
        os.close(stdin_read)
        os.close(stdin_write)
    assert child.returncode == 0, errors
    assert output.strip() == "no matches for 'no-such-text-zq'"


def test_grep_a_stored_output_gives_offsets_for_read(store):
    text = "".join(f"line {i}\n" for i in range(100_000)) + "ERROR: disk full\n" + "tail\n" * 10
    resource = store.write("s", "c", text)
    result = tools.grep(store, "s", "c", r"^ERROR", resource=resource.uri)
    found, count = result.output.split("\n")
    offset_text, line = found.split(":", 1)
    assert line == "ERROR: disk full" and count == "[1 matching line]"
    page = tools.read(store, "s", "c", resource=resource.uri, offset=int(offset_text), limit=16)
    assert page.output.startswith("ERROR: disk full")
    many = tools.grep(store, "s", "c", r"line 9999\d$", resource=resource.uri, max_matches=3)
    assert many.metadata["matches"] == 10 and "7 not listed" in many.output
    assert tools.grep(store, "other", "c", "x", resource=resource.uri).is_error


# ------------------------------------------------------------------ schemas and call
@pytest.mark.parametrize("style", ["openai", "anthropic"])
def test_schemas_describe_the_tools_and_the_paging_protocol(style):
    definitions = tools.schemas(style)
    if style == "openai":
        definitions = [definition["function"] for definition in definitions]
        key = "parameters"
    else:
        key = "input_schema"
    assert [d["name"] for d in definitions] == ["bash", "read", "webfetch", "websearch", "skill", "grep", "wait",
                                                "kill", "jobs"]
    for definition in definitions:
        assert definition[key]["type"] == "object" and definition[key]["additionalProperties"] is False
    bash_description = definitions[0]["description"]
    assert "tool-output://" in bash_description and "offset" in bash_description and "read" in bash_description
    json.dumps(definitions)  # serialisable as they are
    with pytest.raises(ValueError):
        tools.schemas("gemini")


def test_schemas_name_the_limits_the_host_applies():
    from overspill import Limits

    default = tools.schemas("anthropic")
    assert "over 2000 lines or 50 KB" in default[0]["description"]
    assert tools.schemas("anthropic", limits=Limits()) == default
    sized = tools.schemas("anthropic", limits=Limits(max_lines=400, max_bytes=8192))
    assert "over 400 lines or 8 KB" in sized[0]["description"] and "2000" not in sized[0]["description"]
    assert "over 10 lines or 1000 bytes" in tools.schemas("openai", limits=Limits(10, 1000))[5]["function"]["description"]
    assert [d["input_schema"] for d in sized] == [d["input_schema"] for d in default]
    with pytest.raises(TypeError):
        tools.schemas("anthropic", limits=(400, 8192))


def test_call_validates_and_dispatches(store, tmp_path, skill_roots):
    assert tools.call(store, "s", "c", "bash", '{"command": "echo hi"}', cwd=tmp_path, roots=skill_roots).output == "hi"
    assert tools.call(store, "s", "c", "skill", {"name": "pdf-tools"}, roots=skill_roots).output.endswith("Use it.")
    found = tools.call(store, "s", "c", "websearch", {"query": "x"}, provider=lambda q: "ok", cwd=tmp_path)
    assert found.output == "ok"
    assert tools.call(store, "s", "c", "websearch", {"query": "x"}).is_error  # no provider configured


@pytest.mark.parametrize(
    ("name", "arguments", "fragment"),
    [("nope", {}, "unknown tool"), ("bash", {}, "needs the argument 'command'"),
     ("bash", {"command": "x", "shell": "zsh"}, "has no argument 'shell'"),
     ("bash", {"command": ["ls"]}, "must be a string"), ("read", {"path": "x", "offset": True}, "integer"),
     ("read", {"path": "x", "limit": 0}, "at least 1"), ("webfetch", {"url": "http://x", "format": "pdf"}, "one of"),
     ("grep", {"pattern": "x", "max_matches": 5000}, "at most"), ("bash", "{not json", "not valid JSON"),
     ("bash", "[1, 2]", "JSON object"), ("bash", {"command": "x", "timeout": 0}, "more than 0")],
)
def test_call_rejects_arguments_that_do_not_fit(store, name, arguments, fragment):
    result = tools.call(store, "s", "c", name, arguments)
    assert result.is_error and fragment in result.output


@pytest.mark.parametrize(("name", "arguments", "fragment"), [
    ("read", {"path": "a\x00b"}, "path holds a NUL character"),
    ("read", {"path": "\ud800.txt"}, "path holds a lone surrogate"),
    ("grep", {"pattern": "e", "glob": "*\x00"}, "glob holds a NUL character"),
    ("grep", {"pattern": "e", "glob": "\ud800"}, "glob holds a lone surrogate"),
    ("grep", {"pattern": "e", "path": "a\x00b"}, "path holds a NUL character"),
    ("grep", {"pattern": "error", "path": "x" * 5000}, "cannot search xxx"),
    ("bash", {"command": "echo \ud800"}, "command holds a lone surrogate")])
def test_call_answers_strings_the_os_cannot_take_with_one_line(store, tmp_path, name, arguments, fragment):
    """Red team f03: a NUL or a lone surrogate in read's path or grep's glob raised ValueError or
    UnicodeEncodeError out of tools.call, and a 5000-character grep path OSError ENAMETOOLONG."""
    (tmp_path / "a.txt").write_text("hello error\n")
    result = tools.call(store, "s", "c", name, arguments, cwd=tmp_path)
    assert result.is_error and fragment in result.output and "\n" not in result.output


@pytest.mark.parametrize("pattern", ["error\x00", "\ud800", "hel\x00|error"])
def test_grep_files_takes_a_pattern_rg_cannot_as_python_does(store, tmp_path, engine, pattern):
    """Red team f03: a NUL or a lone surrogate in the pattern went into rg's argv (ValueError,
    UnicodeEncodeError). The pattern is Python's re either way: such a one is searched in Python."""
    (tmp_path / "a.txt").write_text("hello error\n")
    result = tools.call(store, "s", "c", "grep", {"pattern": pattern}, cwd=tmp_path)
    assert not result.is_error
    assert result.output == ("a.txt:1:hello error" if "|" in pattern else f"no matches for {pattern!r}")


@pytest.mark.parametrize("time_limit", [float("inf"), 10 ** 400])
def test_search_resource_with_an_endless_time_limit_searches(store, time_limit):
    """Red team f07: time_limit=10**400 raised OverflowError (float()), and inf too (the poll's
    timeout and the worker's CPU limit take no infinity): both mean no limit."""
    stored = store.truncate("s", "c", "a\n" * 100_000)
    assert grep_module.search_resource(store, "s", stored.resource.uri, "a", time_limit=time_limit).total == 100_000


@pytest.mark.parametrize("text", ["[" * 100_000, '{"resource": ' + "[" * 100_000, b"[" * 100_000])
def test_call_answers_deeply_nested_arguments_text_as_not_json(store, text):
    """Red team f04: json.loads raises RecursionError (not a ValueError) on deep nesting, and
    tools.call let it out; it is one more "not valid JSON" answer."""
    result = tools.call(store, "s", "c", "read", text)
    assert result.is_error and result.output.startswith("the arguments of read are not valid JSON")


def _integer_arguments() -> list[tuple[str, str]]:
    return [(spec["name"], key) for spec in tools.schemas("anthropic")
            for key, rule in spec["input_schema"]["properties"].items() if rule["type"] == "integer"]


def test_integer_arguments_written_with_a_zero_fraction_are_integers(store, tmp_path):
    """Regression (f11): JSON Schema (draft 6 on) counts 3890.0 as an integer, and models write it
    so, but call() refused it; the tool now gets the int."""
    text = "".join(f"line {i}\n" for i in range(100_000))
    stored = store.truncate("s", "c", text)
    page = tools.call(store, "s", "c", "read",
                      '{"resource": "%s", "offset": %d.0, "limit": 20.0}' % (stored.resource.uri, stored.next_offset))
    assert not page.is_error and page.metadata["offset"] == stored.next_offset
    assert type(page.metadata["offset"]) is int and page.metadata["next"] == stored.next_offset + 20
    assert page.output.startswith(text[stored.next_offset:][:20] + "\n\n[")
    (tmp_path / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    lines = tools.call(store, "s", "c", "read", {"path": "notes.txt", "offset": 2.0, "limit": 1.0}, cwd=tmp_path)
    assert not lines.is_error and "beta" in lines.output and "gamma" not in lines.output
    found = tools.call(store, "s", "c", "grep", {"pattern": r"^line 9999\d$", "resource": stored.resource.uri,
                                                 "max_matches": 2.0, "context": 1.0})
    assert not found.is_error and found.output.endswith("[10 matching lines; 8 not listed: narrow the pattern or "
                                                        "raise max_matches]")
    handle = tools.call(store, "s", "c", "bash", {"command": "echo ready; sleep 0.5", "background": True,
                                                  "yield_after": 0})
    assert handle.metadata["state"] == "running", handle.output
    waited = tools.call(store, "s", "c", "wait", {"resource": handle.resource.uri, "timeout": 30, "offset": 0.0})
    assert not waited.is_error and "ready" in waited.output


@pytest.mark.parametrize(("name", "key"), _integer_arguments())
def test_every_integer_argument_takes_a_zero_fraction_and_refuses_the_rest(store, monkeypatch, name, key):
    """Regression (f11): every integer argument of every tool reaches the tool as an int when
    written 7.0; 7.5, a bool, NaN and the infinities are still refused, in one line."""
    received = {}
    schemas_module = importlib.import_module("overspill.tools.schemas")
    monkeypatch.setitem(schemas_module._FUNCTIONS, name, lambda *args, **kwargs: received.update(kwargs))
    spec = next(spec for spec in tools.schemas("anthropic") if spec["name"] == name)["input_schema"]
    required = {field: {"string": "x", "number": 1}[spec["properties"][field]["type"]] for field in spec["required"]}
    tools.call(store, "s", "c", name, {**required, key: 7.0})
    assert received[key] == 7 and type(received[key]) is int
    for wrong, shown in [(7.5, "7.5"), (True, "bool"), (float("nan"), "nan"), (float("inf"), "inf"),
                         (float("-inf"), "-inf"), ("7", "str")]:
        result = tools.call(store, "s", "c", name, {**required, key: wrong})
        assert result.is_error and result.output == f"{name}'s argument {key!r} must be an integer, not {shown}"
    refused = tools.call(store, "s", "c", name, '{"%s": NaN}' % key)
    assert refused.is_error and "\n" not in refused.output


def test_a_multi_megabyte_page_converts_whole():
    """Regression: the converter re-joined its whole output per text node, so a
    2 MB page took minutes; it now looks only at the end of what it wrote."""
    html = "<html><body>" + "<p>Some <b>bold</b> and a <a href='/x'>link</a>.</p>" * 40_000 + "</body></html>"
    markdown = html_to_markdown(html)
    assert markdown.count("Some **bold** and a [link](/x).") == 40_000
    assert "\n\n\n" not in markdown


def test_bash_storage_failure_is_a_tool_error_with_the_preview(store):
    shutil.rmtree(store.directory)
    store.directory.write_text("a file where the managed folder was")
    result = tools.bash(store, "s", "c", "seq 1 1000000; exit 3")
    assert result.is_error and result.resource is None and result.truncated
    assert result.output.startswith("1\n2\n") and "\n1000000\n" in result.output
    assert "[the output could not be kept: " in result.output and result.output.endswith("[exit code 3]")
    assert result.metadata["stored_bytes"] == 0 and result.metadata["output_bytes"] == 6888896
    assert result.metadata["storage_error"]


def test_schemas_name_the_command_timeout_the_host_applies():
    default = tools.schemas("anthropic")
    bash_timeout = default[0]["input_schema"]["properties"]["timeout"]["description"]
    assert bash_timeout == "Seconds before the command is stopped (default 120)."
    assert tools.schemas("anthropic", timeout=120) == default
    longer = tools.schemas("openai", timeout=600)[0]["function"]["parameters"]["properties"]["timeout"]
    assert longer["description"] == "Seconds before the command is stopped (default 600)."
    with pytest.raises(ValueError):
        tools.schemas("anthropic", timeout=0)
    with pytest.raises(TypeError):
        tools.schemas("anthropic", timeout="600")


# ------------------------------------------------------------------ issue 19 (defects-b items)
def test_bash_names_a_working_folder_that_does_not_exist(store, tmp_path):
    """Regression (issue 19, item 12): "could not run the command: No such file or directory"."""
    missing = tools.bash(store, "s", "c", "true", cwd=tmp_path / "missing")
    assert missing.is_error and f"the working folder {tmp_path / 'missing'} does not exist" in missing.output
    (tmp_path / "a file").write_text("x")
    not_a_folder = tools.bash(store, "s", "c", "true", cwd=tmp_path / "a file")
    assert not_a_folder.is_error and "is not a folder" in not_a_folder.output


def test_one_line_is_singular_in_the_marker_and_the_signal_header(store):
    """Regression (issue 19, item 12): "[1 lines ..." and "(N bytes, 1 lines in all)"."""
    one_line = store.truncate("s", "c", "x" * 100_000)
    assert "bytes, 1 line in all)" in one_line.content and "1 lines" not in one_line.content
    text = "".join(f"row {i}\n" for i in range(5000)).replace("row 2500\n", "error: the one bad row\n")
    flagged = store.truncate("s", "c", text)
    assert "[1 line of the omitted part looks like an error or a warning; by byte offset:]" in flagged.content


def test_grep_at_its_match_cap_does_not_say_raise_it(store):
    """Regression (issue 19, item 8): at 1,000 listed (the schema's cap) the tool
    still told the model to "raise max_matches"."""
    uri = store.write("s", "c", "".join(f"{i}\n" for i in range(5000))).uri
    capped = tools.call(store, "s", "c", "grep", {"pattern": ".", "resource": uri, "max_matches": 1000})
    assert "4000 not listed: narrow the pattern" in capped.output and "raise max_matches" not in capped.output
    below = tools.call(store, "s", "c", "grep", {"pattern": ".", "resource": uri, "max_matches": 10})
    assert below.output.endswith("not listed: narrow the pattern or raise max_matches]")
    schema = next(d for d in tools.schemas("anthropic") if d["name"] == "grep")["input_schema"]
    assert schema["properties"]["max_matches"]["maximum"] == 1000


def test_read_at_or_past_the_end_is_an_empty_last_page(store):
    """Regression (issue 19, item 10): one rule everywhere: an empty page with no next."""
    resource = store.write("s", "c", "abcdefghij" * 10)
    for offset in (100, 101, 10**12):
        page = store.read("s", resource.uri, offset=offset)
        assert (page.content, page.offset, page.next, page.truncated) == ("", 100, None, False)
        result = tools.read(store, "s", "c", resource=resource.uri, offset=offset)
        assert not result.is_error and not result.truncated
        assert result.metadata["next"] is None and result.metadata["offset"] == 100
        assert result.output == (f"[offset {offset} is at or past the end of {resource.uri}, which has 100 bytes: "
                                 "nothing more to read]")


def test_read_inside_the_last_character_says_so(store):
    """Regression (f17): an offset inside the last character (its page starts where the character
    ends, at the end) was reported "at or past the end ... which has S bytes", although it is
    before S. The page is unchanged: empty, at S, no next."""
    data = ("x" * 60000 + "\nresult: ok \U0001F600").encode()
    resource = store.write("s", "c", data)
    for offset in range(len(data) - 3, len(data)):
        result = tools.read(store, "s", "c", resource=resource.uri, offset=offset)
        assert not result.is_error and not result.truncated
        assert result.metadata["offset"] == len(data) and result.metadata["next"] is None
        assert result.output == (f"[offset {offset} is inside the last character of {resource.uri}, which ends at "
                                 f"byte {len(data)}, the end: nothing more to read]")
    before = tools.read(store, "s", "c", resource=resource.uri, offset=len(data) - 4)
    assert before.output == "\U0001F600" and before.metadata["next"] is None


def test_read_describes_a_binary_page_instead_of_decoding_it(store):
    """Regression (issue 19, item 3): a binary resource's page was text full of U+FFFD."""
    data = bytes(range(256)) * 400
    resource = store.write("s", "c", data, mime="application/octet-stream")
    first = tools.read(store, "s", "c", resource=resource.uri, offset=0, limit=1000)
    assert "\ufffd" not in first.output and first.truncated and first.metadata["next"] == 1000
    assert first.output.startswith(f"[binary (application/octet-stream): bytes 0 to 1000 of the 102400 bytes of "
                                   f"{resource.uri}, not decoded as text; they begin 00 01 02 03")
    assert "offset=1000" in first.output
    last = tools.read(store, "s", "c", resource=resource.uri, offset=102390)
    assert "bytes 102390 to 102400" in last.output and last.metadata["next"] is None and not last.truncated
    _, page, start, following = store.read_bytes("s", resource.uri, offset=255, limit=3)
    assert (page, start, following) == (data[255:258], 255, 258)
    assert store.read_bytes("s", resource.uri, offset=10**9)[1:] == (b"", 102400, None)


def test_bash_with_an_unreachable_store_does_not_run_the_command(tmp_path):
    """Regression (issue 19, item 4): the command ran first and its output was then lost."""
    from conftest import _redis_or_skip

    _redis_or_skip()
    from redis_servers import start_server

    server = start_server(parent=tmp_path)
    witness = tmp_path / "ran"
    with ToolOutputStore(url=server.url) as store:
        assert not tools.bash(store, "s", "c", "seq 1 10").is_error
        server.stop()
        result = tools.bash(store, "s", "c", f"touch {witness}; seq 1 100000")
    assert result.is_error and "the command was not run" in result.output and "\n" not in result.output
    assert not witness.exists()


def test_the_last_page_of_a_capped_stored_copy_says_the_output_went_on(tmp_path):
    # The marker says the stored copy holds the first 100000 bytes; a reader paging to its end
    # must not take "1851" for the output's last line.
    store = ToolOutputStore(tmp_path, durable=False, config={"tool_output": {"max_stored_bytes": 100_000}})
    ran = tools.call(store, "s", "c", "bash", {"command": "seq 1000000"})
    uri = "tool-output://" + ran.output.split("tool-output://")[1][:26]
    last = tools.call(store, "s", "r", "read", {"resource": uri, "offset": 90_000})
    assert last.metadata["next"] is None and last.metadata["stored_copy_ends"] is True
    assert last.output.endswith(f"\n1851\n\n[the stored copy of {uri} ends here, at byte 100000: the output had "
                                "6888896 bytes, and the rest, bytes 100000 to 6888896, was not kept]")
    middle = tools.call(store, "s", "r", "read", {"resource": uri, "offset": 0, "limit": 1000})
    assert "stored copy" not in middle.output
    whole = store.write("s", "w", b"a\n" * 100)
    assert "stored copy" not in tools.call(store, "s", "r", "read", {"resource": whole.uri}).output


def test_an_argument_to_a_tool_that_takes_none_is_named_in_a_whole_sentence(store):
    """Red team (stop 14) D: ``jobs`` with an argument answered "jobs has no argument 'x' (it takes )"."""
    result = tools.call(store, "s", "c", "jobs", {"x": 1})
    assert result.is_error and result.output == "jobs has no argument 'x' (it takes no arguments)"


# ------------------------------------------------------------------ webfetch: bodies served as declared
class _DeclaredHandler(http.server.BaseHTTPRequestHandler):
    """Serves ``ROUTES[path]``: (headers, body, Content-Length or None for the body's own), then closes.
    A declared length over the body's is a server that closed the connection early."""

    ROUTES: dict[str, tuple[list[tuple[str, str]], bytes, int | None]] = {}

    def log_message(self, *args):  # keep test output clean
        pass

    def do_GET(self):  # noqa: N802 - the http.server API
        headers, body, declared = self.ROUTES[self.path]
        self.send_response(200)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body) if declared is None else declared))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True


@pytest.fixture(scope="module")
def declared_server():
    yield from _serving(_DeclaredHandler)


@pytest.mark.parametrize("mime", ["application/x-javascript", "application/x-yaml", "application/ecmascript",
                                  "application/ld+json", "application/x-ndjson"])
def test_webfetch_every_type_kept_as_text_reads_back_as_text(store, declared_server, mime):
    """Regression: webfetch kept application/x-javascript and x-yaml as text (its own list), and the
    read tool, by the front ends' list, described the stored page as binary."""
    path = "/typed/" + mime
    _DeclaredHandler.ROUTES[path] = ([("Content-Type", mime)], b"var x = 1;\n" * 20000, None)
    fetched = tools.webfetch(store, "s", "c", declared_server + path, timeout=10)
    assert not fetched.is_error and fetched.resource is not None, fetched.output
    assert fetched.resource.mime == mime
    page = tools.call(store, "s", "r", "read", {"resource": fetched.resource.uri,
                                                "offset": fetched.metadata["next_offset"]})
    assert not page.is_error and page.output.startswith("var x = 1;"), page.output[:120]


def test_webfetch_a_body_cut_short_of_its_content_length_is_an_error(store, declared_server):
    """Regression: a server that closed the connection after 19 of 100000 declared bytes had those
    19 bytes served as the whole page."""
    _DeclaredHandler.ROUTES["/short"] = ([("Content-Type", "text/plain")], b"only the first part", 100000)
    result = tools.webfetch(store, "s", "c", declared_server + "/short", timeout=10)
    assert result.is_error and "\n" not in result.output, result.output
    assert "closed after 19 of the 100000 bytes" in result.output
    assert store.resources("s") == []
    _DeclaredHandler.ROUTES["/exact"] = ([("Content-Type", "text/plain")], b"all of it", None)
    assert tools.webfetch(store, "s", "c", declared_server + "/exact", timeout=10).output == "all of it"


def test_webfetch_decodes_every_member_of_a_gzip_body(store, declared_server):
    """Regression: a gzip body of several members (RFC 1952; ``gzip -c a b``, pigz) kept only the first."""
    gzipped = [("Content-Type", "text/plain"), ("Content-Encoding", "gzip")]
    members = gzip.compress(b"first member\n") + gzip.compress(b"") + gzip.compress(b"second member\n")
    _DeclaredHandler.ROUTES["/members"] = (gzipped, members + b"\0" * 8, None)  # NUL padding is skipped
    result = tools.webfetch(store, "s", "c", declared_server + "/members", timeout=10)
    assert not result.is_error and result.output == "first member\nsecond member\n", result.output
    # The cap holds across members: small ones that decode to over 5 MiB together are refused.
    _DeclaredHandler.ROUTES["/member-bomb"] = (gzipped, gzip.compress(b"y" * (1 << 20)) * 6, None)
    bomb = tools.webfetch(store, "s", "c", declared_server + "/member-bomb", timeout=10)
    assert bomb.is_error and "limit" in bomb.output, bomb.output
    # A second member cut short is a cut body, as a first one is.
    _DeclaredHandler.ROUTES["/member-cut"] = (gzipped, members[:-12], None)
    cut = tools.webfetch(store, "s", "c", declared_server + "/member-cut", timeout=10)
    assert cut.is_error and "ends before" in cut.output, cut.output
    assert store.resources("s") == []


def test_html_nesting_depth_bounds_the_prefixes_so_output_stays_linear():
    """Regression: each <li> was indented two spaces per open list and each line in a block quote
    prefixed "> " per open quote, unbounded: 40 KB of "<ul><li>" became 25 MB of Markdown."""
    from overspill.tools._html import _MAX_NESTING

    for page in ("<ul><li>" * 5000 + "x", "<ol><li>" * 5000 + "x", "<blockquote><p>x" * 5000,
                 "<blockquote>" * 5000 + "a<br>" * 5000):
        for convert in (html_to_markdown, html_to_text):
            out = convert(page)
            assert len(out) < 10 * len(page), (page[:20], convert.__name__, len(out))
            assert "x" in out or "a" in out
    # Nesting up to the bound is written as before; deeper items stay at its indentation.
    deep = html_to_markdown("<ul><li>" * (_MAX_NESTING + 5) + "end")
    lines = deep.splitlines()
    assert lines[_MAX_NESTING] == "  " * _MAX_NESTING + "-"
    assert lines[-1] == "  " * _MAX_NESTING + "- end" and len(lines) == _MAX_NESTING + 5
    quoted = html_to_markdown("<p>a</p>" + "<blockquote>" * (_MAX_NESTING + 5) + "<p>q</p>")
    assert [line for line in quoted.splitlines() if "q" in line] == ["> " * _MAX_NESTING + "q"]
    assert max(len(line) for line in quoted.splitlines()) == 2 * _MAX_NESTING + 1


@pytest.mark.parametrize(("content_type", "body", "expected"), [
    ("text/plain", "hello utf16 café\n".encode("utf-16-le"), None),  # no BOM: the default, UTF-8, as before
    ("text/plain", codecs.BOM_UTF16_LE + "hello utf16 café\n".encode("utf-16-le"), "hello utf16 café\n"),
    ("text/plain", codecs.BOM_UTF16_BE + "hello utf16 café\n".encode("utf-16-be"), "hello utf16 café\n"),
    # The BOM wins over the Content-Type charset and over <meta>, and is not part of the text.
    ("text/plain; charset=iso-8859-1", codecs.BOM_UTF8 + "café\n".encode(), "café\n"),
    ("text/html", codecs.BOM_UTF8 + "<meta charset='windows-1252'><p>hello bom café</p>".encode(),
     "hello bom café\n"),
])
def test_webfetch_a_byte_order_mark_names_the_encoding(store, declared_server, content_type, body, expected):
    """Regression: the BOM was ignored, so a UTF-16 body came back as mojibake with NULs and a UTF-8 BOM
    as U+FEFF at the start of the text."""
    path = f"/bom/{zlib.crc32(content_type.encode() + body)}"
    _DeclaredHandler.ROUTES[path] = ([("Content-Type", content_type)], body, None)
    result = tools.webfetch(store, "s", "c", declared_server + path, timeout=10)
    assert not result.is_error, result.output
    if expected is None:
        assert "\x00" in result.output  # without a BOM nothing says UTF-16
    else:
        assert result.output == expected and "\ufeff" not in result.output


def test_html_tables_nested_past_the_bound_are_text_of_their_cell_and_cost_linear_work(monkeypatch):
    """Regression: each level of tables nested in cells copied (and re-normalised) all the text
    inside it into the cell around it, so the work was depth times text: a 275 KB page of nested
    tables around 200 KB of text took 90 s.  The work is counted as the characters the whitespace
    normaliser is given, not timed."""
    from overspill.tools import _html

    given = []

    class _Counting:
        def __init__(self, pattern):
            self.pattern = pattern

        def sub(self, replacement, text):
            given.append(len(text))
            return self.pattern.sub(replacement, text)

    monkeypatch.setattr(_html, "_SPACE", _Counting(_html._SPACE))
    depth = 2000
    page = "".join(f"<table><tr><td>L{level}</td><td>" for level in range(depth)) + "word " * 4000
    for convert in (html_to_markdown, html_to_text):
        given.clear()
        out = convert(page)
        assert sum(given) < 50 * len(page), (convert.__name__, sum(given), len(page))
        # Every level's text is kept, in order, and the deep text after it.
        words = out.split()
        assert [word for word in words if word.startswith("L")] == [f"L{level}" for level in range(depth)]
        assert words.count("word") == 4000


@pytest.mark.parametrize(("html", "markdown"), [
    ("<blockquote><p>one</p><p>two</p></blockquote><p>after</p>", "> one\n>\n> two\n\nafter\n"),
    ("<blockquote>q</blockquote>", "> q\n"),
    ("<blockquote>  spaced  </blockquote>", "> spaced\n"),
    ("<p>x</p><blockquote>one<br>two</blockquote>", "x\n\n> one\n> two\n"),
    ("<blockquote><p>a</p><blockquote><p>deep</p></blockquote><p>back</p></blockquote><p>out</p>",
     "> a\n>\n> > deep\n>\n> back\n\nout\n"),
    ("<blockquote></blockquote><p>x</p>", "x\n"),
    ("<blockquote><ul><li>a<li>b</ul></blockquote>", "> - a\n> - b\n"),
    ("<p>&gt;</p><p>b</p>", ">\n\nb\n")])
def test_every_line_of_a_block_quote_starts_with_its_prefix(html, markdown):
    """Fix helper B1 (stop 14): a quote at the page's start lost the ``>`` of its first line, and
    the blank line between two of its paragraphs had none, which ends a quote in Markdown."""
    assert html_to_markdown(html) == markdown


def test_grep_skips_a_file_with_a_nul_anywhere_with_either_engine(store, tmp_path, engine, monkeypatch):
    """Red team B f05: with rg, grep on a named binary file gave rg's notice 'blob.bin: binary file
    matches (found "\\0" byte around offset 7)' as a match (matches: 1), the Python search nothing;
    and a file whose first NUL lay past 8 KiB was skipped by rg but searched by the Python search
    (which looked at the first 8 KiB only). Both now skip a file with a NUL anywhere, as rg does."""
    monkeypatch.setattr(grep_module, "_SEARCH_BLOCK", 4096)  # the Python search meets the NUL in a later block
    (tmp_path / "blob.bin").write_bytes(b"needle \0 x\n")
    (tmp_path / "late.log").write_bytes(b"needle one\n" + b"x" * 20000 + b"\n\0\nneedle two\n")
    (tmp_path / "later.log").write_bytes(b"needle one\n" + b"x" * 200_000 + b"\n\0\nno more\n")
    (tmp_path / "utf16.txt").write_bytes("needle\n".encode("utf-16"))  # a BOM, then NULs: rg would decode it
    (tmp_path / "text.txt").write_bytes(b"a needle\n")
    for path in ("blob.bin", "late.log", "later.log", "utf16.txt"):
        named = tools.grep(store, "s", "c", "needle", path=path, cwd=tmp_path)
        assert (named.output, named.metadata["matches"]) == ("no matches for 'needle'", 0), path
    everything = tools.grep(store, "s", "c", "needle", cwd=tmp_path)
    assert (everything.output, everything.metadata["matches"]) == ("text.txt:1:a needle", 1)


GLOB_TREE = ("a.py", "b.md", "c.txt", "z.py", "sub/d.py", "sub/.git", "sub/deep/e.py", "x.txt/f.py", "src/sub/g.py",
             ".git/h.py", "é.py")


@pytest.mark.parametrize(("glob", "files"), [
    ("*.py", ["a.py", "src/sub/g.py", "sub/d.py", "sub/deep/e.py", "x.txt/f.py", "z.py", "é.py"]),
    ("*.{py,md}", ["a.py", "b.md", "src/sub/g.py", "sub/d.py", "sub/deep/e.py", "x.txt/f.py", "z.py", "é.py"]),
    ("!*.txt", ["a.py", "b.md", "src/sub/g.py", "sub/d.py", "sub/deep/e.py", "z.py", "é.py"]),  # x.txt/ too
    ("sub/*.py", ["sub/d.py"]), ("sub/**", ["sub/d.py", "sub/deep/e.py"]), ("**/sub/*.py", ["src/sub/g.py", "sub/d.py"]),
    ("*/*.py", ["sub/d.py", "x.txt/f.py"]), ("/a.py", ["a.py"]), ("deep", []), ("!sub/", None), ("?.py", None),
    ("[!a].py", ["src/sub/g.py", "sub/d.py", "sub/deep/e.py", "x.txt/f.py", "z.py"]), ("#a.py", None), ("*", None),
    ("{a,z}.py", ["a.py", "z.py"])])
def test_grep_glob_means_what_rg_glob_means_with_either_engine(store, tmp_path, engine, glob, files):
    """Red team B f06: the glob was rg's with rg and fnmatch's without it: '*.{py,md}' and '!*.txt'
    matched nothing in Python, 'sub/*.py' crossed into sub/deep there. The Python search now applies
    rg's --glob rules (_glob.translate); files come in rg's order (a folder's entries by name, a
    subfolder's files before the next name's), .git never, not even a file of that name or for a
    glob such as '*' that matches it."""
    everything = ["a.py", "b.md", "c.txt", "src/sub/g.py", "sub/d.py", "sub/deep/e.py", "x.txt/f.py", "z.py", "é.py"]
    expected = {"!sub/": [name for name in everything if "sub/" not in name],  # no other /: any depth
                "?.py": ["a.py", "src/sub/g.py", "sub/d.py", "sub/deep/e.py", "x.txt/f.py", "z.py"],  # é: 2 bytes
                "#a.py": everything, "*": everything}.get(glob, files)  # a glob starting with # is no glob
    for name in GLOB_TREE:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("needle\n")
    result = tools.grep(store, "s", "c", "needle", glob=glob, cwd=tmp_path)
    found = [] if result.output.startswith("no matches") else [line.split(":")[0] for line in result.output.split("\n")]
    assert found == expected
    # A file named as the path is searched whatever the glob; a glob rg refuses is refused alike.
    assert tools.grep(store, "s", "c", "needle", path="c.txt", glob="*.py", cwd=tmp_path).output == "c.txt:1:needle"
    refused = tools.grep(store, "s", "c", "needle", glob="*.{py,{md}}", cwd=tmp_path)
    assert refused.is_error and refused.output == "invalid glob '*.{py,{md}}': nested alternate groups are not allowed"


CRLF_LINES = [b"first line end\r", b"second;\r", b"end\r\r", b"abc", b"word<x>", b"a[b", b"end ", b"tab\there",
              b"a\r\rb\r", b"\r", b"", b"q\rz", b"caf\xc3\xa9 \xce\xa3\xcf\x83", b"x[:a]", b"1,2;3", b"end"]
CRLF_PATTERNS = ["end$", r"end\r$", r"\s$", "d.$", ";$", "^$", r"^\s*$", r"\S$", "[^a]$", "q.z", r"\r", r"\w+$",
                 "[[:alpha:]]", "[a[:digit:]]", "[a-z&&[^b]]", "[a--b]", "a*+b", "(?x)[ ]", r"\B$", "(end|;)$",
                 r"e\Z", r"end(?!\r)", "(?i)END$", "σ$", "x|$", r"$\b", r"\bend\b"]


@pytest.mark.skipif(shutil.which("rg") is None, reason="rg is not on PATH")
@pytest.mark.parametrize("ignore_case", [False, True])
def test_grep_a_pattern_finds_the_same_lines_with_rg_and_without(store, tmp_path, monkeypatch, ignore_case):
    """Red team B f07: the same pattern matched other lines with rg: 'end$' found nothing in a CRLF
    file with rg (run without --crlf) and the line without it (which dropped the \\r), '[[:alpha:]]'
    was a POSIX class for rg and a set of characters for Python. Now the rg search gets each $ as
    (?:\\r?$), the Python search tries a line ending in \\r without it too, and a pattern the two
    engines read differently (classes with [ or set operations, possessive repeats, the x flag, \\B,
    a $ followed by more) is searched in Python."""
    (tmp_path / "win.txt").write_bytes(b"\n".join(CRLF_LINES) + b"\n")
    real = grep_module._ripgrep
    for pattern in CRLF_PATTERNS:
        monkeypatch.setattr(grep_module, "_ripgrep", real)
        with_rg = tools.grep(store, "s", "c", pattern, cwd=tmp_path, ignore_case=ignore_case)
        monkeypatch.setattr(grep_module, "_ripgrep", lambda: None)
        in_python = tools.grep(store, "s", "c", pattern, cwd=tmp_path, ignore_case=ignore_case)
        assert (pattern, with_rg.output) == (pattern, in_python.output)


def test_grep_reads_crlf_ends_and_posix_looking_classes_as_python_does(store, tmp_path, engine):
    """Red team B f07, what either engine now answers; and the FutureWarning Python gives for
    '[[:alpha:]]' no longer reaches the host (it went to its stderr)."""
    (tmp_path / "win.txt").write_bytes(b"\n".join(CRLF_LINES) + b"\n")
    assert tools.grep(store, "s", "c", "end$", cwd=tmp_path).output == "win.txt:1:first line end\nwin.txt:16:end"
    assert tools.grep(store, "s", "c", ";$", cwd=tmp_path).output == "win.txt:2:second;"
    re.purge()  # a cached pattern warns no more
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        posix = tools.grep(store, "s", "c", "[[:alpha:]]", cwd=tmp_path)
    assert posix.output == "win.txt:14:x[:a]"  # one of [:alph followed by ], as Python reads it
    assert [warning for warning in caught if issubclass(warning.category, FutureWarning)] == []


@pytest.mark.parametrize(("pattern", "expected"), [
    ("end$", r"end(?:\r?$)"), (r"a\$[$]", r"a\$[$]"), ("(a$|b$)", r"(a(?:\r?$)|b(?:\r?$))"), ("a$|b", r"a(?:\r?$)|b"),
    ("(a$)+", r"(a(?:\r?$))+"), (r"\d+(?=%)", r"\d+(?=%)"), ("[]a]", "[]a]"), ("(?i)x", "(?i)x"),
    ("[[:alpha:]]", None), ("[a[]", None), ("[a&&b]", None), ("[a~~b]", None), ("[a--b]", None), ("a*+", None),
    ("a{2}+", None), ("a?+", None), ("(?x)a", None), ("(?ix:a)", None), (r"\<a", None), (r"\b{start}", None),
    (r"a\B", None), (r"a$\b", None), ("(a$|b)c", None), ("$$", None)])
def test_ripgrep_pattern_rewrites_or_refuses(pattern, expected):
    assert grep_module.ripgrep_pattern(pattern) == expected


@pytest.mark.parametrize("background", [False, True])
def test_bash_background_names_a_missing_working_folder_as_the_foreground_does(store, tmp_path, background):
    """Regression (issue 19 item 12, red team E f04): with ``background: true`` a missing cwd
    answered "could not run the command: No such file or directory" (a file: "Not a directory"),
    while the foreground named the folder. Both paths now give the same line, and nothing runs."""
    missing, a_file = tmp_path / "missing" / "dir", tmp_path / "a-file"
    a_file.write_text("x")
    marker = tmp_path / "ran"
    for cwd, what in ((missing, "does not exist"), (a_file, "is not a folder")):
        result = tools.call(store, "s", "c", "bash", {"command": f"touch {marker}", "background": background},
                            cwd=str(cwd))
        assert result.is_error
        assert result.output == f"could not run the command: the working folder {cwd} {what}"
    assert not marker.exists() and store.records() == []


def test_webfetch_ignores_bytes_after_the_last_gzip_member_as_gzip_does(store, declared_server):
    """Review (stop 14): with every gzip member decoded, bytes after the last one that start no member
    (a trailer some servers add) failed the fetch with "incorrect header check"; gzip(1) and browsers
    ignore them.  A member whose magic is split between two reads still starts a member."""
    from overspill.tools.webfetch import _BodyDecoder

    gzipped = [("Content-Type", "text/plain"), ("Content-Encoding", "gzip")]
    _DeclaredHandler.ROUTES["/trailer"] = (gzipped, gzip.compress(b"hello world\n") + b"GARBAGE-TRAILER", None)
    result = tools.webfetch(store, "s", "c", declared_server + "/trailer", timeout=10)
    assert not result.is_error and result.output == "hello world\n", result.output
    first, second = gzip.compress(b"a\n"), gzip.compress(b"b\n")
    for cut in (len(first), len(first) + 1, len(first) + 2):
        decoder = _BodyDecoder("gzip", "http://x")
        body = first + second
        assert decoder.feed(body[:cut]) + decoder.feed(body[cut:]) + decoder.finish() == b"a\nb\n"
    decoder = _BodyDecoder("gzip", "http://x")
    assert decoder.feed(first + b"\x1f") + decoder.feed(b"") + decoder.finish() == b"a\n"


@pytest.mark.parametrize(("html", "markdown"), [
    ("<blockquote><pre>x\ny</pre></blockquote>", "> ```\n> x\n> y\n> ```\n"),
    ("<blockquote><p>a</p><pre>x\n  y\n</pre><p>b</p></blockquote>", "> a\n>\n> ```\n> x\n>   y\n> ```\n>\n> b\n"),
    ("<blockquote><blockquote><pre>q</pre></blockquote></blockquote>", "> > ```\n> > q\n> > ```\n"),
    ("<pre>x\ny\n</pre><p>z</p>", "```\nx\ny\n```\n\nz\n")])
def test_a_pre_in_a_block_quote_keeps_every_line_in_the_quote(html, markdown):
    """Review (stop 14): a pre's lines and its closing fence had no quote prefix, so the quote ended
    after the opening fence."""
    assert html_to_markdown(html) == markdown


@pytest.mark.parametrize("timeout", [1e10, float("inf"), 10**400], ids=["1e10", "inf", "10**400"])
def test_webfetch_a_timeout_too_large_to_wait_is_no_bound(store, server, timeout):
    """Regression (red team Y f06): a timeout past what a socket can wait (1e10, inf, 10**400)
    raised OverflowError out of webfetch (socket.settimeout, monotonic() + timeout)."""
    result = tools.webfetch(store, "s", "c", f"{server}/json", timeout=timeout)
    assert not result.is_error and result.metadata["status"] == 200, result.output


def _raw_server(answer):
    """A one-connection server on loopback that reads the request and calls ``answer(connection)``
    on a daemon thread: yields its URL."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)

    def serve():
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            try:
                answer(connection)
            except OSError:  # the client went away
                pass

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}/", listener


def test_webfetch_timeout_bounds_headers_sent_a_byte_at_a_time(store):
    """Regression (red team Y f01): the deadline was checked only while reading the body, and a
    socket's timeout bounds each wait only: a server sending its headers a byte every 0.2 s held the
    fetch for as long as it went on (here 20 s, then it closes; the fetch must end at its timeout)."""
    def trickle(connection):
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n")
        for _ in range(100):
            connection.sendall(b"X")
            time.sleep(0.2)

    url, listener = _raw_server(trickle)
    with listener:
        result = tools.webfetch(store, "s", "c", url, timeout=1)
    assert result.is_error and "did not end within 1 seconds" in result.output, result.output
    assert store.resources("s") == []


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 503 " + b"R" * 60000 + b"\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 302 Found\r\nLocation: ftp://x/" + b"L" * 60000 + b"\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Type: image/" + b"T" * 60000 + b"\r\nContent-Length: 0\r\n\r\n",
], ids=["reason", "location", "content-type"])
def test_webfetch_a_failure_quoting_a_long_server_value_is_bounded(store, answer):
    """Regression (red team Y f02): a failure quoted what the server sent whole: a 60 KB reason
    phrase or refused redirect's Location came back as a 60 KB error, past the 8 KiB answers."""
    url, listener = _raw_server(lambda connection: connection.sendall(answer))
    with listener:
        result = tools.webfetch(store, "s", "c", url, timeout=10)
    assert result.is_error and "\n" not in result.output, result.output[:200]
    assert len(result.output.encode()) <= tools.MAX_LINE_LENGTH * 4 < 8192, len(result.output)
    assert "of 600" in result.output and "characters cut]" in result.output  # it says what was cut
    assert result.output.startswith(("HTTP 503 RRR", "refused a redirect to ftp://x/LLL", "refused: http"))


def test_a_failure_quoting_the_models_long_input_is_bounded(store, tmp_path):
    """Regression (red team Y f02): a 100 KB URL or path came back whole in the error."""
    for result in (tools.webfetch(store, "s", "c", "ftp://" + "u" * 100000),
                   tools.call(store, "s", "c", "read", {"path": str(tmp_path / ("p" * 100000))}),
                   tools.call(store, "s", "c", "grep", {"pattern": "q" * 100000, "path": str(tmp_path)})):
        assert len(result.output) <= tools.MAX_LINE_LENGTH and "characters cut]" in result.output, result.output[:200]


def test_webfetch_a_deflate_body_whose_first_byte_comes_alone(store):
    """Regression (red team Y f04): zlib-wrapped deflate was told from raw by the first read alone,
    and a first byte that arrived by itself was taken for a raw stream: the body failed to decode."""
    body = zlib.compress(b"deflated text line\n" * 200)

    def split(connection):
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: deflate\r\n"
                           b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body[:1])
        time.sleep(0.3)  # the first byte is read by itself
        connection.sendall(body[1:])

    url, listener = _raw_server(split)
    with listener:
        result = tools.webfetch(store, "s", "c", url, timeout=10)
    assert not result.is_error and result.output.startswith("deflated text line\n"), result.output[:200]


def test_webfetch_a_deflate_body_of_one_byte_is_an_error(store, declared_server):
    """Regression (red team Y f04): a body of one byte, no whole stream in either form, is a cut body."""
    _DeclaredHandler.ROUTES["/deflate-one-byte"] = ([("Content-Type", "text/plain"),
                                                     ("Content-Encoding", "deflate")], b"x", None)
    result = tools.webfetch(store, "s", "c", declared_server + "/deflate-one-byte", timeout=10)
    assert result.is_error and "ends before its compressed stream does" in result.output, result.output


@pytest.mark.parametrize("encoding", ["gzip", "x-gzip", "deflate"])
def test_webfetch_an_empty_encoded_body_is_an_empty_page(store, declared_server, encoding):
    """Regression (red team Y f05): an empty body with Content-Encoding gzip (an empty 200, as a 204
    has) failed with "the gzip body ends before its compressed stream does"; deflate's was empty."""
    _DeclaredHandler.ROUTES["/empty-" + encoding] = ([("Content-Type", "text/plain"),
                                                      ("Content-Encoding", encoding)], b"", None)
    result = tools.webfetch(store, "s", "c", declared_server + "/empty-" + encoding, timeout=10)
    assert not result.is_error and result.output == "" and result.metadata["bytes"] == 0, result.output


@pytest.mark.parametrize(("label", "body"), [
    ("utf-16", "café".encode()), ("UTF-16LE", "café".encode()), ("utf-16be", "café".encode()),
    ("unicodeFFFE", "café".encode()), ("x-user-defined", b"caf\xe9")])
def test_webfetch_a_meta_naming_utf16_is_read_as_utf8(store, declared_server, label, body):
    """Regression (red team Y f03): a page whose <meta> names UTF-16 (no charset in the headers) was
    decoded as UTF-16, its text garbled; HTML's prescan reads such a page as UTF-8 (its <meta> was
    read as ASCII), and x-user-defined as windows-1252.  A header's UTF-16 is still UTF-16 (by a WHATWG
    label: Python's "utf-16-le" is none, so it is no declared charset, as for browsers)."""
    path = "/meta-" + label
    page = b'<html><head><meta charset="' + label.encode() + b'"></head><body><p>' + body + b"</p></body></html>"
    _DeclaredHandler.ROUTES[path] = ([("Content-Type", "text/html")], page, None)
    result = tools.webfetch(store, "s", "c", declared_server + path, format="text", timeout=10)
    assert not result.is_error and result.output.strip() == "café", result.output
    _DeclaredHandler.ROUTES["/header-utf-16"] = ([("Content-Type", "text/html; charset=utf-16le")],
                                                 "<p>café</p>".encode("utf-16-le"), None)
    result = tools.webfetch(store, "s", "c", declared_server + "/header-utf-16", format="text", timeout=10)
    assert not result.is_error and result.output.strip() == "café", result.output


@pytest.mark.parametrize("format", ["markdown", "text"])
def test_webfetch_a_page_converted_past_the_limit_is_cut_and_says_so(store, declared_server, format):
    """Regression (red team Y, also): HTML to Markdown can make a page many times its size (a
    "> " per level on each short line of a <pre> deep in quotes): a 400 KB page became 8.4 MB of
    stored text, though the schema promises at most 5 MB of text."""
    page = b"<blockquote>" * 20 + b"<pre>" + "é\n".encode() * 200000 + b"</pre>"
    _DeclaredHandler.ROUTES["/grows"] = ([("Content-Type", "text/html")], page, None)
    result = tools.webfetch(store, "s", "c", declared_server + "/grows", format=format, timeout=30)
    assert not result.is_error and result.resource is not None, result.output[:200]
    limit = tools.MAX_RESPONSE_BYTES
    if format == "text":  # text has no quote prefixes: it stays whole
        assert "cut" not in result.metadata and result.resource.size < limit
        return
    assert result.metadata["cut"] and limit - 200 < result.resource.size <= limit
    stored = (store.directory / f"{result.resource.id}.txt").read_bytes()
    stored.decode("utf-8")  # cut at a character: still valid UTF-8
    assert stored.endswith(b'cut at the 5242880-byte limit; format "html" gives the whole page]')


@pytest.mark.parametrize("pattern", ["a{99999999999}", "(" * 5000])
def test_grep_and_wait_refuse_an_uncompilable_pattern_in_one_line(store, tmp_path, pattern):
    """Regression (red team V f01): a pattern ``re`` refuses with OverflowError (a repeat count
    too large) or RecursionError (groups nested too deeply) rather than ``re.error`` escaped grep
    (stored output or files) and wait as a raw exception; it is an "invalid pattern" error."""
    stored = store.truncate("s", "c", "\n".join(map(str, range(5000))))
    (tmp_path / "notes.txt").write_text("alpha\n")
    handle = tools.call(store, "s", "c", "bash", {"command": "echo ready; sleep 30", "background": True,
                                                  "yield_after": 0})
    try:
        for name, arguments in [("grep", {"resource": stored.resource.uri}), ("grep", {"path": str(tmp_path)}),
                                ("wait", {"resource": handle.resource.uri, "timeout": 0})]:
            result = tools.call(store, "s", "c", name, {"pattern": pattern, **arguments})
            assert result.is_error and result.output.startswith("invalid pattern '"), (name, result.output[:100])
            assert "\n" not in result.output and len(result.output) <= tools.MAX_LINE_LENGTH
    finally:
        tools.call(store, "s", "c", "kill", {"resource": handle.resource.uri})


def test_wait_notes_quote_a_long_pattern_shortened(store):
    """Regression (red team V f02): wait's "[pattern '…' not seen in the new output]" (and "found
    at") note quoted the model's pattern whole: a 100 KB pattern gave a 100 KB answer, past the
    preview's 8 KiB.  The note is cut as a failure's line is."""
    handle = tools.call(store, "s", "c", "bash", {"command": "echo ready; sleep 30", "background": True,
                                                  "yield_after": 0})
    try:
        for pattern, seen in [("q" * 100_000, "not seen in the new output]"), ("ready|" + "q" * 100_000, "found at")]:
            result = tools.call(store, "s", "c", "wait", {"resource": handle.resource.uri, "pattern": pattern,
                                                          "timeout": 0 if "ready" not in pattern else 30, "offset": 0})
            assert not result.is_error, result.output[:200]
            assert len(result.output) < 8192 and seen in result.output and "characters cut]" in result.output
    finally:
        tools.call(store, "s", "c", "kill", {"resource": handle.resource.uri})


def test_grep_files_with_a_pattern_or_glob_too_long_for_an_argument(store, tmp_path, monkeypatch):
    """Regression (red team V f03): a pattern or glob over the kernel's 128 KiB limit on one
    argument made starting rg fail with E2BIG, a raw OSError out of grep; it is searched in
    Python, with the lines rg would have given."""
    if shutil.which("rg") is None:
        pytest.skip("rg is not on PATH")
    (tmp_path / "a.txt").write_text("hay\nneedle here\n")
    (tmp_path / "b.md").write_text("needle too\n")
    long_pattern = "needle|" + "q" * 140_000
    long_glob = "{*.txt," + "x" * 140_000 + "}"
    real = grep_module._ripgrep
    for pattern, glob, expected in [(long_pattern, None, "a.txt:2:needle here\nb.md:1:needle too"),
                                    ("needle", long_glob, "a.txt:2:needle here")]:
        monkeypatch.setattr(grep_module, "_ripgrep", real)
        result = tools.grep(store, "s", "c", pattern, glob=glob, cwd=tmp_path)
        assert not result.is_error and result.output == expected, result.output[:200]
        monkeypatch.setattr(grep_module, "_ripgrep", lambda: None)
        assert tools.grep(store, "s", "c", pattern, glob=glob, cwd=tmp_path).output == expected


@pytest.mark.parametrize("length", [2001, 10**5, 10**7 + 1961, 2 * 10**7])
def test_a_shortened_line_is_at_most_max_line_length_whatever_the_count_it_names(length: int) -> None:
    # The note names the count it cut: with eight-digit counts it took more than the 40 characters
    # set aside for it, and the line came out at 2001 characters.
    from overspill.tools._result import failure, shortened_line

    line = "a" * (length // 2) + "é" + "b" * (length - length // 2 - 1)
    shortened = shortened_line(line)
    assert len(shortened) <= tools.MAX_LINE_LENGTH, len(shortened)
    assert shortened.startswith("a" * 900) and shortened.endswith("b" * 900)
    assert f" of {length} characters cut]" in shortened
    assert len(failure(line).output) <= tools.MAX_LINE_LENGTH


# Characters the printable rule escapes, with escapes of every width: \\x1b, \\u202e, \\U000e0001.
_UNPRINTABLE = ["\x1b", "\x07", "\x9b", "\x7f", "\x00", "\u200d", "\u202e", "\U000e0001"]


def _shown_characters(characters, shown: str):
    """How many of ``characters`` (in order) the printable rule shows as exactly ``shown``; None when
    ``shown`` ends inside one's escape."""
    from overspill._printable import printable

    size = 0
    for count, character in enumerate(characters):
        if size >= len(shown):
            return count if size == len(shown) else None
        size += len(printable(character))
    return len(characters) if size == len(shown) else None


@given(k=st.integers(0, 2100), hostile=st.lists(st.sampled_from(_UNPRINTABLE), min_size=1, max_size=3),
       count=st.integers(1, 3000), after=st.integers(0, 30))
@example(k=1, hostile=["\x1b"], count=3000, after=0)  # the review's: the head ended in "\\x"
@example(k=2, hostile=["\x1b"], count=3000, after=0)  # ... or in "\\x1"
@example(k=0, hostile=["\U000e0001"], count=1500, after=0)  # fits raw, not escaped
def test_message_line_cuts_between_escapes_never_inside_one(k, hostile, count, after) -> None:
    """Regression (review R23, 4+5): ``message_line`` escaped the whole text and then cut it, so the
    head could end in ``\\x`` or ``\\x1`` (an escape split, a character the model cannot read back).
    The raw line is cut first, each end escaped a whole character at a time; the note counts the
    line's own characters."""
    from overspill._printable import printable
    from overspill.tools._result import message_line

    text = "e" * k + "".join(hostile) * count + "f" * after
    line = message_line(text)
    assert len(line) <= tools.MAX_LINE_LENGTH and line.isprintable(), len(line)
    if len(printable(text)) <= tools.MAX_LINE_LENGTH:
        assert line == printable(text)
        return
    found = re.fullmatch(r"(.*) …\[(\d+) of (\d+) characters cut\]… (.*)", line, re.S)
    assert found, line
    head, cut, whole, tail = found.group(1), int(found.group(2)), int(found.group(3)), found.group(4)
    kept_head, kept_tail = _shown_characters(text, head), _shown_characters(text[::-1], tail[::-1]) if tail else 0
    assert kept_head is not None and kept_tail is not None, (head[-12:], tail[:12])
    assert head == printable(text[:kept_head]) and tail == printable(text[len(text) - kept_tail:])
    assert whole == len(text) and cut == len(text) - kept_head - kept_tail > 0


def test_message_line_escapes_only_the_ends_it_keeps() -> None:
    """Regression (review R23, 4+5): every character of a message was escaped before the cut kept 2,000
    of them: ``read(path="/tmp/" + "\\U000e0001" * 2_000_000)`` built 20 M characters of escapes in
    2 M pieces (3.7 s, +180 MiB) for a line of 2,000.  Only the ends kept are escaped: the work's
    memory stays within about the message's own size."""
    import tracemalloc

    from overspill.tools._result import message_line

    text = "/tmp/" + "\U000e0001" * 1_000_000
    tracemalloc.start()
    try:
        line = message_line(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(line) <= tools.MAX_LINE_LENGTH and line.startswith("/tmp/\\U000e0001"), line[:40]
    assert peak < 2 * sys.getsizeof(text), (peak, sys.getsizeof(text))


def test_grep_no_match_of_a_running_output_is_one_bounded_line(tmp_path) -> None:
    # The "so far [...]" note was appended after the line was cut: 2,130 characters.
    with ToolOutputStore(tmp_path) as store:
        started = tools.call(store, "s", "c", "bash", {"command": "printf 'start\\n'; sleep 30",
                                                        "background": True, "yield_after": 0})
        uri = started.resource.uri
        try:
            assert wait_until(lambda: store.status("s", uri).resource.size >= 6)
            found = tools.call(store, "s", "g", "grep", {"resource": uri, "pattern": "zz" * 3000})
            assert found.output.startswith("no matches for 'zzzz")
            assert "\n" not in found.output and len(found.output) <= tools.MAX_LINE_LENGTH, len(found.output)
            assert "so far [" in found.output
        finally:
            tools.call(store, "s", "k", "kill", {"resource": uri})


@pytest.mark.parametrize("line", ["> line\n", "> 😀\n"])
def test_webfetch_a_cut_page_with_its_note_is_within_the_limit(line):
    """Regression (red team R f04): ``_within_limit`` kept MAX_RESPONSE_BYTES of the converted
    page and then appended its note line, so a cut page was ~117 bytes over the 5 MiB it promises;
    the prefix now leaves room for the note, and is still cut at a character."""
    from overspill.tools.webfetch import _within_limit

    limit = tools.MAX_RESPONSE_BYTES
    text, cut = _within_limit(line * (limit // len(line.encode()) + 1000), "markdown")
    data = text.encode("utf-8")
    assert cut and limit - len(line.encode()) - 200 < len(data) <= limit
    assert text.endswith('cut at the 5242880-byte limit; format "html" gives the whole page]')


def test_webfetch_timeout_bounds_the_connect_to_a_host_of_many_addresses(store, monkeypatch):
    """Regression (red team R f05): the connect went through socket.create_connection, which gives
    each of a host's addresses the whole timeout and hands the connection its socket only once
    connected (so the watchdog had nothing to shut): a name with 4 addresses that do not answer held
    a fetch of timeout=1 for ~4 s.  Each attempt now waits only the time left and none starts
    after the deadline: the fetch fails with the timeout having tried fewer than all the addresses."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    try:
        for _ in range(8):  # fill the accept queue: Linux then drops the SYNs, and a connect waits
            filler = socket.socket()
            filler.setblocking(False)
            try:
                filler.connect(("127.0.0.1", port))
            except BlockingIOError:
                pass
            fillers.append(filler)
        probe = socket.socket()
        probe.settimeout(0.5)
        try:
            probe.connect(("127.0.0.1", port))
            pytest.skip("this system accepts past a full backlog: no connect that waits")
        except (socket.timeout, TimeoutError):
            pass
        finally:
            probe.close()
        real = socket.getaddrinfo
        tried = []

        def four_addresses(host, *args, **kwargs):  # type: ignore[no-untyped-def]
            found = real("127.0.0.1", *args, **kwargs)[:1] if host == "many.invalid" else real(host, *args, **kwargs)
            for entry in found * 4 if host == "many.invalid" else found:
                tried.append(entry)  # counted as each is taken: before its attempt, or before the deadline stops it
                yield entry

        monkeypatch.setattr(socket, "getaddrinfo", four_addresses)
        result = tools.webfetch(store, "s", "c", f"http://many.invalid:{port}/", timeout=0.5)
        assert result.is_error and "did not end within 0.5 seconds" in result.output, result.output
        assert 1 <= len(tried) < 4
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


@pytest.mark.parametrize("front, description", [
    ("name: pdf-tools # the tool's name\ndescription: Fill forms # not shown", "Fill forms"),
    ("name: pdf-tools\ndescription: >\n  Fill PDF forms\n  by field.\n\n  Then sign.\n", "Fill PDF forms by field.\nThen sign."),
    ("name: pdf-tools\ndescription: |-\n  Line one\n    indented\n", "Line one\n  indented"),
    ("name: 'pdf-tools'\ndescription: \"Say \\\"hi\\\"\\tcaf\\u00e9\"", 'Say "hi"\tcafé'),
    ("name: pdf-tools\ndescription: 'it''s\n  folded'", "it's folded"),
    ("description:\n  starts on the next line\n  and goes on\nname: pdf-tools", "starts on the next line and goes on"),
    ("name: pdf-tools\ndescription: see http://x.test/#frag\nmetadata:\n  name: other", "see http://x.test/#frag"),
], ids=["comments", "folded", "literal", "double-quoted", "single-quoted", "next-line", "nested"])
def test_skill_front_matter_reads_yaml_scalars_as_yaml_does(store, tmp_path, front, description):
    """A `# comment` after a value was kept in it (the name no longer matched), a `description: >`
    block was read as ">", and quoted values kept their escapes."""
    (tmp_path / "pdf").mkdir()
    (tmp_path / "pdf" / "SKILL.md").write_text(f"---\n{front}\n---\n# PDF\n")
    result = tools.skill(store, "s", "c", "pdf-tools", roots=[tmp_path])
    assert not result.is_error, result.output
    assert result.metadata["description"] == description


def test_a_skill_folder_named_as_the_skill_wins_over_another_claiming_its_name(store, tmp_path):
    """A folder sorted first whose front matter claimed another skill's name took it over."""
    for folder, front in (("a-impostor", "name: pdf\ndescription: not the real one"),
                          ("pdf", "name: pdf\ndescription: the real one")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "SKILL.md").write_text(f"---\n{front}\n---\n# {folder}\n")
    result = tools.skill(store, "s", "c", "pdf", roots=[tmp_path])
    assert result.metadata["description"] == "the real one" and result.output.endswith("# pdf\n")


def test_read_takes_a_resource_uri_with_its_page_query(store):
    """The read tool refused `tool-output://ID?offset=N&limit=M`, the form `resources/read` and
    `overspill read` take (a model copies what it was shown); the same number given both ways must agree."""
    resource = store.write("s", "c", "".join(f"{n:04d}\n" for n in range(100)))
    plain = tools.read(store, "s", "c", resource=resource.uri, offset=10, limit=20)
    queried = tools.read(store, "s", "c", resource=f"{resource.uri}?offset=10&limit=20")
    assert not queried.is_error and (queried.output, queried.metadata) == (plain.output, plain.metadata)
    both = tools.read(store, "s", "c", resource=f"{resource.uri}?offset=10", offset=10, limit=20)
    assert (both.output, both.metadata) == (plain.output, plain.metadata)
    clash = tools.read(store, "s", "c", resource=f"{resource.uri}?offset=10", offset=30)
    assert clash.is_error and "give one" in clash.output
    bad = tools.read(store, "s", "c", resource=f"{resource.uri}?offset=ten")
    assert bad.is_error and "offset" in bad.output


@pytest.mark.parametrize("files", [{"path": "src"}, {"glob": "*.py"}])
def test_grep_refuses_a_resource_with_a_path_or_glob(store, files):
    """grep given a resource and a path searched the resource and ignored the path (read refuses the pair)."""
    resource = store.write("s", "c", "TODO here\n")
    result = tools.grep(store, "s", "c", "TODO", resource=resource.uri, **files)
    assert result.is_error and "not both" in result.output
    assert not tools.grep(store, "s", "c", "TODO", resource=resource.uri, path=".").is_error


# ------------------------------------------------------------------ red team E7
@pytest.mark.parametrize("spill", [True, False])
def test_bash_output_the_quota_cannot_hold_is_a_storage_failure(tmp_path, spill):
    """Regression (red team E7 f01): an output over the limits that ``max_total_bytes`` cannot hold
    (not even its record) was previewed "output not stored" yet reported as success (is_error False,
    no ``storage_error``); it is the storage failure a full disk is, the store's preview kept."""
    with ToolOutputStore(tmp_path, durable=False, config={"tool_output": {"max_total_bytes": 1}}) as limited:
        result = tools.bash(limited, "s", "c", "seq 1 100000; exit 3", spill=spill)
        assert result.is_error and result.resource is None and result.truncated
        assert result.output.startswith("1\n2\n") and "\n100000\n" in result.output
        assert "... output not stored (588895 bytes, 100000 lines in all): max_total_bytes 1 cannot hold even its " \
               "record" in result.output
        assert "[the output could not be kept: " in result.output and result.output.endswith("[exit code 3]")
        assert "max_total_bytes 1" in result.metadata["storage_error"] and result.metadata["stored_bytes"] == 0
        # Shown whole, an output needs no room: still a success.
        assert tools.bash(limited, "s", "c", "echo small").output == "small"
        assert not tools.bash(limited, "s", "c", "echo small").is_error


def test_bash_output_running_outputs_leave_no_room_for_is_a_storage_failure(tmp_path):
    """Regression (red team E7 f01): the other way the quota refuses an output (running background
    outputs, never evicted, hold its room) was a success too."""
    from overspill._owner import current_owner

    with ToolOutputStore(tmp_path, durable=False, config={"tool_output": {"max_total_bytes": 200_000}}) as limited:
        writer = limited._backend.create_growing("0" * 12 + "r" * 14, session_id="s", tool_call_id="c",
                                                 mime="text/plain", name=None, owner=current_owner(), process=None)
        try:
            writer.write(memoryview(b"x" * 199_000))
            writer.seal()
            result = tools.bash(limited, "s", "c", "seq 1 100000")
            assert result.is_error and result.resource is None
            assert "running background commands' outputs (never evicted) hold" in result.metadata["storage_error"]
            assert "... output not stored (588895 bytes" in result.output
        finally:
            writer.abort()


def test_skill_front_matter_surrogate_escapes_are_replacement_characters(store, tmp_path):
    """Review: a "\\ud800" escape in a double-quoted value gave a lone surrogate, which the answer
    could not be encoded with (a raw UnicodeEncodeError out of MCP or stdout)."""
    (tmp_path / "pdf").mkdir()
    (tmp_path / "pdf" / "SKILL.md").write_text('---\nname: pdf\ndescription: "a \\ud800 b \\U0001F600"\n---\n# PDF\n')
    result = tools.skill(store, "s", "c", "pdf", roots=[tmp_path])
    assert result.metadata["description"] == "a \ufffd b \U0001F600"
    result.metadata["description"].encode("utf-8")


def test_webfetch_timeout_bounds_the_conversion_of_a_page_html_parser_is_quadratic_on(store, declared_server):
    """Regression (red team F7 f02): html.parser is quadratic on many unclosed ``<a `` tags
    (CVE-2025-6069, unfixed in the Pythons before 3.11.14): converting 60 KB of them took over
    a minute, after the fetch and outside its timeout.  The conversion runs in a worker within
    what the timeout leaves; one that does not finish gives the page's HTML and a last line
    saying so.  A normal page converts as html_to_markdown converts it."""
    page = b"<html><body>" + b"<a " * 8000  # about 10 s of html.parser here where it is quadratic
    _DeclaredHandler.ROUTES["/unclosed-anchors"] = ([("Content-Type", "text/html")], page, None)
    result = tools.webfetch(store, "s", "c", declared_server + "/unclosed-anchors", timeout=1)
    assert not result.is_error, result.output[:200]
    # A parser with the CVE fixed ignores an unclosed tag at the end (HTML5's rule) and is linear.
    if "<a" in html_to_text("<html><body><a <a <a "):
        assert result.metadata["converted"] is False and result.metadata["content_type"] == "text/html"
        assert result.resource is None and result.output == page.decode() + ("\n[webfetch: the page could not be converted to markdown within "
                                          "the 1-second timeout; a larger timeout may convert it: this is its HTML]")
    else:
        assert "converted" not in result.metadata
    normal = b"<html><body><h1>Title</h1><p>Some <a href='/x'>link</a> and <b>bold</b>.</p></body></html>"
    _DeclaredHandler.ROUTES["/normal"] = ([("Content-Type", "text/html")], normal, None)
    for format, convert in (("markdown", html_to_markdown), ("text", html_to_text)):
        converted = tools.webfetch(store, "s", "c", declared_server + "/normal", format=format, timeout=10)
        assert converted.output == convert(normal.decode()) and "converted" not in converted.metadata


# What memory holds of an output that is not stored (spilling off, or a store that cannot be
# opened): lines whose view is known, so a preview of it can be checked line by line.
_HELD_OUTPUTS = {
    # ANSI colours around each number: the view is the number.
    "colour": (lambda i: b"\x1b[31m%d\x1b[0m\n" % i, lambda i: f"{i}"),
    # Latin-1 text: each invalid byte is shown as U+FFFD (3 bytes shown for 1 stored).
    "latin1": (lambda i: ("H\xe9llo w\xf6rld fa\xe7ade %d\n" % i).encode("latin-1"),
               lambda i: f"H\ufffdllo w\ufffdrld fa\ufffdade {i}"),
}
_HELD_SCRIPT = """import sys
kind, count = sys.argv[1], int(sys.argv[2])
if kind == "colour":
    line = lambda i: b"\\x1b[31m%d\\x1b[0m\\n" % i
elif kind == "latin1":
    line = lambda i: ("H\\xe9llo w\\xf6rld fa\\xe7ade %d\\n" % i).encode("latin-1")
else:
    line = lambda i: b"%d\\r" % i
sys.stdout.buffer.write(b"".join(line(i) for i in range(1, count + 1)))
"""


def _check_memory_preview(shown: str, kind: str, count: int, max_bytes: int) -> None:
    """``shown`` (a preview from memory of ``count`` lines of ``kind``) is their view, within
    ``max_bytes`` as shown, and its marker counts exactly the output bytes between head and tail."""
    assert "\x1b" not in shown and "\r" not in shown, shown[:80]
    found = re.search(r"(?m)^\.\.\. (\d+) [^\n]*omitted here[^\n]*\.\.\.$", shown)
    assert found, shown[:200]
    head, tail = shown[:found.start()], shown[found.end():]
    assert tail.startswith("\n\n") or not tail
    tail = tail[2:]
    size = len(head.encode("utf-8", "surrogatepass")) + len(tail.encode("utf-8", "surrogatepass"))
    assert size <= max_bytes + 2, size  # (+2: the newlines around the marker)
    if kind not in _HELD_OUTPUTS:
        return  # (redraws: one line, whose view is only what follows a last \r)
    assert size > max_bytes // 2, size  # the budget is used: the limit is what cut
    raw, view = _HELD_OUTPUTS[kind]
    assert head.endswith("\n")  # one blank line before the marker
    head_lines = head[:-1].split("\n")
    assert head_lines[-1] == ""  # the head ends its last line: the cut is on a line boundary
    head_lines = head_lines[:-1]
    tail_lines = tail.split("\n")
    first_tail = count - len(tail_lines) + 1
    assert head_lines == [view(i) for i in range(1, len(head_lines) + 1)]
    assert tail_lines == [view(i) for i in range(first_tail, count + 1)]
    total = sum(len(raw(i)) for i in range(1, count + 1))
    shown_raw = sum(len(raw(i)) for i in range(1, len(head_lines) + 1))
    shown_raw += sum(len(raw(i)) for i in range(first_tail, count + 1))
    assert int(found.group(1)) == total - shown_raw


def test_bash_without_spill_previews_the_view_of_what_memory_held_within_the_limits(tmp_path):
    """Regression (red team H8 f02): with spilling off, an output over the 1 MiB capture was
    previewed from its raw bytes: ANSI escapes and \\r redraws reached the model, and each
    invalid UTF-8 byte counted 1 byte though shown as U+FFFD (3), so a Latin-1 log showed
    10,402 bytes at max_bytes 8192.  It is previewed as the store previews a stored start and a
    kept true end: the view, within the limits as shown, the marker counting the bytes of output
    (as written) between head and tail exactly."""
    script = tmp_path / "held.py"
    script.write_text(_HELD_SCRIPT)
    config = {"tool_output": {"max_bytes": 8192, "trim_runs": False}}
    with ToolOutputStore(tmp_path / "data", durable=False, config=config) as limited:
        for kind, count in (("colour", 300_000), ("latin1", 60_000), ("redraws", 300_000)):
            result = tools.bash(limited, "s", kind, f"{sys.executable} {script} {kind} {count}", spill=False)
            assert result.truncated and result.resource is None and not result.is_error
            assert "spilling was off" in result.output
            _check_memory_preview(result.output, kind, count, 8192)
        assert limited.resources("s") == []


def test_bash_output_whose_store_cannot_be_opened_previews_the_view_of_what_memory_held(tmp_path):
    """Regression (red team H8 f02): an output over the limits whose store could not be opened
    was previewed from the raw bytes in memory (escapes, redraws, invalid bytes counted as 1
    shown byte).  Held whole or only its start and true end, it is previewed as its view within
    the limits as shown, the marker counting the output bytes between head and tail exactly."""
    from overspill.config import resolve_limits
    from overspill.errors import StorageError
    from overspill.tools.bash import execute

    def unusable() -> ToolOutputStore:
        raise StorageError(0, "the output folder could not be opened")

    script = tmp_path / "held.py"
    script.write_text(_HELD_SCRIPT)
    limits = resolve_limits({"tool_output": {"max_bytes": 8192, "trim_runs": False}})
    # Held whole (under the 1 MiB capture), then only its start and its true end.
    for kind, count in (("colour", 20_000), ("latin1", 20_000), ("colour", 300_000), ("latin1", 60_000)):
        ran = execute(None, "s", "c", f"{sys.executable} {script} {kind} {count}", timeout=60, limits=limits,
                      open_store=unusable)
        assert ran.storage_error is not None and ran.resource is None and ran.truncated
        assert "could not be stored" in ran.shown
        _check_memory_preview(ran.shown, kind, count, 8192)


def test_grep_files_names_a_file_whose_name_is_not_utf8_with_u_fffd(store, tmp_path, engine):
    """Regression (red team X9 f01): the Python search (no rg, or a pattern rg refuses such as a
    look-behind) listed ``bad\\xffname.txt`` with surrogateescape's lone surrogate, ``bad\\udcffname.txt``,
    which no host can encode as UTF-8 (the MCP server died writing it); rg's search showed U+FFFD.
    Both now show U+FFFD, and failures quoting such a name carry only whole characters."""
    folder = os.fsencode(tmp_path / "tree")
    os.mkdir(folder)
    with open(folder + b"/bad\xffname.txt", "wb") as file:
        file.write(b"hello\n")
    for pattern in ("hello", "(?<=h)ello"):
        result = tools.grep(store, "s", "c", pattern, cwd=tmp_path / "tree")
        assert result.output == "bad\ufffdname.txt:1:hello", (pattern, result.output)
        result.output.encode("utf-8")
    # The model (or a host) may name the file as os.fsdecode does: the failures quoting it are UTF-8.
    missing = os.fsdecode(b"gone\xff.txt")
    for failed in (tools.read(store, "s", "c", path=missing, cwd=tmp_path),
                   tools.grep(store, "s", "c", "x", path=missing, cwd=tmp_path)):
        assert failed.is_error and "gone\ufffd.txt" in failed.output, failed.output
        failed.output.encode("utf-8")


def test_skill_from_a_folder_whose_name_is_not_utf8_is_shown_with_u_fffd(store, tmp_path):
    """Regression (red team X9 f01): the skill's header named its folder with a lone surrogate."""
    root = os.fsencode(tmp_path / "skills\xe9") + b"\xff"
    os.makedirs(root + b"/pdf")
    with open(root + b"/pdf/SKILL.md", "wb") as file:
        file.write(b"---\nname: pdf\ndescription: PDFs\n---\nbody\n")
    result = tools.skill(store, "s", "c", "pdf", roots=[os.fsdecode(root)])
    assert not result.is_error and "skills\xe9\ufffd/pdf;" in result.output, result.output
    result.output.encode("utf-8")


@pytest.mark.skipif(shutil.which("rg") is None, reason="rg is not on PATH")
def test_grep_files_a_newline_in_a_file_name_is_shown_as_backslash_n_by_both_searches(store, tmp_path, monkeypatch):
    """Regression (red team X9 f05): rg's output was split at each newline before the NUL after a
    file's name was looked for, so a match in ``DIR/new\\nline.txt`` was listed as ``line.txt:1:needle``
    (a file that does not exist, its folder lost); the Python search listed the name with its
    newline, two lines of the listing.  Both now show the newline as ``\\n``, one result a line, and a
    late NUL's notice after such a file's matches still drops them."""
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "new\nline.txt").write_text("needle\n")
    (tmp_path / "dir" / "z.txt").write_text("needle\nneedle\n")
    (tmp_path / "dir" / "late\nnul.bin").write_bytes(b"needle\n" + b"a" * (2 << 20) + b"\n\0\n")
    expected = "dir/new\\nline.txt:1:needle\ndir/z.txt:1:needle\ndir/z.txt:2:needle"
    with_rg = tools.grep(store, "s", "c", "needle", cwd=tmp_path)
    named = tools.grep(store, "s", "c", "needle", path="dir/new\nline.txt", cwd=tmp_path)
    monkeypatch.setattr(grep_module, "_ripgrep", lambda: None)
    in_python = tools.grep(store, "s", "c", "needle", cwd=tmp_path)
    assert with_rg.output == in_python.output == expected, (with_rg.output, in_python.output)
    assert with_rg.metadata["matches"] == in_python.metadata["matches"] == 3
    assert named.output == "dir/new\\nline.txt:1:needle"


class _EchoHandler(http.server.BaseHTTPRequestHandler):
    """Answers with the request's target and its Authorization header; /moved redirects to another port's /moved."""

    elsewhere = ""

    def log_message(self, *args):  # keep test output clean
        pass

    def do_GET(self):  # noqa: N802 - the http.server API
        if self.path == "/moved" and self.elsewhere:
            self.send_response(302)
            self.send_header("Location", self.elsewhere + "/landed")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = f"target={self.path} authorization={self.headers.get('Authorization')}".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_webfetch_percent_encodes_a_url_as_browsers_do_and_sends_its_credentials_as_basic_auth(store):
    """Regression (red team X9 f02): a URL with a non-ASCII character or a space, as models write
    them (``.../wiki/Café``, ``?q=two words``), was refused with a codec's message or "URL can't
    contain control characters"; ``http://user:pass@host/`` failed resolving "user:pass@host" and the
    error showed the password.  The path and query are percent-encoded (an %XX kept as it is), the
    host IDNA-encoded, the userinfo sent as Basic auth (never to a redirect's target), and no message
    shows a password."""
    import base64

    for base in _serving(_EchoHandler):
        for other in _serving(_EchoHandler):
            _EchoHandler.elsewhere = other
            cases = {"/wiki/Café": "target=/wiki/Caf%C3%A9 ",
                     "/search?q=two words&x=é%20": "target=/search?q=two%20words&x=%C3%A9%20 ",
                     '/a"b<c>?d"<>': "target=/a%22b%3Cc%3E?d%22%3C%3E "}
            for path, expected in cases.items():
                result = tools.webfetch(store, "s", "c", base + path, timeout=10)
                assert not result.is_error and result.output.startswith(expected), (path, result.output)
            port = base.rsplit(":", 1)[1]
            authed = tools.webfetch(store, "s", "c", f"http://us%65r:p%40ss:w@127.0.0.1:{port}/x", timeout=10)
            token = base64.b64encode(b"user:p@ss:w").decode()
            assert not authed.is_error and authed.output == f"target=/x authorization=Basic {token}", authed.output
            assert "p%40ss" not in authed.metadata["url"] and authed.metadata["url"].endswith(f"127.0.0.1:{port}/x")
            moved = tools.webfetch(store, "s", "c", f"http://user:secret@127.0.0.1:{port}/moved", timeout=10)
            assert moved.output == "target=/landed authorization=None", moved.output
            # The host in IDNA (no such host here: the failure names it without the password).
            unknown = tools.webfetch(store, "s", "c", "http://user:secret@bücher.invalid/", timeout=10)
            assert unknown.is_error and "secret" not in unknown.output and "user:***@" in unknown.output
    for url in ("http://user:secret@127.0.0.1:1/", "http://user:secret@[::1/", "ftp://user:secret@host/"):
        refused = tools.webfetch(store, "s", "c", url, timeout=10)
        assert refused.is_error and "secret" not in refused.output and "***" in refused.output, refused.output
    bad_host = tools.webfetch(store, "s", "c", "http://" + "é" * 70 + ".com/", timeout=10)
    assert bad_host.is_error and "invalid host name" in bad_host.output


def test_webfetch_a_binary_body_without_a_content_type_is_refused_as_a_binary_type_is(store, declared_server):
    """Regression (red team X9 f03): a body sent without a Content-Type was taken as text/plain
    (http.client's default) and a gzip'd tarball's bytes reached the model as thousands of U+FFFD
    and NULs.  Such a body is sniffed by the bash tool's rule (``output_is_binary``): binary is
    refused as a binary Content-Type is, and nothing is stored; text stays text."""
    packed = gzip.compress(bytes(range(256)) * 80)
    cases = {"/untyped/gzip": packed, "/untyped/nul-late": b"a" * 9000 + b"\0" + b"b" * 10,
             "/untyped/nul": b"ab\0cd", "/untyped/text": "plain café\n".encode() * 2000,
             "/untyped/latin1": "été né\n".encode("latin-1")}
    for path, body in cases.items():
        _DeclaredHandler.ROUTES[path] = ([], body, None)
    for path in ("/untyped/gzip", "/untyped/nul"):
        result = tools.webfetch(store, "s", "c", declared_server + path, timeout=10)
        assert result.is_error and result.output == (f"refused: {declared_server}{path} returned application/"
                                                     "octet-stream (no Content-Type; its bytes are binary), which "
                                                     "is not text"), result.output
    assert store.resources("s") == []
    text = tools.webfetch(store, "s", "c", declared_server + "/untyped/text", timeout=10)
    assert not text.is_error and text.output.startswith("plain café\n") and text.metadata["content_type"] == "text/plain"
    latin1 = tools.webfetch(store, "s", "c", declared_server + "/untyped/latin1", timeout=10)
    assert not latin1.is_error and latin1.output == "\ufffdt\ufffd n\ufffd\n"
    late = tools.webfetch(store, "s", "c", declared_server + "/untyped/nul-late", timeout=10)
    assert not late.is_error  # the first 8 KiB decide, as for a command's output


@pytest.mark.parametrize("content_type", ["", "octet-stream", "image", ";charset=utf-8", "image/", "text plain"])
def test_webfetch_a_binary_body_whose_content_type_is_no_type_is_refused_as_untyped(store, declared_server,
                                                                                     content_type):
    """Regression (red team B11 f1): a PNG sent with ``Content-Type:`` empty or no ``type/subtype``
    came back as text: email's get_content_type() reads such a value as text/plain, and the body
    was sniffed only when the header was absent.  A value that is no valid MIME type is no type
    (RFC 9110 8.3: the recipient may sniff), so the body is sniffed as an untyped one is."""
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40
    path = "/malformed-type/" + content_type.replace(" ", "_")
    _DeclaredHandler.ROUTES[path] = ([("Content-Type", content_type)], png, None)
    result = tools.webfetch(store, "s", "c", declared_server + path, timeout=10)
    assert result.is_error and result.output == (f"refused: {declared_server}{path} returned application/"
                                                 f"octet-stream (its Content-Type {content_type!r} is no type/"
                                                 "subtype; its bytes are binary), which is not text"), result.output
    assert store.resources("s") == []
    text_path = path + "/text"
    _DeclaredHandler.ROUTES[text_path] = ([("Content-Type", content_type)], "plain café\n".encode(), None)
    text = tools.webfetch(store, "s", "c", declared_server + text_path, timeout=10)
    assert not text.is_error and text.output == "plain café\n" and text.metadata["content_type"] == "text/plain"


@pytest.mark.parametrize(("lines", "body", "expected"), [
    (["gzip", "gzip"], gzip.compress(gzip.compress(b"twice compressed")), "'gzip, gzip'"),
    (["gzip", "br"], gzip.compress(b"then brotli"), "'gzip, br'"),
    (["identity", "gzip"], gzip.compress(b"gzip second"), "'identity, gzip'"),
    (["gzip", ""], gzip.compress(b"an empty line is no coding"), None),
], ids=["gzip-gzip", "gzip-br", "identity-gzip", "gzip-empty"])
def test_webfetch_reads_every_content_encoding_field_line(store, declared_server, lines, body, expected):
    """Regression (red team B11 f2): with two Content-Encoding field lines only the first was read
    (``headers.get``), so a body gzip'd twice was shown as still-compressed bytes.  Several lines are
    one comma-separated list (RFC 9110 5.3; an empty one adds nothing), refused as several codings are."""
    path = "/encodings/" + "-".join(lines)
    _DeclaredHandler.ROUTES[path] = ([("Content-Type", "text/plain")] + [("Content-Encoding", line) for line in lines],
                                     body, None)
    result = tools.webfetch(store, "s", "c", declared_server + path, timeout=10)
    if expected is None:
        assert not result.is_error and result.output == "an empty line is no coding", result.output
    else:
        assert result.is_error and result.output == (f"refused: {declared_server}{path} is sent with Content-Encoding "
                                                     f"{expected}, which webfetch cannot decode"), result.output
        assert store.resources("s") == []


_WINDOWS_1252 = b"\x93Quoted\x94 \x97 dash \x85 caf\xe9 \x80 \x81\x8d\x8f\x90\x9d."


@pytest.mark.parametrize(("where", "label", "body", "expected"), [
    # Labels the WHATWG Encoding Standard maps to windows-1252, as browsers decode them; the five bytes
    # Python's cp1252 leaves undefined are the C1 controls of their value, as the standard's index says.
    *[(where, label, _WINDOWS_1252, "\u201cQuoted\u201d \u2014 dash \u2026 caf\u00e9 \u20ac \x81\x8d\x8f\x90\x9d.")
      for where in ("header", "meta") for label in ("iso-8859-1", "Latin1", "us-ascii", " ascii ", "windows-1252")],
    # Other WHATWG encodings by their Python codec.
    ("header", "iso-8859-2", b"\xb1\xe6", "\u0105\u0107"), ("meta", "koi8-r", b"\xc1", "\u0430"),
    ("header", "shift_jis", "日本".encode("cp932"), "日本"), ("header", "x-user-defined", b"a\x80", "a\uf780"),
    ("header", "windows-1250", b"\x81\x8a", "\x81\u0160"), ("header", "gbk", "中文".encode("gb18030"), "中文"),
    # The three bytes where the standard's index and Python's codec differ (review R5).
    ("header", "koi8-u", b"\xae\xbe", "\u045e\u040e"), ("header", "windows-1255", b"\xca", "\u05ba"),
    # Labels the standard does not know are no declared charset: the page is UTF-8.
    *[(where, label, body, expected) for where in ("header", "meta") for label, body, expected in [
        ("unicode_escape", b"x\\u0041y", "x\\u0041y"), ("utf-7", b"a+AEE-b", "a+AEE-b"),
        ("rot13", b"uryyb", "uryyb"), ("latin-1", "café".encode(), "café"), ("cp437", "café".encode(), "café")]],
])
def test_webfetch_decodes_a_charset_by_the_whatwg_label_table(store, declared_server, where, label, body, expected):
    """Regression (red team B11 f4): ``charset=iso-8859-1``, ``latin1`` and ``us-ascii`` were decoded
    by Python's codecs, not as windows-1252 as the WHATWG Encoding Standard (and every browser) says:
    curly quotes and dashes reached the model as C1 controls or U+FFFD; and a label Python's codec
    registry knows but the standard does not (``unicode_escape``, ``utf-7``) was honoured, so
    ``x\\u0041y`` became ``xAy``.  A label decodes by the standard's table, in a header or a <meta>."""
    path = f"/whatwg/{where}/{label.encode().hex()}/{len(body)}"
    if where == "header":
        _DeclaredHandler.ROUTES[path] = ([("Content-Type", f"text/plain; charset=\"{label}\"")], body, None)
    else:
        page = (b'<html><head><meta charset="' + label.strip().encode() + b'"></head><body><p>' + body
                + b"</p></body></html>")
        _DeclaredHandler.ROUTES[path] = ([("Content-Type", "text/html")], page, None)
    result = tools.webfetch(store, "s", "c", declared_server + path, format="text", timeout=10)
    assert not result.is_error and result.output.strip() == expected, result.output


@pytest.mark.parametrize("location", ["gopher://user:s3cret@example.com/x", "file://user:s3cret@localhost/etc/passwd",
                                      "FILE://user:s3cret@localhost/etc/passwd", "ftp://user:s3cret@example.com/",
                                      "javascript://user:s3cret@x/%0Aalert(1)"])
def test_webfetch_a_refused_redirect_never_shows_its_password(store, location):
    """Regression (red team B11 f3): a redirect to gopher:, file: or data: was refused by urllib's
    own check (before ``redirect_request``, where the target's password is masked), whose message
    quoted the Location whole: the password reached the model.  Every redirect to a scheme other
    than http and https is refused by webfetch's one rule, its message masked as every one is."""
    answer = f"HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n".encode()
    url, listener = _raw_server(lambda connection: connection.sendall(answer))
    with listener:
        result = tools.webfetch(store, "s", "c", url.replace("http://", "http://u:pw@"), timeout=10)
    assert result.is_error and result.output == "refused a redirect to " + location.replace("s3cret", "***"), \
        result.output


def test_webfetch_follows_a_redirect_whose_target_has_userinfo_without_sending_it(store):
    """Regression (red team B11 f5): a redirect to ``http://user:pw@host/`` failed with "Name or
    service not known" (urllib asked for the host ``user:pw@host``).  It is followed to the host, the
    userinfo left out of the request, and no credentials are sent to the redirect's target (curl would
    send them as Basic auth; the model never gave them)."""
    for base in _serving(_EchoHandler):
        for other in _serving(_EchoHandler):
            _EchoHandler.elsewhere = other.replace("http://", "http://user:secret@")
            try:
                moved = tools.webfetch(store, "s", "c", base + "/moved", timeout=10)
            finally:
                _EchoHandler.elsewhere = ""
            assert not moved.is_error and moved.output == "target=/landed authorization=None", moved.output
            assert moved.metadata["url"] == other + "/landed", moved.metadata


@pytest.mark.parametrize("interim", [b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n",
                                     b"HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                                     b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\n\r\n"],
                         ids=["103", "102-103-100-103"])
def test_webfetch_skips_interim_responses_before_the_final_one(store, interim):
    """Regression (red team B11 f6): a 103 Early Hints before the 200 made the fetch an error
    ("HTTP 103 Early Hints"): http.client skips only 100 Continue.  RFC 9110 15.2: a client reads
    every 1xx interim response (but 101) before the final one and goes on."""
    final = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
    url, listener = _raw_server(lambda connection: connection.sendall(interim + final))
    with listener:
        result = tools.webfetch(store, "s", "c", url, timeout=10)
    assert not result.is_error and result.output == "hello" and result.metadata["status"] == 200, result.output


@pytest.mark.parametrize("lines", [[b"gzip, chunked"], [b"chunked", b"gzip"], [b"compress"]])
def test_webfetch_refuses_a_transfer_coding_other_than_chunked(store, lines):
    """Regression (red team B11 f6): ``Transfer-Encoding: gzip, chunked`` returned the body with its
    chunk framing as text: http.client undoes only a lone ``chunked`` and reads anything else as
    it comes.  Any other transfer coding is refused in one line, as an unknown content coding is."""
    body = b"5\r\nhello\r\n0\r\n\r\n"
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n" + b"".join(b"Transfer-Encoding: " + line + b"\r\n"
                                                                       for line in lines)
    url, listener = _raw_server(lambda connection: connection.sendall(head + b"Connection: close\r\n\r\n" + body))
    with listener:
        result = tools.webfetch(store, "s", "c", url, timeout=10)
    coding = b", ".join(lines).decode()
    assert result.is_error and result.output == (f"refused: {url} is sent with Transfer-Encoding {coding!r}, which "
                                                 "webfetch cannot decode"), result.output
    assert store.resources("s") == []


@pytest.mark.parametrize("framing", ["chunked", "close"])
def test_webfetch_follows_a_redirect_without_reading_its_body(store, framing):
    """Regression (review R23, 1): urllib's redirect handler reads the redirect's whole body into memory
    (``fp.read()``) before it follows the Location, and webfetch's 5 MiB limit never applied to it: a
    302 with a 300 MiB body, then a 2-byte page, raised the peak by ~610 MiB.  A redirect's body is
    nobody's page: the response is closed unread (urllib sends ``Connection: close``, so nothing is
    left to drain), and the fetch goes on to the page."""
    import tracemalloc

    page = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
    page_url, page_listener = _raw_server(lambda connection: connection.sendall(page))
    block = b"a" * (1 << 20)

    def redirect(connection):
        connection.sendall(b"HTTP/1.1 302 Found\r\nLocation: " + page_url.encode() + b"\r\n"
                           + (b"Transfer-Encoding: chunked\r\n\r\n" if framing == "chunked" else
                              b"Connection: close\r\n\r\n"))
        for _ in range(64):  # 64 MiB, in chunks or to the close
            connection.sendall(b"100000\r\n" + block + b"\r\n" if framing == "chunked" else block)
        connection.sendall(b"0\r\n\r\n" if framing == "chunked" else b"")

    url, listener = _raw_server(redirect)
    tracemalloc.start()
    try:
        with listener, page_listener:
            result = tools.webfetch(store, "s", "c", url, timeout=60)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert not result.is_error and result.output == "ok", result.output
    assert peak < 16 << 20, peak


_CHUNKED_HELLO = b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"


@pytest.mark.parametrize(("fields", "version"), [
    (b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n", b"1.1"),
    (b"Content-Length: 300\r\nTransfer-Encoding: chunked\r\n", b"1.1"),
    (b"Transfer-Encoding: chunked\r\nContent-Length: 99999999999\r\n", b"1.1"),
    (b"Transfer-Encoding: chunked\r\nContent-Length: 5, 6\r\n", b"1.1"),
    (b"Transfer-Encoding: chunked\r\nContent-Length: +5\r\n", b"1.1"),
    (b"Transfer-Encoding:  Chunked \r\nContent-Length: 5\r\n", b"1.1"),
    (b"Transfer-Encoding:  Chunked \r\n", b"1.1"),
    (b"Transfer-Encoding: \r\nTransfer-Encoding: chunked\r\n", b"1.1"),
    (b"Transfer-Encoding: chunked,\r\n", b"1.1"),
], ids=["shorter-length", "longer-length-first", "length-over-the-limit", "differing-lengths", "invalid-length",
        "spaced-and-capitalised-with-length", "spaced-and-capitalised", "blank-line-first", "empty-member"])
def test_webfetch_reads_a_chunked_body_by_its_chunks_whatever_content_length_says(store, fields, version):
    """Regression (fix F15, 2): a response sent with ``Transfer-Encoding: chunked`` and a
    ``Content-Length`` was refused when the length was over the limit or not one number, though
    the chunks were what framed it; and ``Transfer-Encoding:  Chunked `` (white space around it, which
    a field value may have), or a blank Transfer-Encoding line before the ``chunked`` one, reached
    the model as its chunk framing (``5\\r\\nhello...``): http.client reads the first line only,
    unstripped.  RFC 9112 (6.1, 6.3): Transfer-Encoding overrides Content-Length; a list's empty
    members are ignored (RFC 9110 5.6.1).  The body is the chunks' bytes."""
    head = b"HTTP/" + version + b" 200 OK\r\nContent-Type: text/plain\r\n" + fields
    url, listener = _raw_server(lambda connection: connection.sendall(head + b"Connection: close\r\n\r\n"
                                                                      + _CHUNKED_HELLO))
    with listener:
        result = tools.webfetch(store, "s", "c", url, timeout=10)
    assert not result.is_error and result.output == "hello world", result.output


@pytest.mark.parametrize("coding", [b"chunked", b" chunked", b"Chunked", b"chunked,"])
def test_webfetch_a_204_with_a_transfer_encoding_ends_after_its_header_fields(store, coding):
    """Regression (review R23, 6): a 204 No Content sent with ``Transfer-Encoding: chunked`` on a
    connection the server keeps open was read as chunked, and the fetch waited for a chunk until its
    timeout.  RFC 9112 (6.3): a 204's (or 304's, or a 1xx's) message ends after its header fields,
    whatever they say; it is the empty page a 204 without the field is."""
    ended = threading.Event()

    def answer(connection):
        connection.sendall(b"HTTP/1.1 204 No Content\r\nTransfer-Encoding: " + coding + b"\r\n\r\n")
        ended.wait(60)  # the connection stays open, as a kept-alive one does

    url, listener = _raw_server(answer)
    try:
        with listener:
            result = tools.webfetch(store, "s", "c", url, timeout=5)
    finally:
        ended.set()
    assert not result.is_error and result.output == "" and result.metadata["status"] == 204, result.output


@pytest.mark.parametrize(("lines", "listed"), [([b""], ""), ([b" ", b","], ", ,"), ([b"identity"], "identity"),
                                               ([b"chunked", b"identity"], "chunked, identity")],
                         ids=["empty", "only-empty-members", "identity", "chunked-then-identity"])
def test_webfetch_refuses_a_transfer_encoding_that_names_no_coding_it_decodes(store, lines, listed):
    """Regression (fix F15, 2): a ``Transfer-Encoding:`` line with no coding was passed over (the
    field list kept only non-empty lines) and the body's chunk framing reached the model as text.
    A Transfer-Encoding is one or more codings (RFC 9112 6.1); one that is not exactly ``chunked``
    (none, ``identity``, which RFC 9112 no longer has) is refused in one line, nothing kept."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n" + b"".join(b"Transfer-Encoding: " + line + b"\r\n"
                                                                       for line in lines)
    url, listener = _raw_server(lambda connection: connection.sendall(head + b"Connection: close\r\n\r\n"
                                                                      + _CHUNKED_HELLO))
    with listener:
        result = tools.webfetch(store, "s", "c", url, timeout=10)
    assert result.is_error and result.output == (f"refused: {url} is sent with Transfer-Encoding {listed!r}, which "
                                                 "webfetch cannot decode"), result.output
    assert store.resources("s") == []


@pytest.mark.parametrize("length", [b"", b"Content-Length: 11\r\n"], ids=["alone", "with-length"])
def test_webfetch_refuses_an_http_1_0_response_with_a_transfer_encoding(store, length):
    """Regression (fix F15, 2): an HTTP/1.0 response with ``Transfer-Encoding: chunked`` was read by
    its chunks.  HTTP/1.0 has no transfer codings: RFC 9112 (6.1) says a client MUST treat such a
    message's framing as faulty, even with a Content-Length.  It is refused in one line."""
    head = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n" + length
    url, listener = _raw_server(lambda connection: connection.sendall(head + b"\r\n" + _CHUNKED_HELLO))
    with listener:
        result = tools.webfetch(store, "s", "c", url, timeout=10)
    assert result.is_error and result.output == (f"refused: {url} is an HTTP/1.0 response sent with Transfer-Encoding "
                                                 "'chunked', which HTTP/1.0 does not have: its framing is faulty"), \
        result.output
    assert store.resources("s") == []


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 503 OK\x1b[2J\x1b]0;title\x07 \x9b31m\x7f\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 302 Found\r\nLocation: ftp://x/\x1b[2J\x1b]0;title\x07\x9b31m\x7f\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/2.\x1b[2J\x1b]0;title\x07\x9b31m\x7f 200 OK\r\nContent-Length: 0\r\n\r\n",
], ids=["reason", "location", "version"])
def test_webfetch_an_error_line_shows_a_servers_control_characters_escaped(store, answer):
    """Regression (fix O14, 3): a reason phrase ``OK\\x1b[2J...`` reached the model's error line
    raw, and so did a refused redirect's Location and a status line's version: a hostile server's
    escape sequences in the model's transcript and any terminal that shows it.  Every control
    character of an error line is written as its escape, by the rule the CLI prints names by."""
    url, listener = _raw_server(lambda connection: connection.sendall(answer))
    with listener:
        result = tools.webfetch(store, "s", "c", url, timeout=10)
    assert result.is_error and result.output.isprintable(), repr(result.output)
    assert "\\x1b[2J\\x1b]0;title\\x07" in result.output and "\\x9b31m\\x7f" in result.output, result.output


@pytest.mark.parametrize(("lines", "why"), [
    ([b"5", b"11"], "differing Content-Length values"), ([b"11", b"5"], "differing Content-Length values"),
    ([b"5, 11"], "differing Content-Length values"), ([b"5", b"5, 11"], "differing Content-Length values"),
    ([b"5", b"x"], "differing Content-Length values"),
    ([b"+5"], "an invalid Content-Length"), ([b"5_0"], "an invalid Content-Length"),
], ids=["two-lines", "longer-first", "one-list", "line-and-list", "one-no-number", "sign", "underscore"])
def test_webfetch_refuses_differing_or_invalid_content_lengths(store, lines, why):
    """Regression (fix O14, 1): a response with ``Content-Length: 5`` and ``Content-Length: 11``
    was served as http.client read it: the first line's length (here 5 or 11 bytes), and a list
    ("5, 11") as no length, the body to the close; ``+5`` and ``5_0`` (no decimal number, which
    http.client's ``int`` reads) as 5 and 50.  RFC 9110 (8.6) and 9112 (6.3): differing or invalid
    values make the response malformed (a smuggling vector); it is refused in one line, as a
    transfer coding webfetch cannot decode is, and nothing is kept."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n" + b"".join(b"Content-Length: " + line + b"\r\n"
                                                                       for line in lines)
    url, listener = _raw_server(lambda connection: connection.sendall(head + b"Connection: close\r\n\r\nhello world"))
    with listener:
        result = tools.webfetch(store, "s", "c", url, timeout=10)
    values = b", ".join(lines).decode()
    expected = f"refused: {url} is sent with {why} {values!r}: its length is unknown"
    assert result.is_error and result.output == expected, result.output
    assert store.resources("s") == []


@pytest.mark.parametrize(("lines", "listed"), [
    ([b""], ""), ([b"   "], ""), ([b"5", b""], "5, "), ([b"", b"5"], ", 5"), ([b"5", b"\t", b"5"], "5, , 5"),
], ids=["empty", "spaces", "after-a-value", "before-a-value", "between-equal-values"])
def test_webfetch_refuses_a_content_length_line_with_no_value(store, lines, listed):
    """Review R17 (2): a ``Content-Length:`` field line with no value was passed over (the field list
    read only the non-empty lines): alone, the body was served to the close ('hello world'); beside
    ``Content-Length: 5``, as 5 bytes; yet ``Content-Length: , `` was refused as invalid.  RFC 9110
    (8.6): a value is at least one digit; a line without one is an invalid Content-Length, refused
    like ``, `` and nothing kept."""
    _assert_refused_for_its_content_length(store, b"".join(b"Content-Length: " + line + b"\r\n" for line in lines),
                                           listed)


@pytest.mark.parametrize("value", [b"5,", b",5", b"5,,5", b"5, 5,", b" , 5"],
                         ids=["trailing", "leading", "doubled-comma", "after-equal-values", "blank-first"])
def test_webfetch_refuses_a_content_length_list_with_an_empty_member(store, value):
    """Regression (fix F15, 1): ``Content-Length: 5,`` (a list with an empty member) was taken as 5,
    and so were ``,5`` and ``5,,5``: the empty members were dropped before the values were compared.
    RFC 9110 (8.6) lets a recipient take a list of identical values (``5, 5``) as one; anything else
    is an invalid Content-Length (RFC 9112 6.3), refused like ``+5`` and nothing kept."""
    _assert_refused_for_its_content_length(store, b"Content-Length: " + value + b"\r\n", value.strip().decode())


def _assert_refused_for_its_content_length(store, fields: bytes, listed: str) -> None:
    """A page sent with the Content-Length ``fields`` (whole header lines) is refused, naming ``listed``."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n" + fields
    url, listener = _raw_server(lambda connection: connection.sendall(head + b"Connection: close\r\n\r\nhello world"))
    with listener:
        result = tools.webfetch(store, "s", "c", url, timeout=10)
    expected = f"refused: {url} is sent with an invalid Content-Length {listed!r}: its length is unknown"
    assert result.is_error and result.output == expected, result.output
    assert store.resources("s") == []


def test_webfetch_an_im_used_delta_it_did_not_ask_for_is_an_error(store):
    """Review R17 (2): a 226 IM Used (RFC 3229: a delta of the page, for a client that sent A-IM) was
    served as if its delta were the page.  webfetch asks for no delta, so it is an HTTP error in one
    line, as a 206 it did not ask for is."""
    answer = b"HTTP/1.1 226 IM Used\r\nContent-Type: text/plain\r\nIM: vcdiff\r\nContent-Length: 5\r\n\r\nhello"
    url, listener = _raw_server(lambda connection: connection.sendall(answer))
    with listener:
        result = tools.webfetch(store, "s", "c", url, timeout=10)
    assert result.is_error and result.output == (f"HTTP 226 IM Used from {url}: a delta of the page, "
                                                 "though webfetch asked for none"), result.output
    assert store.resources("s") == []


@pytest.mark.parametrize("lines", [[b"5", b"5"], [b"5, 5"], [b"5", b" 05 , 5"]], ids=["two-lines", "list", "zeros"])
def test_webfetch_takes_repeated_equal_content_lengths_as_one(store, lines):
    """Regression (fix O14, 1): equal values, repeated or in a list, are the one length (RFC 9110
    8.6 lets a recipient take them so), and the body is held to it as to a single one: http.client
    read a list as no length and served the bytes past it."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n" + b"".join(b"Content-Length: " + line + b"\r\n"
                                                                       for line in lines)
    url, listener = _raw_server(lambda connection: connection.sendall(head + b"Connection: close\r\n\r\nhello world"))
    with listener:
        result = tools.webfetch(store, "s", "c", url, timeout=10)
    assert not result.is_error and result.output == "hello", result.output


@pytest.mark.parametrize("path", ["/partial", "/to-partial"])
def test_webfetch_a_partial_content_it_did_not_ask_for_is_an_error(store, server, path):
    """Regression (fix O14, 2): a 206 Partial Content, to a request that sent no Range, was served
    as if its part were the whole page.  webfetch asks for no range, so a 206 is not the page: it
    is an HTTP error for the model in one line, as any status that brings no page is."""
    _Handler.ranges.clear()
    result = tools.webfetch(store, "s", "c", server + path, timeout=10)
    assert _Handler.ranges == [None]  # it asked for the whole page
    assert result.is_error and result.output == (f"HTTP 206 Partial Content from {server}{path}: a part of the page, "
                                                 "though webfetch asked for all of it"), result.output
    assert store.resources("s") == []


@pytest.mark.parametrize(("html", "markdown", "text"), [
    # The page starts with the <pre>: the first line keeps its indentation (the last .strip() took it).
    ("<html><body><pre>    x = 1\n    y = 2\n</pre></body></html>", "```\n    x = 1\n    y = 2\n```\n",
     "    x = 1\n    y = 2\n"),
    # The line break right after <pre> (LF, CR LF or CR) is no content, as HTML parses it.
    ("<pre>\n    x = 1\n</pre>", "```\n    x = 1\n```\n", "    x = 1\n"),
    ("<p>a</p><pre>\r\n\n  x\n</pre>", "a\n\n```\n\n  x\n```\n", "a\n\n  x\n"),
    ("<blockquote><pre>\n  x\n</pre></blockquote>", "> ```\n>   x\n> ```\n", "  x\n"),
    # Only right after the tag: after a <code> the break is content (HTML keeps it too).
    ("<pre><code>\n  x</code></pre>", "```\n\n  x\n```\n", "  x\n"),
])
def test_html_a_pre_keeps_its_first_lines_indentation_and_drops_the_break_after_its_tag(html, markdown, text):
    """Regression (red team X9 f04): format "text" of a page starting with a <pre> lost its first
    line's indentation ('    x = 1\\n    y = 2' became 'x = 1\\n    y = 2'), and markdown kept the
    line break right after <pre>, which HTML ignores, as a blank first line of the code block."""
    assert html_to_markdown(html) == markdown
    assert html_to_text(html) == text


@pytest.mark.parametrize(("value", "expected"), [
    ('"Extract text from PDF fi\\\n  les and forms"', "Extract text from PDF files and forms"),
    ('"a \\\n  b"', "a b"),  # the spaces before the backslash are kept, the next line's indentation not
    ('"a\\\n\n  b"', "a\nb"),  # a blank line after it is still a break
    ('"a\\\\\n  b"', "a\\ b"),  # an escaped backslash escapes no break: the break folds to a space
    ('"a\\\\\\\n  b"', "a\\b"),
    ('"x\\\n  y\\\n  z"', "xyz"),
    ("'a\\\n  b'", "a\\ b"),  # single quotes have no escapes
])
def test_skill_front_matter_an_escaped_line_break_in_double_quotes_joins_the_lines(value, expected):
    """Regression (red team X9 f06): in a double-quoted scalar a backslash ending a line escapes the
    line break, which YAML leaves out ('"PDF fi\\<newline>  les"' is 'PDF files', YAML 1.2 7.3.1);
    the reader folded it to a space ('fi les').  Expected values are PyYAML's."""
    from overspill.tools._front_matter import front_matter

    assert front_matter(f"---\nname: pdf\ndescription: {value}\n---\nbody\n")["description"] == expected


def test_read_file_never_blocks_on_a_fifo_put_in_place_after_its_look(store, tmp_path, monkeypatch):
    """Red team X9 (noted): read(path=...) looked at the path with stat and then opened it
    blocking: a FIFO put in the file's place between the two blocked the tool call for ever. The
    file is opened without blocking and judged by what was opened."""
    regular = tmp_path / "notes.txt"
    regular.write_text("hello\n")
    fifo = tmp_path / "swapped"
    os.mkfifo(fifo)
    looked = os.stat(regular)
    real_stat = os.stat
    # The look sees a regular file (as before the swap); the open then meets the FIFO.
    monkeypatch.setattr(os, "stat", lambda target, *args, **kwargs: looked if os.fspath(target) == os.fspath(fifo)
                        else real_stat(target, *args, **kwargs))
    result = returns_without_blocking_on(fifo, lambda: tools.read(store, "s", "c", path=str(fifo)), "read")
    assert result.is_error and "is not a regular file" in result.output
    assert tools.read(store, "s", "c", path=str(regular)).output.startswith("     1\thello")


def test_read_a_huge_int_offset_is_a_failed_result_not_a_raw_valueerror(store, tmp_path):
    """Red team A10 f01: ``read`` with an int offset of over 4,300 digits raised a raw ValueError
    ("Exceeds the limit (4300 digits) for integer string conversion") from the public API: the
    error messages put the caller's offset in with ``str``. Such a number is now named by its count
    of digits, and the read is a one-line failure (or an empty last page) as for any other offset."""
    huge = 10**5000
    uri = store.write("s", "c", "abcdefghij" * 10).uri
    lines = tmp_path / "two.txt"
    lines.write_text("a\nb\n")
    for arguments in ({"resource": uri, "offset": huge}, {"resource": uri + "?limit=5", "offset": huge},
                      {"resource": uri + "?limit=5", "limit": huge}, {"path": str(lines), "offset": huge}):
        result = tools.call(store, "s", "c", "read", arguments)
        assert "(a 5001-digit number)" in result.output, (arguments, result.output)
        assert "\n" not in result.output and len(result.output) < 300
        assert result.is_error or arguments == {"resource": uri, "offset": huge}  # (that one: past the end)
    # The same through the Python API (no schema in front), with the offset in a message it passes.
    direct = tools.read(store, "s", "c", path=str(lines), offset=huge)
    assert direct.is_error and direct.output == f"offset (a 5001-digit number) is past the end of {lines}, which has 2 lines"
    # A number that fits in a message is still shown whole.
    assert tools.read(store, "s", "c", path=str(lines), offset=7).output == f"offset 7 is past the end of {lines}, which has 2 lines"


def test_read_takes_one_offset_rule_whether_or_not_the_uri_has_a_query(store):
    """Red team A10 f02: ``read(resource=URI, offset=10**18)`` was an empty "at or past the end"
    page while ``read(resource=URI + "?limit=5", offset=10**18)`` was refused: the 18-digit rule
    (resources/read's and ``overspill read --offset``'s) applied only when the URI had a query."""
    uri = store.write("s", "c", "abcdefghij" * 10).uri
    for offset in (10**18, 10**30):
        plain = tools.call(store, "s", "c", "read", {"resource": uri, "offset": offset, "limit": 5})
        queried = tools.call(store, "s", "c", "read", {"resource": uri + "?limit=5", "offset": offset})
        assert plain.is_error and queried.is_error, (plain.output, queried.output)
        assert plain.output == queried.output and plain.output.startswith("offset must be one integer from 0 to 9")
    # The largest offset either form takes is past the end: the same empty last page both ways.
    largest = 10**18 - 1
    plain = tools.call(store, "s", "c", "read", {"resource": uri, "offset": largest, "limit": 5})
    queried = tools.call(store, "s", "c", "read", {"resource": uri + "?limit=5", "offset": largest})
    assert not plain.is_error and (plain.output, plain.metadata) == (queried.output, queried.metadata)
    assert plain.output.startswith(f"[offset {largest} is at or past the end of {uri}")


@pytest.mark.parametrize("named", ["pipe", "/dev/zero"])
def test_grep_of_a_named_fifo_or_device_answers_at_once_with_either_engine(store, tmp_path, engine, named,
                                                                        monkeypatch):
    """Regression (red team I10 f04): a FIFO or a device named by ``path`` was handed to rg,
    which blocked opening the FIFO (or read /dev/zero) until its 300 s timeout, while the
    Python search answered at once. Both now refuse it before searching, in the same words."""
    monkeypatch.setattr(grep_module, "_RIPGREP_TIMEOUT", 5)  # (so that the defect fails the test soon)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result = returns_without_blocking_on(
        fifo, lambda: tools.grep(store, "s", "c", "needle", path=named, cwd=tmp_path), "grep")
    assert result.is_error
    assert result.output == f"cannot search {named}: not a regular file or folder"


@pytest.mark.skipif(not os.path.isfile("/proc/version"), reason="no /proc files here")
def test_grep_reads_a_file_that_reports_size_zero_to_its_end_with_either_engine(store, engine, monkeypatch):
    """Red team B12 (zero-size files): the Python search (no rg, or a pattern sent to Python such
    as a look-behind) read a file only up to its size when opened, so a file whose stat says 0 but
    which has content (/proc/version, /proc/cpuinfo; a file growing while it is searched) gave
    "no matches" where rg listed its lines. A file is now read to its end (an empty read), in the
    same bounded blocks and pieces."""
    with open("/proc/version") as handle:
        version = handle.read().rstrip("\n")
    with open("/proc/cpuinfo") as handle:
        cpuinfo = handle.read().split("\n")
    processors = [f"/proc/cpuinfo:{number}:{line}" for number, line in enumerate(cpuinfo, 1)
                  if line.startswith("processor")]
    assert processors  # (the kernel lists one per CPU)
    for block in (grep_module._SEARCH_BLOCK, 64):  # 64: many blocks, and /proc/version's line longer than one
        monkeypatch.setattr(grep_module, "_SEARCH_BLOCK", block)
        for pattern in ("Linux version", "(?<=Linux) version"):  # with rg on PATH the look-behind is Python's
            found = tools.grep(store, "s", "c", pattern, path="/proc/version")
            assert (found.output, found.metadata["matches"]) == (f"/proc/version:1:{version}", 1), (block, pattern)
        for pattern in ("^processor", "(?<![a-z])processor"):
            found = tools.grep(store, "s", "c", pattern, path="/proc/cpuinfo", max_matches=1000)
            assert (found.output.split("\n"), found.metadata["matches"]) == (processors, len(processors)), pattern


@pytest.mark.skipif(shutil.which("rg") is None, reason="rg is not on PATH")
def test_grep_with_rg_reads_its_output_in_bounded_memory(store, tmp_path, monkeypatch):
    """Red team B12 (rg output memory): rg's whole output was captured (subprocess.run) and each
    matched line decoded whole before it was cut to 2,000 characters, so memory grew with the
    matching lines' total size whatever max_matches was (a 200 MB log, every line matching: +459
    MiB). rg's output is now read a chunk at a time, a line kept only as far as it can be shown
    (cut at a character's start) and only while it may be listed; the results are the same."""
    import tracemalloc

    tmp_path = tmp_path / "logs"  # (apart from the store's folder)
    tmp_path.mkdir()
    (tmp_path / "a.log").write_bytes(b"log " + "é".encode() * (6 << 20) + b"\n")  # one 12 MiB line, listed first
    (tmp_path / "big.log").write_bytes((b"log line " + b"x" * 3000 + b"\n") * 8000)  # 24 MB, every line matching
    tracemalloc.start()
    try:
        with_rg = tools.grep(store, "s", "c", "log", cwd=tmp_path, max_matches=5)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert with_rg.metadata["matches"] == 8001
    assert peak < 8 << 20, peak  # was over 36 MB: the whole output, then the lines decoded
    monkeypatch.setattr(grep_module, "_ripgrep", lambda: None)
    assert with_rg.output == tools.grep(store, "s", "c", "log", cwd=tmp_path, max_matches=5).output


@pytest.mark.skipif(shutil.which("rg") is None, reason="rg is not on PATH")
@pytest.mark.parametrize("chunk", [1 << 16, 4093, 13])
def test_grep_with_rg_cuts_long_lines_as_the_python_search_shows_them(store, tmp_path, monkeypatch, chunk):
    """Red team B12 (rg output memory), the cut's edges: a line rg prints is kept only up to what
    can be shown, so what is dropped must not change what is shown: a character cut in two,
    invalid bytes about the cut, a run of \\r ending the line (stripped as a CRLF's \\r is) or not;
    and rg's output read in chunks of any size (a name with a newline, a binary file's notice
    after its matches, across a chunk's edge)."""
    monkeypatch.setattr(grep_module, "_RIPGREP_CHUNK", chunk)
    lines = [b"hit " + "é".encode() * 5000, b"hit " + "€".encode() * 3000 + b"\r", b"hit x" + b"\r" * 20000,
             b"hit x" + b"\r" * 20000 + b"y", b"hit " + b"\xf0\x90\x80" * 4000, b"hit " + b"\xe2\x82" * 5000,
             b"hit " + b"a" * 8000 + b"\r" * 100 + b"\xc3", b"hit " + "𐀀".encode() * 2100, b"hit \x80" * 3000,
             b"hit short\r"]
    tmp_path = tmp_path / "lines"  # (apart from the store's folder, where a long listing is stored)
    tmp_path.mkdir()
    for shift in range(4):  # each line's cut falls at every place of a 4-byte character
        (tmp_path / f"lines{shift}.txt").write_bytes(b"\n".join(b"x" * shift + line for line in lines) + b"\n")
    (tmp_path / "new\nline: hit.txt").write_bytes(b"hit one\r\nhit two\n")
    (tmp_path / "new\nline: hit.txt: x").write_bytes(b"hit: three\n")
    (tmp_path / "late\nnul.bin").write_bytes(b"hit y\n" + b"a" * (2 << 20) + b"\n\0\nhit\n")  # rg: a notice after

    def listing(result):  # the whole listing: over the limits it is stored, its preview names its own URI
        if result.resource is None:
            return result.output, result.metadata["matches"]
        return b"".join(map(bytes, store.iter_bytes("s", result.resource.uri))), result.metadata["matches"]

    real = grep_module._ripgrep
    for pattern in ("hit", "^x*hit", "y$"):
        monkeypatch.setattr(grep_module, "_ripgrep", real)
        with_rg = listing(tools.grep(store, "s", "c", pattern, cwd=tmp_path, max_matches=1000))
        monkeypatch.setattr(grep_module, "_ripgrep", lambda: None)
        in_python = listing(tools.grep(store, "s", "c", pattern, cwd=tmp_path, max_matches=1000))
        assert (pattern, with_rg) == (pattern, in_python)


def test_grep_refuses_a_file_named_as_a_folder_with_either_engine(store, tmp_path, engine):
    """Red team B12 (trailing slash): path 'x.py/' or 'x.py/.' naming a regular file lost its
    slash to pathlib, so the tool's checks passed on x.py: rg, given 'x.py/', failed ('rg failed
    with exit status 2: no message'), while the Python search searched x.py. The path is now
    looked at as given: the filesystem's answer, ENOTDIR, is one line from both."""
    (tmp_path / "x.py").write_text("needle here\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("needle\n")
    for path in ("x.py/", "x.py/.", "x.py/sub", "src/a.py/"):
        result = tools.grep(store, "s", "c", "needle", path=path, cwd=tmp_path)
        assert (result.is_error, result.output) == (True, f"cannot search {path}: Not a directory"), path
    # A folder named with a trailing slash is searched as ever.
    assert tools.grep(store, "s", "c", "needle", path="src/", cwd=tmp_path).output == "src/a.py:1:needle"
    assert tools.grep(store, "s", "c", "needle", path="x.py", cwd=tmp_path).output == "x.py:1:needle here"


def test_read_refuses_a_file_named_as_a_folder(store, tmp_path):
    """Noticed by fix A12 (beside grep's trailing slash): read(path='x.py/') lost its slash to
    pathlib and read x.py. The path is looked at as given: the filesystem's answer, ENOTDIR."""
    (tmp_path / "x.py").write_text("needle here\n")
    for path in ("x.py/", "x.py/.", "x.py/sub"):
        result = tools.read(store, "s", "c", path=path, cwd=tmp_path)
        assert (result.is_error, result.output) == (True, f"cannot read {path}: Not a directory"), path
    assert tools.read(store, "s", "c", path="x.py", cwd=tmp_path).output.startswith("     1\tneedle here")


class _CountingFile(__import__("io").FileIO):
    """A file that counts the bytes read from it."""

    taken = 0

    def readinto(self, buffer):  # type: ignore[override]
        got = super().readinto(buffer)
        self.taken += got or 0
        return got


def test_read_file_never_reads_a_long_line_whole_to_show_a_page(store, tmp_path):
    """Regression (red team I10 f02): read(path=...) skipped every cut line to its newline, the line
    after the page too (only to learn that more lines follow): a page of two lines before a 4 GiB line
    took seconds. A following line now costs one byte of it, and a shown line's rest is skipped only
    up to a bound: past it the page ends at that line and says so."""
    import io

    read_module = importlib.import_module("overspill.tools.read")
    sparse = tmp_path / "sparse.log"
    with open(sparse, "wb") as handle:
        handle.write(b"".join(b"line %d\n" % number for number in range(1, 2001)) + b"x" * 100)  # > 8 KiB: text
        handle.truncate(1 << 30)  # then a hole: a line of a GiB, read as NULs
    raw = _CountingFile(sparse)
    with io.BufferedReader(raw) as handle:
        page = read_module._numbered_lines(handle, "sparse.log", 1999, 2)
    assert page.output == ("  1999\tline 1999\n  2000\tline 2000\n\n"
                           "[more lines follow: read again with offset=2001 to continue]")
    assert raw.taken < 1 << 20
    assert tools.read(store, "s", "c", path=str(sparse), offset=1999, limit=2).output == page.output

    long = tmp_path / "long.txt"
    long.write_bytes(b"y" * (read_module._SKIP_BOUND + (4 << 20)) + b"\nafter\n")
    raw = _CountingFile(long)
    with io.BufferedReader(raw) as handle:
        page = read_module._numbered_lines(handle, "long.txt", 1, 10)
    assert raw.taken < read_module._SKIP_BOUND + (2 << 20)
    assert page.truncated and page.metadata == {"first_line": 1, "last_line": 1}
    assert page.output == ("     1\t" + "y" * 2000 + "… [line cut at 2000 characters]\n\n[line 1 goes on past 16 MiB, "
                           "not read further: lines after it, if any, from offset=2]")
    assert tools.read(store, "s", "c", path=str(long), offset=2).output == "     2\tafter"
    # A line within the bound is skipped and the page goes on.
    long.write_bytes(b"y" * (4 << 20) + b"\nafter\n")
    assert tools.read(store, "s", "c", path=str(long)).output.endswith("characters]\n     2\tafter")


def test_read_file_says_binary_for_a_nul_in_a_shown_line_past_the_sniff(store, tmp_path):
    """Regression (red team I10 f02): only the first 8 KiB were looked at for a NUL, so a later
    NUL was shown as text; as rg and grep do, a NUL in what a page shows makes the file binary."""
    text = tmp_path / "late.log"
    text.write_bytes(b"ok\n" * 5000 + b"bad\0line\n" + b"ok\n")
    result = tools.read(store, "s", "c", path=str(text), offset=4990)
    assert result.is_error
    assert result.output == f"{text} looks binary (line 5001 contains NUL bytes); it cannot be read as text"
    assert tools.read(store, "s", "c", path=str(text), limit=3).output == "     1\tok\n     2\tok\n     3\tok\n\n" \
        "[more lines follow: read again with offset=4 to continue]"


# ------------------------------------------------------------------ red team B11 (skill)
@pytest.mark.parametrize("name", ["n" * 1016, "\u00e9" * 600, "\u6f22" * 2000])
def test_skill_whose_name_a_record_cannot_hold_still_loads(store, tmp_path, name):
    """Regression (red team B11, skill_long_name_raises): a front-matter name of 1,016 characters or
    more raised a raw ValueError ("name must be at most 1024 UTF-8 bytes") out of ``skill`` and
    ``call`` once the SKILL.md was large enough to be stored: the record's name was the skill's
    name plus "/SKILL.md".  The record's name is metadata: it is shortened to what a record holds."""
    from overspill._arguments import MAX_METADATA_BYTES

    (tmp_path / "long").mkdir()
    (tmp_path / "long" / "SKILL.md").write_text(f"---\nname: {name}\ndescription: long\n---\n" + "step\n" * 5000,
                                                encoding="utf-8")
    for result in (tools.skill(store, "s", "c1", name, roots=[tmp_path]),
                   tools.call(store, "s", "c2", "skill", {"name": name}, roots=[tmp_path])):
        assert not result.is_error and result.truncated and result.resource is not None, result.output[:200]
        assert result.metadata["skill"] == name and result.output.startswith(f"[skill {name}, from ")
        shown = result.resource.name
        assert len(shown.encode("utf-8")) <= MAX_METADATA_BYTES and shown.endswith("/SKILL.md"), shown
        assert shown.startswith(name[:100])
        assert [r.name for r in store.resources("s") if r.uri == result.resource.uri] == [shown]


def test_webfetch_of_a_content_type_a_record_cannot_hold_still_stores_the_page(store, declared_server):
    """Red team B11 (skill_long_name_raises, the same refusal elsewhere): a server's Content-Type of
    over 1024 bytes became the record's mime and raised a raw ValueError out of ``webfetch`` when
    the page was large enough to be stored.  The record keeps a shortened type."""
    from overspill._arguments import MAX_METADATA_BYTES

    mime = "text/x-" + "a" * 1100
    _DeclaredHandler.ROUTES["/long-type"] = ([("Content-Type", mime)], b"line of text\n" * 10000, None)
    result = tools.webfetch(store, "s", "c", declared_server + "/long-type", timeout=10)
    assert not result.is_error and result.resource is not None, result.output[:200]
    assert result.metadata["content_type"] == mime
    assert len(result.resource.mime) <= MAX_METADATA_BYTES and result.resource.mime.startswith("text/x-aaa")
    page = tools.read(store, "s", "r", resource=result.resource.uri, offset=result.metadata["next_offset"])
    assert not page.is_error and page.output.startswith("line of text"), page.output[:120]


@pytest.mark.parametrize("value", [
    "plain", "x" * 1024, "x" * 1025, "\U0001F600" * 256, "\U0001F600" * 257, "\udcff" * 400 + "end",
    "a\ud83d\ude00b", "\ud83d\ude00" * 300, "é" * 511 + "x", "é" * 512 + "\U0001F600" * 300,
])
def test_metadata_string_gives_what_a_record_holds_and_reads_back(store, value):
    """The one rule (``_arguments.metadata_string``) behind the two regressions above: whatever a
    tool derives a record's name or mime from, the result is accepted by ``check_metadata``,
    unchanged when it already was, and a record stores and lists it as it is."""
    from overspill._arguments import MAX_METADATA_BYTES, check_metadata, metadata_string

    held = metadata_string(value)
    check_metadata(held, "name")
    assert len(held.encode("utf-8", "surrogatepass")) <= MAX_METADATA_BYTES
    try:
        check_metadata(value, "name")
    except ValueError:
        assert held != value and (len(held) < len(value) or "\ud83d" in value)
    else:
        assert held == value
    resource = store.write("s", "c", b"x", mime=held, name=held)
    assert [(r.name, r.mime) for r in store.resources("s") if r.uri == resource.uri] == [(held, held)]


def test_skill_streams_a_large_skill_file_in_bounded_memory(store, tmp_path):
    """Regression (red team B11, skill_memory): a SKILL.md was read whole, decoded, joined to its
    header and encoded again: a 200 MiB file raised peak RSS by 604 MiB.  It is streamed into the
    store like any large output: a file 20 MiB larger raises the allocations' peak by far less."""
    import tracemalloc

    line = b"step: do the thing carefully and check the result\n"
    block = line * (1024 * 1024 // len(line))
    peaks = []
    for mebibytes in (20, 40):
        root = tmp_path / f"root{mebibytes}"
        (root / "big").mkdir(parents=True)
        with open(root / "big" / "SKILL.md", "wb") as file:
            file.write(b"---\nname: big\ndescription: a big skill\n---\n")
            for _ in range(mebibytes):
                file.write(block)
        tracemalloc.start()
        try:
            result = tools.skill(store, "s", "c", "big", roots=[root])
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        assert not result.is_error and result.truncated and result.resource is not None, result.output[:200]
        assert result.resource.size > mebibytes * len(block)
    # (Both over 16 MiB: the pure-Python twin's preview of a stored output takes up to ~17 MiB, whatever its size.)
    assert peaks[1] - peaks[0] < 5 << 20, f"peak allocations {peaks} for SKILL.md files of 20 and 40 MiB"


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_skill_stores_its_header_and_the_file_as_text_whatever_its_chunks(store, tmp_path, bom):
    """What the streamed skill stores is what it always stored: the header, then the file decoded
    from UTF-8 (a byte-order mark dropped, each invalid sequence as U+FFFD) and encoded again, with
    characters and invalid sequences cut at every place a read of the file may end."""
    piece = "caf\u00e9 \u6f22\u5b57 \U0001F600 ".encode() + b"bad \xff\xfe \xe2\x82 end\n"
    data = bom + b"---\nname: pdf\n---\n" + b"".join(piece[:n] + piece[n:] + b"x" * n for n in range(len(piece))) * 3000
    data += piece[:-6]  # ending inside an invalid sequence
    (tmp_path / "pdf").mkdir()
    (tmp_path / "pdf" / "SKILL.md").write_bytes(data)
    result = tools.skill(store, "s", "c", "pdf", roots=[tmp_path])
    assert not result.is_error and result.resource is not None
    header = f"[skill pdf, from {tmp_path / 'pdf'}; files it mentions are relative to that folder]\n\n"
    expected = (header + data.decode("utf-8-sig", "replace")).encode("utf-8")
    assert (store.directory / f"{result.resource.id}.txt").read_bytes() == expected


@pytest.mark.parametrize("front, folder, shown", [
    ('name: "two\\nlines"', "multi", "two lines"),
    ("name: |\n  two\n  lines", "block", "two lines"),
    ('name: "tab\\there  and\\u2028more "', "spaced", "tab here and more"),
    ("description: no name", "caf\udce9", "caf\ufffd"),
    ("description: no name", "deploy\x1bprod", "deploy\\x1bprod"),
    ("description: no name", "deploy\u200dprod", "deploy\\u200dprod"),
    ("description: no name", "deploy\u202eprod", "deploy\\u202eprod"),
    ('name: "ring\\x07 \\u202ethe bell"', "bell", "ring\\x07 \\u202ethe bell"),
])
def test_a_listed_skill_name_loads_the_skill_as_shown(store, tmp_path, front, folder, shown):
    """Regression (red team B11, skill_listing_name_unreachable): the unknown-name listing goes
    through one line, so a name with a line break (``name: "two\\nlines"``) was listed as
    ``two lines``, and ``skill(name="two lines")`` answered unknown; a folder whose name is not
    UTF-8 was listed with U+FFFD and could not be called either.  A skill's name is the one line
    the model is shown: the listed name loads it, and so does the name as written.  Regression
    (review R23, 2): a name holding a control character, a zero-width joiner or a bidi override
    was listed escaped (``deploy\\x1bprod``, as every tool's error line is) but loaded only raw, and
    the loaded skill's header showed it raw: the escaped form is the name, in the header too."""
    skill_file = os.path.join(os.fsencode(tmp_path), os.fsencode(folder), b"SKILL.md")
    os.makedirs(os.path.dirname(skill_file))
    with open(skill_file, "wb") as file:
        file.write(f"---\n{front}\n---\nthe body\n".encode())
    listing = tools.skill(store, "s", "c", "nope", roots=[tmp_path]).output
    assert listing.endswith(f"available skills: {shown}"), listing
    for name in (listing.split("available skills: ", 1)[1], shown):
        for result in (tools.skill(store, "s", "c", name, roots=[tmp_path]),
                       tools.call(store, "s", "c", "skill", {"name": name}, roots=[tmp_path])):
            assert not result.is_error and result.output.endswith("the body\n"), result.output
            assert result.metadata["skill"] == shown
            header = result.output.split("\n", 1)[0]
            assert header.startswith(f"[skill {shown}, from ") and header.isprintable(), header
    from overspill.tools._front_matter import front_matter

    written = front_matter(f"---\n{front}\n---\n").get("name")
    if written is not None:  # the name as the front matter writes it loads the skill too
        assert not tools.skill(store, "s", "c", written, roots=[tmp_path]).is_error


@pytest.mark.parametrize("front", ["name: ~", "name: null", "name: NULL # none", "name:", "name: [a, b]",
                                   "name: {a: b}", "name:\n  - a\n  - b", "name:\n  key: value", "name: !!null",
                                   "name: *nowhere"])
def test_skill_front_matter_name_that_is_no_string_falls_back_to_the_folder(store, tmp_path, front):
    """Red team B11: the README says skill reads front matter as YAML reads its top-level scalars,
    but ``name: ~`` (YAML's null) named the skill "~", and a flow or block collection named it by its
    text ("[a, b]", "- a - b").  None of them is a string: the skill is named by its folder, as when
    the front matter gives no name."""
    (tmp_path / "pdf").mkdir()
    (tmp_path / "pdf" / "SKILL.md").write_text(f"---\n{front}\ndescription: PDFs\n---\nthe body\n")
    result = tools.skill(store, "s", "c", "pdf", roots=[tmp_path])
    assert not result.is_error and result.output.endswith("the body\n"), result.output
    assert result.metadata["description"] == "PDFs"


@pytest.mark.parametrize(("front", "expected"), [
    ("name: &a pdf", {"name": "pdf"}),
    ("name: !!str pdf # tagged", {"name": "pdf"}),
    ("name: &a !!str 'p df'", {"name": "p df"}),
    ("name: !!str &a \"pdf\"", {"name": "pdf"}),
    ("name: &a |\n  two\n  lines", {"name": "two\nlines"}),
    ("name: &a\n  pdf", {"name": "pdf"}),
    ("title: &t PDF tools\nname: *t", {"title": "PDF tools", "name": "PDF tools"}),
    ("name: '~'\nother: \"null\"", {"name": "~", "other": "null"}),
    ("name: ~\nlist: [1, 2]\nmap:\n  a: b\nseq:\n- x\nempty:", {}),
    ("name: x\nname: ~", {}),
])
def test_skill_front_matter_reads_anchors_tags_aliases_and_nulls_as_yaml_does(front, expected):
    """Red team B11: ``name: &a x`` kept its anchor ("&a x"); YAML's node properties (an anchor, a
    tag) are not the value, an alias stands for its anchor's value, and a null or a collection is
    no scalar at all (left out).  Expected values are PyYAML's, collections left out."""
    from overspill.tools._front_matter import front_matter

    assert front_matter(f"---\n{front}\n---\nbody\n") == expected


@pytest.mark.parametrize(("front", "expected"), [
    ('description:\n  "Use when: the user asks for PDFs"', {"description": "Use when: the user asks for PDFs"}),
    ("description:\n  'Use when: the user asks for PDFs'", {"description": "Use when: the user asks for PDFs"}),
    ('description:\n  "Extract tables. Use when:\n  the user asks"',
     {"description": "Extract tables. Use when: the user asks"}),
    ('description:\n  "Fill PDF forms" # quoted\nname: pdf', {"description": "Fill PDF forms", "name": "pdf"}),
    ("description:\n  'it''s #1: PDFs'", {"description": "it's #1: PDFs"}),
    ("description:\n  >\n    Use when: asked\n    for PDFs", {"description": "Use when: asked for PDFs"}),
    ("description:\n  |\n    a: b\n    - c", {"description": "a: b\n- c"}),
    ("description:\n  # a comment\n\n  Fill PDF forms", {"description": "Fill PDF forms"}),
    ("description: # a comment\n  Fill PDF forms", {"description": "Fill PDF forms"}),
    ("description:\n  &d Fill PDF forms\nsummary: *d", {"description": "Fill PDF forms", "summary": "Fill PDF forms"}),
    ("description: &d\n  !!str null\nsummary: *d", {"description": "null", "summary": "null"}),
    ("description: !!str null\nname: !!str\nsummary: !<tag:yaml.org,2002:str> ~",
     {"description": "null", "name": "", "summary": "~"}),
    ("description:\n  !!str NULL", {"description": "NULL"}),
    ('description:\n  "Use when": asked\nname: pdf', {"name": "pdf"}),
    ("description:\n  'Use when' : asked\nname: pdf", {"name": "pdf"}),
    ("description:\n  &d\n  when: asked\nname: pdf", {"name": "pdf"}),
    ("description:\n  # a comment\n  when: asked\nname: pdf", {"name": "pdf"}),
])
def test_skill_front_matter_reads_a_value_on_the_line_after_its_key_as_on_the_key_line(front, expected):
    """Review R4: a value on the line after its key was not read as one on the key's line is.  A
    quoted one holding ': ' was taken for a block mapping's ``key: value`` (its quote unseen) and
    dropped; one without kept its quotes; a ``>`` header there was text ('> folded text'); a comment
    line before the value gave ''; an anchor there stayed in the value ('&d Fill PDF forms').  A
    ``!!str`` tag makes a null's word (or nothing) the string it is.  Only a plain first line can
    start a block collection; a quoted key followed by ':' is one too.  Expected values are PyYAML's
    (collections left out)."""
    from overspill.tools._front_matter import front_matter

    assert front_matter(f"---\n{front}\n---\nbody\n") == expected


# ------------------------------------------------------------------ red team R12: pre blocks, charsets, messages
_CODE_WITH_BLANKS = "def a():\n    return 1\n\n\nclass B:  \n    x = '''\n\n\n\n'''\n"


@pytest.mark.parametrize("format", ["markdown", "text"])
def test_webfetch_a_pre_keeps_its_blank_lines_and_trailing_spaces(store, declared_server, format):
    """Regression (red team R12, 1): a <pre>'s blank lines were collapsed to one and its lines'
    trailing spaces cut, in markdown and text: the whole output's whitespace normalisation ran over
    the code blocks too.  A pre's content is kept as it is, byte for byte."""
    path = "/pre-blank-lines"
    page = f"<html><body><p>Example</p><pre><code>{_CODE_WITH_BLANKS}</code></pre><p>after</p></body></html>"
    _DeclaredHandler.ROUTES[path] = ([("Content-Type", "text/html; charset=utf-8")], page.encode(), None)
    result = tools.webfetch(store, "s", "c", declared_server + path, format=format, timeout=20)
    assert not result.is_error, result.output
    if format == "markdown":
        assert result.output == f"Example\n\n```\n{_CODE_WITH_BLANKS}```\n\nafter\n", result.output
    else:
        assert result.output == f"Example\n\n{_CODE_WITH_BLANKS}\nafter\n", result.output
    # In a block quote each of its lines, blank ones too, gets the quote's prefix, and nothing else changes.
    assert (html_to_markdown("<blockquote><pre>a  \n\n\nb</pre></blockquote>")
            == "> ```\n> a  \n>\n>\n> b\n> ```\n")


@pytest.mark.parametrize(("html", "markdown"), [
    ('<pre><code><a href="/x">foo</a>(<b>bar</b>, *<i>args</i>)</code></pre>', "```\nfoo(bar, *args)\n```\n"),
    ('<pre>x <img src="a.png" alt="pic"> <strong>y</strong> <em>z</em></pre>', "```\nx pic y z\n```\n"),
    ("<pre>Use a fence:\n```python\nprint(1)\n```\nthen more</pre>",
     "````\nUse a fence:\n```python\nprint(1)\n```\nthen more\n````\n"),
    ("<pre>a ````` b</pre>", "``````\na ````` b\n``````\n"),
    ("<blockquote><pre>```\nx</pre></blockquote>", "> ````\n> ```\n> x\n> ````\n"),
    ("<pre>one<br>two</pre>", "```\none\ntwo\n```\n"),
])
def test_html_a_pre_holds_only_its_text_in_a_fence_longer_than_its_backtick_runs(html, markdown):
    """Regression (red team R12, 2): links, emphasis and images inside a <pre> came out as Markdown
    syntax in the code block ('[foo](/x)(**bar**, **args*)'), and a pre holding a line of ``` ended
    the three-backtick fence early.  Inside a pre only the text is written, and the fence is one
    backtick longer than the longest run of backticks in it (CommonMark's rule)."""
    assert html_to_markdown(html) == markdown


_PYGMENTS_TABLE = ('<div class="highlight"><table class="highlighttable"><tr>'
                   '<td class="linenos"><div class="linenodiv"><pre>1\n2\n3</pre></div></td>'
                   '<td class="code"><div class="highlight"><pre><span class="k">def</span> '
                   '<span class="nf">f</span>():\n    <span class="k">if</span> x:\n        '
                   '<span class="k">return</span> 1\n</pre></div></td></tr></table></div>')


def test_html_a_pre_in_a_table_cell_keeps_its_lines(store, declared_server):
    """Regression (red team R12, 3): a <pre> in a table cell (Pygments' linenos="table" layout, used
    by Sphinx, MkDocs, Jekyll, GitLab) was flattened to one line by the cell's whitespace collapse.
    A row whose cells hold a pre is written as blocks, cell by cell, each pre whole; the table's
    other rows stay a table."""
    code = "def f():\n    if x:\n        return 1\n"
    assert html_to_markdown(_PYGMENTS_TABLE) == f"```\n1\n2\n3\n```\n\n```\n{code}```\n"
    assert html_to_text(_PYGMENTS_TABLE) == f"1\n2\n3\n\n{code}"
    mixed = ("<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>see <pre>x\n  y</pre> here</td></tr>"
             "<tr><td>b</td><td>2</td></tr></table>")
    assert html_to_markdown(mixed) == ("| k | v |\n| --- | --- |\n\na\n\nsee\n\n```\nx\n  y\n```\n\nhere\n\n"
                                       "| b | 2 |\n| --- | --- |\n")
    # A pre in a table nested in a cell is a block of the outer row too.
    nested = "<table><tr><td><table><tr><td><pre>p\n q</pre></td></tr></table></td></tr></table>"
    assert html_to_markdown(nested) == "```\np\n q\n```\n"
    path = "/pre-in-table"
    _DeclaredHandler.ROUTES[path] = ([("Content-Type", "text/html; charset=utf-8")], _PYGMENTS_TABLE.encode(), None)
    result = tools.webfetch(store, "s", "c", declared_server + path, format="text", timeout=20)
    assert not result.is_error and code in result.output, result.output


@pytest.mark.parametrize(("html", "markdown"), [
    ("<table><tr><td>a<pre>x\n y</td><td>b</td></tr></table><p>after</p>", "a\n\n```\nx\n y\n```\n\nb\n\nafter\n"),
    ("<table><tr><td>a<pre>x\n y</td></tr><tr><td>c</td><td>d</td></tr></table><p>after</p>",
     "a\n\n```\nx\n y\n```\n\n| c | d |\n| --- | --- |\n\nafter\n"),
    ("<table><tr><td><pre>x\n y</table><p>after</p>", "```\nx\n y\n```\n\nafter\n"),
    ("<table><tbody><tr><td><pre>x</tbody></table>after", "```\nx\n```\n\nafter\n"),
    ("<table><tr><th><pre>x</tr></table>after", "```\nx\n```\n\nafter\n"),
    # A cell's or a row's start tag closes the open cell, and the pre with it.
    ("<table><tr><td><pre>x<td>b</table>after", "```\nx\n```\n\nb\n\nafter\n"),
    ("<table><tr><td><pre>x<tr><td>b</td></table>after", "```\nx\n```\n\n| b |\n| --- |\n\nafter\n"),
    # Every pre open in the cell ends with it.
    ("<table><tr><td><pre>x<pre>y</td></tr></table>after", "```\nx\ny\n```\n\nafter\n"),
    # A table inside the pre: its own cells end no pre; the outer cell's end does.
    ("<table><tr><td><pre>x<table><tr><td>in</td></tr></table>y</td></tr></table><p>after</p>",
     "```\nx\n in \ny\n```\n\nafter\n"),
])
def test_html_an_unclosed_pre_in_a_table_cell_ends_with_its_cell(html, markdown):
    """Regression (fix O14, 4): a <pre> left open in a table's cell ran on to the page's end: the
    cell's </td>, </tr> and </table> were words of the pre, and every table and paragraph after it
    was written into its code block.  HTML's parsing closes the elements open in a cell when the
    cell closes (its end tag, the next cell's or row's start tag, the row's, row group's or table's
    end tag), the pre among them."""
    assert html_to_markdown(html) == markdown


def test_webfetch_an_unclosed_pre_in_a_table_cell_ends_with_its_cell(store, declared_server):
    """The same end to end (fix O14, 4), as text: the page after the table is not in the pre."""
    path = "/unclosed-pre-in-cell"
    page = "<table><tr><td>a<pre>x\n  y</td><td>b</td></tr></table><p>after   the   table</p>"
    _DeclaredHandler.ROUTES[path] = ([("Content-Type", "text/html; charset=utf-8")], page.encode(), None)
    result = tools.webfetch(store, "s", "c", declared_server + path, format="text", timeout=20)
    assert not result.is_error and result.output == "a\n\nx\n  y\n\nb\n\nafter the table\n", repr(result.output)


@pytest.mark.parametrize(("head", "body", "expected"), [
    # A <meta> that declares no encoding: only http-equiv="content-type" takes a content's charset.
    ('<meta name="description" content="How to set charset=latin1 in MySQL">', "Café — naïve €".encode(),
     "Café — naïve €"),
    ('<meta property="og:title" content="charset=windows-1252">', "Café".encode(), "Café"),
    # A <meta> inside a comment is no <meta>.
    ('<!-- old: <meta charset="iso-8859-1"> -->', "Café — naïve €".encode(), "Café — naïve €"),
    ('<!-- <meta charset="iso-8859-1"> -- >', "Café".encode(), "Café"),  # ("-- >" ends no comment)
    # What the prescan does take: <meta charset>, after a comment too, and a content-type's charset.
    ('<!-- x --><meta charset="windows-1252">', b"caf\xe9 \x80", "café €"),
    ('<meta http-equiv="Content-Type" content="text/html; charset=windows-1252">', b"caf\xe9 \x80", "café €"),
    ("<meta content='text/html;charset=koi8-r' http-equiv=content-type>", b"\xc1", "\u0430"),
    ('<meta name="x" content="y" charset="windows-1252">', b"caf\xe9", "café"),
])
def test_webfetch_a_meta_that_declares_no_charset_is_passed_over(store, declared_server, head, body, expected):
    """Regression (red team R12, 4): a UTF-8 page was decoded as windows-1252 when a <meta> merely
    mentioned "charset=" in another attribute (a description's content) or when a <meta charset>
    was commented out: the regex took any "charset=" inside any <meta ...>.  HTML's prescan skips
    comments and takes <meta charset>, or a content's charset only with http-equiv=content-type."""
    path = f"/meta-prescan/{zlib.crc32(head.encode() + body)}"
    page = b"<html><head>" + head.encode() + b"<title>t</title></head><body><p>" + body + b"</p></body></html>"
    _DeclaredHandler.ROUTES[path] = ([("Content-Type", "text/html")], page, None)
    result = tools.webfetch(store, "s", "c", declared_server + path, format="text", timeout=10)
    assert not result.is_error and result.output.strip() == expected, result.output
    # "<!-->" is a whole comment to the prescan (its "-->" reuses the "--"): the <meta> after it counts.
    from overspill.tools._encodings import sniff_charset

    assert sniff_charset(b'<!--><meta charset="windows-1252">') == "windows-1252"


QUOTED_PRE_PROBE = """
import json, resource, sys, threading, http.server
from overspill import ToolOutputStore, tools
page = b"<blockquote>" * 20 + b"<pre>" + b"\\n" * (2 * 1024 * 1024) + b"</pre>"

class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
store = ToolOutputStore(sys.argv[1], durable=False)
url = f"http://127.0.0.1:{server.server_address[1]}/"
tools.webfetch(store, "s", "w", url + "warm", format="html", timeout=60)  # the imports, off the count
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
result = tools.webfetch(store, "s", "c", url, timeout=120)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
stored = (store.directory / f"{result.resource.id}.txt").read_bytes()
print(json.dumps({"grown": after - before, "error": result.is_error, "cut": result.metadata.get("cut"),
                  "size": len(stored), "end": stored[-120:].decode()}))
"""


def test_webfetch_a_page_that_converts_to_many_times_the_limit_stays_in_bounded_memory(subprocess_env, tmp_path):
    """Regression (red team R12, 5): 20 block quotes around a <pre> of newlines convert to 41 bytes
    of Markdown per byte of page; the whole conversion was built, sent back and copied before being
    cut to 5 MiB (the red team's 5 MiB page grew the caller by 632 MiB; this 2 MiB one by ~250).
    The converter stops once its output is past the limit, and the page is cut as before."""
    probe = subprocess.run([sys.executable, "-c", QUOTED_PRE_PROBE, str(tmp_path)], capture_output=True, text=True,
                           env=subprocess_env, timeout=300)
    assert probe.returncode == 0, probe.stderr
    figures = json.loads(probe.stdout)
    assert not figures["error"] and figures["cut"], figures
    limit = tools.MAX_RESPONSE_BYTES
    assert limit - 200 < figures["size"] <= limit
    assert figures["end"].endswith('cut at the 5242880-byte limit; format "html" gives the whole page]'), figures
    # ru_maxrss is in KiB on Linux.
    assert figures["grown"] < 64 * 1024, figures


class _RedirectingHandler(http.server.BaseHTTPRequestHandler):
    """``/hop/N`` redirects to ``/hop/N+1`` up to ``/hop/11``, which answers; ``/loop`` to itself."""

    def log_message(self, *args):  # keep test output clean
        pass

    def do_GET(self):  # noqa: N802 - the http.server API
        step = self.path.rsplit("/", 1)[1]
        if self.path.startswith("/hop/") and int(step) >= 11:
            body = b"done"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
        else:
            body = b""
            self.send_response(302)
            self.send_header("Location", f"/hop/{int(step) + 1}" if self.path.startswith("/hop/") else "/loop")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_webfetch_names_the_redirect_limit_and_a_loop_truthfully(store):
    """Regression (red team R12, 6): 11 redirects to 11 distinct URLs were reported as urllib's
    "a redirect error that would lead to an infinite loop" and as an HTTP 302 error.  Past 10 the
    message names the limit; a URL that redirects to itself is a loop."""
    for base in _serving(_RedirectingHandler):
        chain = tools.webfetch(store, "s", "c", base + "/hop/0", timeout=20)
        assert chain.is_error and chain.output == ("refused: more than 10 redirects, the most webfetch follows "
                                                   f"(the next was to {base}/hop/11)"), chain.output
        assert "infinite" not in chain.output
        ten = tools.webfetch(store, "s", "c", base + "/hop/1", timeout=20)
        assert not ten.is_error and ten.output == "done", ten.output
        loop = tools.webfetch(store, "s", "c", base + "/loop", timeout=20)
        assert loop.is_error and loop.output == f"refused: the redirects go round a loop (back to {base}/loop)", \
            loop.output


class _Unsayable(Exception):
    def __str__(self):
        raise RuntimeError("no text")


def test_websearch_a_provider_error_that_cannot_say_itself_is_a_tool_error(store):
    """Regression (red team R12, 7): a provider's exception whose ``__str__`` raises escaped
    websearch as that RuntimeError (the failure message formatted it with f'{error}')."""
    def provider(query):
        raise _Unsayable

    result = tools.websearch(store, "s", "c", "q", provider=provider)
    assert result.is_error and result.output == "the search failed: _Unsayable (its message could not be read)", \
        result.output


_HOSTILE = "x\x1b[2J\x1b]0;title\x07\x9b31m\x7f\u202e"
_HOSTILE_SHOWN = "x\\x1b[2J\\x1b]0;title\\x07\\x9b31m\\x7f\\u202e"


def _raising_provider(query):
    raise RuntimeError(f"https://search.example/{_HOSTILE} answered 503")


@pytest.mark.parametrize("tool", ["read", "grep", "skill", "websearch", "bash"])
def test_a_tools_error_line_shows_outside_control_characters_escaped(store, tmp_path, tool):
    """Regression (fix F15, 3): webfetch's error lines wrote a server's control characters as escapes,
    but the other tools' did not: a file name in read's or grep's "no such file", a skill folder's
    name in the unknown skill's listing, a search provider's message, a working folder in bash's
    "could not run the command" reached the model (and any terminal showing the transcript) raw.
    Every tool's one-line error is written by the printable rule, in the one place it is made."""
    missing = str(tmp_path / _HOSTILE)
    if tool == "read":
        result = tools.read(store, "s", "c", path=missing)
    elif tool == "grep":
        result = tools.grep(store, "s", "c", "x", path=missing)
    elif tool == "skill":
        (tmp_path / _HOSTILE).mkdir()
        (tmp_path / _HOSTILE / "SKILL.md").write_text("# A skill named by its folder\n")
        result = tools.skill(store, "s", "c", "nope", roots=[tmp_path])
    elif tool == "websearch":
        result = tools.websearch(store, "s", "c", "q", provider=_raising_provider)
    else:
        result = tools.bash(store, "s", "c", "true", cwd=missing)
    assert result.is_error and result.output.isprintable(), repr(result.output)
    assert _HOSTILE_SHOWN in result.output, result.output


@pytest.mark.parametrize("page", [
    "<p>x</p>\r\n<pre>def f():  \r\n    return 1\r\n\r\n\r\nprint(f())\r\n</pre>\r\n",
    "<p>x</p>\r<pre>\rdef f():  \r    return 1\r\r\rprint(f())\r</pre>\r",  # CRs alone
])
def test_html_pre_reads_cr_lf_and_lone_cr_as_line_feeds(page):
    """Regression (red team R12): a <pre> kept the CRs of a CRLF page, so every code line ended in
    '\\r' (and '> \\r' in a quote), and a pre of lone CRs stayed one line.  HTML's input preprocessing
    reads CR LF and CR as LF."""
    assert html_to_markdown(page) == "x\n\n```\ndef f():  \n    return 1\n\n\nprint(f())\n```\n"
    assert html_to_text(page) == "x\n\ndef f():  \n    return 1\n\n\nprint(f())\n"
    quoted = html_to_markdown("<blockquote><pre>a\r\n\r\nb\rc</pre></blockquote>")
    assert "\r" not in quoted and quoted == "> ```\n> a\n>\n> b\n> c\n> ```\n", repr(quoted)


@pytest.mark.parametrize("head, expected", [
    # A content whose charset the standard does not know declares nothing: a charset after it decides.
    (b'<meta content="text/html; charset=bogus" charset="koi8-r" http-equiv="content-type">', "KOI8-R"),
    (b'<meta http-equiv="content-type" content="text/html; charset=bogus" charset="koi8-r">', "KOI8-R"),
    # A content counts only while no charset has (the prescan's "if charset is still null")...
    (b'<meta charset="koi8-r" http-equiv="content-type" content="text/html; charset=utf-8">', "KOI8-R"),
    # ...but a charset overrides a content before it (its step has no such condition).
    (b'<meta content="text/html; charset=koi8-r" charset="utf-8" http-equiv="content-type">', "UTF-8"),
    (b'<meta http-equiv="content-type" content="text/html; charset=koi8-r" charset="iso-8859-2">', "ISO-8859-2"),
    # A charset the standard does not know is a failure that declares nothing, even after a content's.
    (b'<meta content="text/html; charset=koi8-r" http-equiv="content-type" charset="bogus">', None),
    (b'<meta name="description" content="charset=latin1">', None),
])
def test_meta_prescan_a_content_with_an_unknown_charset_leaves_the_charset_attribute(head, expected):
    """Regression (red team R12): a content attribute naming an unknown charset took the <meta>'s
    declaration, so its charset attribute was ignored and the page's encoding missed."""
    from overspill.tools._encodings import sniff_charset

    assert sniff_charset(head) == expected


class _RevisitingHandler(http.server.BaseHTTPRequestHandler):
    """Redirects round eight URLs, ``/x0`` to ``/x7``, for 30 requests; then answers."""

    hops = 0

    def log_message(self, *args):  # keep test output clean
        pass

    def do_GET(self):  # noqa: N802 - the http.server API
        type(self).hops += 1
        if type(self).hops > 30:
            body = b"done"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
        else:
            body = b""
            self.send_response(302)
            self.send_header("Location", f"/x{type(self).hops % 8}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_webfetch_counts_every_redirect_not_only_distinct_urls(store):
    """Regression (red team R12): README says webfetch follows at most 10 redirects, but urllib counts
    distinct URLs (each up to 4 times): a chain round 8 URLs was followed for 30 hops."""
    _RevisitingHandler.hops = 0
    for base in _serving(_RevisitingHandler):
        result = tools.webfetch(store, "s", "c", base + "/start", timeout=20)
        assert result.is_error and result.output.startswith("refused: more than 10 redirects"), result.output
        assert _RevisitingHandler.hops == 11, _RevisitingHandler.hops


# Outputs of \r redraws over the 1 MiB capture (red team L15): one line whose final state is
# '1000000' (the 512 KiB capture head ends inside a state, '...\r89233\r89'), and the same line
# ended, with a line after it.
_REDRAWN_PAST_THE_CAPTURE = ("seq 1 1000000 | tr '\\n' '\\r'", "seq 1 1000000 | tr '\\n' '\\r'; printf '\\nafter\\n'")


def held_head_and_tail(shown: str) -> tuple[list[str], list[str], int]:
    """The lines of the head and of the tail of a preview from memory (``... N of the output's T
    bytes (as written) omitted here ...`` between them), and N."""
    found = re.search(r"(?m)^\.\.\. (\d+) of the output's \d+ bytes \(as written\) omitted here[^\n]*\.\.\.$", shown)
    assert found, shown[:200]
    head, tail = shown[: found.start()].rstrip("\n"), shown[found.end() :]
    assert tail.startswith("\n\n"), tail[:80]
    return (head.split("\n") if head else []), tail[2:].split("\n"), int(found.group(1))


def test_bash_without_spill_shows_no_cut_redraw_of_a_line_the_capture_head_ends_inside(store):
    """Regression (red team L15): without spilling, ``seq 1 1000000 | tr '\\n' '\\r'`` (one line
    of redraws, 6.9 MB) showed the head '89' (the state being written where the capture's 512 KiB
    head ends, cut) before the marker and the tail '1000000': a piece of a state that never was
    the line's final one, read as a second line.  The stored path shows the line's final state
    only; without spilling the head shows nothing of a redrawn line whose end the capture dropped
    (its final state is not known there), and the tail shows its final state, as stored."""
    for command in _REDRAWN_PAST_THE_CAPTURE:
        stored = tools.bash(store, "s", "stored", command)
        view = stored.output.split("\n\n... output stored")[0].split("\n")
        assert view[0] in ("1000000", "1000000\r"), view  # (\r\n: a line ending, which stays)
        held = tools.bash(store, "s", "held", command, spill=False)
        assert held.resource is None and held.truncated
        head, tail, omitted = held_head_and_tail(held.output)
        assert head == view[: len(head)] and tail == view[len(view) - len(tail) :], (head, tail, view)
        assert head == [] and tail == view, held.output[:200]
        raw = subprocess.run(["sh", "-c", command], capture_output=True, check=True).stdout
        assert omitted == raw.rindex(b"1000000")  # every byte before the final state the tail starts with
