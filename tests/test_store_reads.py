"""The local read path: every read verifies what it returns, every time
(README promise 2), records name their 64 KiB checksum chunk, older records
still read, and ``read --all`` streams in flat memory."""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import subprocess
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overspill import ResourceCorruptError, ResourceNotFoundError, ToolOutputStore
from overspill.records import CHECKSUM_CHUNK, LEGACY_CHECKSUM_CHUNK, new_id, parse_uri

SCRIPT = Path(sys.executable).with_name("overspill")


@pytest.fixture
def store(tmp_path):
    with ToolOutputStore(tmp_path, durable=False) as opened:
        yield opened


def payload(size: int) -> bytes:
    line = b"0123456789 abcdefghij \xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80 line\n"
    return (line * (size // len(line) + 1))[:size]


def flip_through_shared_map(path: Path, position: int) -> None:
    """Change one byte in place through a shared writable map (as a buggy or
    hostile process could), without msync: nothing the store stats need change."""
    with open(path, "r+b") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_WRITE) as shared:
        shared[position] ^= 0x01


def test_warm_store_detects_a_byte_changed_through_a_shared_writable_mmap(store):
    """Promise 2: never readable-but-wrong, even for a warm store and no stat change.

    A write to a page that is already dirty in a shared map changes no
    timestamp, so a store that trusted chunks "verified since the file's stat
    last changed" served the changed byte.
    """
    data = payload(400_000)
    resource = store.write("s", "c", data)
    position = 3 * CHECKSUM_CHUNK + 100
    path = store.directory / f"{resource.id}.txt"
    with open(path, "r+b") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_WRITE) as shared:
        shared[position] = shared[position]  # dirties the page: its one timestamp change
        page = store.read("s", resource.uri, offset=position - 10, limit=50)  # warm, verified under that stat
        assert page.content.encode() == data[position - 10 : position + 40]
        before = os.stat(path)
        shared[position] ^= 0x01
        assert os.stat(path) == before  # nothing a stat shows has changed
        with pytest.raises(ResourceCorruptError, match=f"bytes {3 * CHECKSUM_CHUNK} to {4 * CHECKSUM_CHUNK}"):
            store.read("s", resource.uri, offset=position - 10, limit=50)
        with pytest.raises(ResourceCorruptError), store.view("s", resource.uri):
            pass
        with pytest.raises(ResourceCorruptError):
            b"".join(store.iter_bytes("s", resource.uri))
        # The chunks around it were not changed and still read.
        assert store.read("s", resource.uri, offset=0, limit=20).content.encode() == data[:20]


def test_every_view_verifies_again(store):
    data = payload(200_000)
    resource = store.write("s", "c", data)
    path = store.directory / f"{resource.id}.txt"
    with open(path, "r+b") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_WRITE) as shared:
        shared[150_000] = shared[150_000]
        with store.view("s", resource.uri) as (_, whole):
            assert bytes(whole) == data
        shared[150_000] ^= 0x01
        with pytest.raises(ResourceCorruptError), store.view("s", resource.uri):
            pass


def test_new_records_name_their_16_kib_chunk(store):
    # 16 KiB: a 50 KB page verifies about 66 KB, where 64 KiB chunks made it 114 KB (issue 21).
    data = payload(3 * 16384 + 5)
    resource = store.write("s", "c", data)
    document = json.loads((store.directory / f"{resource.id}.json").read_text())
    assert CHECKSUM_CHUNK == 16384 and document["chunk"] == 16384
    assert document["checksums"]["algorithm"] == "crc32" and document["checksums"]["chunk"] == 16384
    expected = b"".join(zlib.crc32(data[i : i + 16384]).to_bytes(4, "big") for i in range(0, len(data), 16384))
    assert document["checksums"]["values"] == expected.hex()


def test_records_of_64_kib_chunks_still_read_and_verify(store):
    # What this store wrote before its chunks were 16 KiB.
    data = payload(300_000)
    step = 65536
    values = b"".join(zlib.crc32(data[i : i + step]).to_bytes(4, "big") for i in range(0, len(data), step)).hex()
    resource_id = write_old_pair(store.directory, data, {"algorithm": "crc32", "chunk": step, "values": values},
                                 chunk=step)
    uri = f"tool-output://{resource_id}"
    for _ in range(2):  # cold, then warm
        page = store.read("s", uri, offset=100_000, limit=51200)
        shown = page.content.encode()
        assert shown == data[page.offset : page.offset + len(shown)] and len(shown) > 51000
    flip_through_shared_map(store.directory / f"{resource_id}.txt", 140_000)
    with pytest.raises(ResourceCorruptError, match=f"bytes {2 * step} to {3 * step}"):
        store.read("s", uri, offset=100_000, limit=51200)


def write_old_pair(directory: Path, data: bytes, checksums: dict | None, **extra) -> str:
    resource_id = new_id()
    (directory / f"{resource_id}.txt").write_bytes(data)
    document = {"version": 1, "id": resource_id, "uri": f"tool-output://{resource_id}", "sessionID": "s",
                "toolCallID": "c", "mime": "text/plain", "size": len(data), "created": 1.0e12 * 2, **extra}
    if checksums is not None:
        document["checksums"] = checksums
    (directory / f"{resource_id}.json").write_text(json.dumps(document))
    return resource_id


def legacy_values(data: bytes) -> str:
    step = LEGACY_CHECKSUM_CHUNK
    return b"".join(zlib.crc32(data[i : i + step]).to_bytes(4, "big") for i in range(0, len(data), step)).hex()


@pytest.mark.parametrize("inner_chunk", [True, False], ids=["chunk inside checksums", "no chunk anywhere"])
def test_records_without_chunk_are_256_kib_and_still_read(store, inner_chunk):
    data = payload(700_000)
    checksums = {"algorithm": "crc32", "values": legacy_values(data)}
    if inner_chunk:
        checksums["chunk"] = LEGACY_CHECKSUM_CHUNK
    resource_id = write_old_pair(store.directory, data, checksums)
    uri = f"tool-output://{resource_id}"
    page = store.read("s", uri, offset=300_000, limit=1000)
    assert page.content.encode() == data[300_000 : 300_000 + len(page.content.encode())]
    assert b"".join(bytes(view) for view in store.iter_bytes("s", uri)) == data
    flip_through_shared_map(store.directory / f"{resource_id}.txt", 600_000)
    with pytest.raises(ResourceCorruptError, match=f"bytes {2 * LEGACY_CHECKSUM_CHUNK} to 700000"):
        store.read("s", uri, offset=599_000, limit=2000)


def test_records_whose_two_chunk_sizes_disagree_are_invalid(store):
    data = payload(1000)
    checksums = {"algorithm": "crc32", "chunk": 65536, "values": zlib.crc32(data).to_bytes(4, "big").hex()}
    resource_id = write_old_pair(store.directory, data, checksums, chunk=1024)
    with pytest.raises(ResourceNotFoundError, match="chunk"):
        store.read("s", f"tool-output://{resource_id}")


def test_iter_bytes_yields_the_exact_bytes_in_ranges(store):
    data = payload(5 * 1024 * 1024 + 17)
    resource = store.write("s", "c", data)
    views = []
    for view in store.iter_bytes("s", resource.uri):
        assert len(view) <= 1024 * 1024 and (not views or len(views[-1]) % CHECKSUM_CHUNK == 0)
        views.append(bytes(view))
    assert b"".join(views) == data
    empty = store.write("s", "c", b"")
    assert list(store.iter_bytes("s", empty.uri)) == []


def test_iter_bytes_yields_the_good_ranges_before_a_corrupt_one(store):
    data = payload(3 * 1024 * 1024)
    resource = store.write("s", "c", data)
    flip_through_shared_map(store.directory / f"{resource.id}.txt", 2 * 1024 * 1024 + 5)
    taken = []
    with pytest.raises(ResourceCorruptError):
        for view in store.iter_bytes("s", resource.uri):
            taken.append(bytes(view))
    assert b"".join(taken) == data[: 2 * 1024 * 1024]


STREAM_PROBE = r"""
import os, subprocess, sys
script, uri, sink = sys.argv[1:4]
child = subprocess.Popen([script, "read", uri, "--all"], stdout=subprocess.PIPE)
if sink == "head":
    first = child.stdout.read(10)
    child.stdout.close()
    total = len(first)
else:
    total = 0
    while block := child.stdout.read(1 << 20):
        total += len(block)
_, status, usage = os.wait4(child.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss, total)
"""


@pytest.mark.parametrize("sink", ["all", "head"])
def test_read_all_streams_in_flat_memory(tmp_path, subprocess_env, sink):
    assert SCRIPT.exists(), f"the console script is not installed beside {sys.executable}"
    size = 192 * 1024 * 1024
    with ToolOutputStore(tmp_path / "data", durable=False) as store:
        block = payload(1024 * 1024)
        resource = store.write_stream("cli", "c", (block for _ in range(size // len(block))))
    subprocess_env["OVERSPILL_DATA_DIR"] = str(tmp_path / "data")
    subprocess_env["OVERSPILL_SESSION"] = "cli"
    probe = subprocess.run([sys.executable, "-c", STREAM_PROBE, str(SCRIPT), resource.uri, sink],
                           capture_output=True, text=True, env=subprocess_env, timeout=300)
    status, peak_kib, total = probe.stdout.split()
    assert int(total) == (10 if sink == "head" else size), probe.stderr
    assert status == "0" or sink == "head", probe.stderr  # a closed pipe may end the writer
    assert int(peak_kib) < 64 * 1024, f"read --all peaked at {int(peak_kib) // 1024} MiB"


def test_pages_are_ordinary_frozen_pages(store):
    import dataclasses

    from overspill import Page

    data = payload(100_000)
    resource = store.write("s", "c", data)
    page = store.read("s", resource.uri, offset=10, limit=1000)
    assert page == Page(resource, data[10 : page.next].decode(), 10, True, page.next)
    assert dataclasses.asdict(page)["offset"] == 10 and hash(page) == hash(dataclasses.replace(page))
    with pytest.raises(dataclasses.FrozenInstanceError):
        page.offset = 0  # type: ignore[misc]
    last = store.read("s", resource.uri, offset=len(data) - 5)
    assert (last.truncated, last.next, last.content) == (False, None, data[-5:].decode("utf-8", "replace"))


# ---------------------------------------------------------------- issue 19 item 20
_COLOURED = [b"\x1b[1;31m", b"\x1b[0m", b"\x1b]8;;http://x/59\x1b\\", b"\x1b]8;;\x1b\\", b"\x1b]0;title\x07",
             b"\x1b[2K", b"ERROR", b"link", b"ok ", b"\xc3\xa9", b"\n", b"x" * 20]


@given(st.lists(st.sampled_from(_COLOURED), min_size=1, max_size=60).map(b"".join), st.integers(1, 64))
@settings(max_examples=60)
def test_pages_never_show_pieces_of_escape_sequences(tmp_path_factory, data, limit):
    """Each page's view is computed from the page alone; a page edge inside an escape sequence
    showed ``[1;31mERROR`` or ``]8;;http://x/59link``. Pages following ``next`` now show, joined,
    exactly the view of the whole output, and still cover every byte once."""
    from overspill.text import shown_text, view_flags

    store = ToolOutputStore(tmp_path_factory.mktemp("pages"), durable=False)
    uri = store.write("s", "c", data).uri
    offset, contents = 0, []
    while True:
        page = store.read("s", uri, offset=offset, limit=limit)
        assert page.offset == offset  # following next never starts inside a sequence
        contents.append(page.content)
        if page.next is None:
            break
        assert page.next > offset
        offset = page.next
    assert "".join(contents) == shown_text(data, view_flags(store.views))
    # A page asked for inside a sequence starts after it.
    for inside in range(0, len(data), max(1, len(data) // 16)):
        page = store.read("s", uri, offset=inside, limit=limit)
        assert "[1;31m" not in page.content and "]8;;" not in page.content and "[0m" not in page.content


STOP_PROBE = r"""
import os, subprocess, sys
child = subprocess.Popen([sys.argv[1], "read", sys.argv[2], "--all"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
first = child.stdout.read(10)  # the child is now blocked writing its first range of 1 MiB
child.stdout.close()
print(child.wait(timeout=120), len(first), repr(child.stderr.read().decode()))
"""


def test_read_all_stops_at_the_write_the_closed_pipe_refuses(tmp_path, subprocess_env):
    # `read --all | head`: the pipe takes part of the first range and closes.
    # The reader stops there (exit 0, nothing on stderr) and reads no further
    # range, so the corrupt second range is never reached.  A buffered writer
    # took the partial write as done and verified the next range first.
    with ToolOutputStore(tmp_path / "data", durable=False) as store:
        resource = store.write("cli", "c", payload(3 * 1024 * 1024))
        flip_through_shared_map(store.directory / f"{resource.id}.txt", 1024 * 1024 + 5)
        with pytest.raises(ResourceCorruptError):
            list(store.iter_bytes("cli", resource.uri))  # the second range is corrupt
    subprocess_env["OVERSPILL_DATA_DIR"] = str(tmp_path / "data")
    subprocess_env["OVERSPILL_SESSION"] = "cli"
    probe = subprocess.run([sys.executable, "-c", STOP_PROBE, str(SCRIPT), resource.uri],
                           capture_output=True, text=True, env=subprocess_env, timeout=300)
    assert probe.stdout == "0 10 ''\n", (probe.stdout, probe.stderr)


def test_a_preview_bounded_by_end_stops_there_and_states_that_size(store):
    data = b"".join(b"line %d\n" % number for number in range(5000))
    uri = store.write("s", "c", data).uri
    whole = store.preview("s", uri, max_lines=10, max_bytes=10_000)
    assert whole.resource.size == len(data)
    assert store.preview("s", uri, max_lines=10, max_bytes=10_000, end=len(data) + 5) == whole
    small = store.preview("s", uri, max_lines=10, max_bytes=10_000, end=21)
    assert not small.truncated and small.content == "line 0\nline 1\nline 2\n"
    assert small.resource.size == small.next_offset == 21 and small.lines == 3
    bounded = store.preview("s", uri, offset=100, max_lines=10, max_bytes=10_000, end=20_000)
    assert bounded.truncated and bounded.resource.size == 20_000
    assert "of 20000 ..." in bounded.content and bounded.content.endswith(data[:20_000].decode()[-30:])
    nothing = store.preview("s", uri, offset=100, max_lines=10, max_bytes=10_000, end=50)
    assert nothing.content == "" and nothing.next_offset == 100


# ---------------------------------------------------------------- red team E f01
def _long_sequences() -> bytes:
    """OSC 8 links whose URLs (700 and 1,500 bytes, as signed URLs are) outrun a page's 512-byte look
    for an ESC, an inline image whose base64 outruns any page window, and a line of 200 KB after an
    early escape (no newline, no ESC: the look-back must not scan it on every page)."""
    links = b"".join(b"\x1b]8;;http://x/" + b"u" * length + b"\x1b\\link%d\x1b]8;;\x1b\\ plain line %d\n" % (i, i)
                     for i in range(40) for length in (700, 1500))
    image = b"\x1b]1337;File=inline=1:" + b"QUJD" * 10_000 + b"\x07 after the image\n"
    return b"\x1b[1mtitle\x1b[0m\n" + b'{"k":"v"},' * 20_000 + b"\n" + links + image + links[:5000]


@pytest.mark.parametrize("limit", [64, 1000, 8192, 51200])
def test_pages_of_sequences_longer_than_the_window_show_no_piece_of_them(store, limit):
    """A page edge inside an escape sequence moves to its end however long it is (README "What the
    model sees"): the read looked only 512 bytes around a page for its ESC, so pages of OSC 8 links
    with long URLs or of an inline image showed pieces of the URL or the base64.  Pages following
    ``next`` now show, joined, exactly the view of the whole output, and no page, at any offset,
    shows a piece of a sequence."""
    from overspill.text import shown_text, view_flags

    data = _long_sequences()
    uri = store.write("s", "c", data).uri
    pieces = ("\x1b", "\x07", "]8;;", "uuuuuuuu", "QUJDQUJD", "1337;File")
    offset, contents = 0, []
    while offset is not None:
        page = store.read("s", uri, offset=offset, limit=limit)
        assert page.offset == offset
        assert not [piece for piece in pieces if piece in page.content], (offset, page.content[:80])
        contents.append(page.content)
        offset = page.next
    assert "".join(contents) == shown_text(data, view_flags(store.views))
    for inside in range(0, len(data), 997):  # asked for anywhere, inside sequences too
        page = store.read("s", uri, offset=inside, limit=limit)
        assert not [piece for piece in pieces if piece in page.content], (inside, page.content[:80])


# ---------------------------------------------------------------- red team V f06
_CRLF = [b"line", b" done", b"\xc3\xa9", b"\r\n", b"\r\r\n", b"\n", b"\r\x1b[0m\n", b"\x1b[0m\r\n", b"\r\x1b[K\r\n",
         b"\x1b]0;title\x07", b"\x1b[1;31m", b"x" * 20]


def _pages_in_order(store: ToolOutputStore, uri: str, limit: int) -> str:
    offset, contents = 0, []
    while offset is not None:
        page = store.read("s", uri, offset=offset, limit=limit)
        assert page.offset == offset
        contents.append(page.content)
        offset = page.next
    return "".join(contents)


@pytest.mark.parametrize("warm", [True, False])
def test_pages_of_crlf_output_keep_the_line_endings_their_edges_fall_in(tmp_path, warm):
    """A page ending between the \\r and \\n of a line ending showed the line without its \\r (viewed
    alone, a page's final \\r is a redraw), so the pages of a CRLF output read in order changed a line
    ending at each such edge. The \\r now stays: joined, the pages are the output's view, on the
    kernel's path and on the read through the backend (``warm`` False: no mapped page)."""
    from overspill.text import shown_text, view_flags

    store = ToolOutputStore(tmp_path, durable=False)
    if not warm:
        store._pages = None  # as a backend without a warm map (redis): the store's own page rule
    data = b"".join(b"line %04d done\r\n" % i for i in range(600))  # 16 bytes a line
    runs = b"".join(b"step %d\r\r\n" % i for i in range(300))  # an edge inside a run of \r\r\n
    coloured = b"".join(b"ok %d\r\x1b[0m\n" % i for i in range(300))  # an ESC between \r and \n
    for payload in (data, runs, coloured):
        uri = store.write("s", "c", payload).uri
        whole = shown_text(payload, view_flags(store.views))
        assert "\r\n" in whole
        for limit in (1, 2, 15, 31, 4095):
            assert _pages_in_order(store, uri, limit) == whole, limit
    # A page starting at the \n of a \r\n shows that \n; one ending before it, the \r.
    uri = store.write("s", "c", data).uri
    assert store.read("s", uri, offset=15, limit=16).content == "\nline 0001 done\r"
    assert store.read("s", uri, offset=0, limit=15).content == "line 0000 done\r"


@given(st.lists(st.sampled_from(_CRLF), min_size=1, max_size=60).map(b"".join), st.integers(1, 64),
       st.booleans())
@settings(max_examples=60)
def test_crlf_pages_joined_are_the_view_of_the_whole(tmp_path_factory, data, limit, warm):
    """Pages read in order show, joined, the view of the whole output for text whose \\r all end
    lines (CRLF, \\r\\r\\n, escape sequences between), at any page size."""
    from overspill.text import shown_text, view_flags

    store = ToolOutputStore(tmp_path_factory.mktemp("crlf"), durable=False)
    if not warm:
        store._pages = None
    uri = store.write("s", "c", data).uri
    assert _pages_in_order(store, uri, limit) == shown_text(data, view_flags(store.views))


@pytest.mark.parametrize("run", [b"\x1b[31m" * 60_000, b"\x1b]8;;http://x/" + b"a" * 70_000 + b"\x1b\\" + b"\x1b[0m" * 9,
                                 b"\x1b" * 70_001, b"\x1b[0m\x1b]0;t\x07" * 9_000])
def test_a_cr_before_a_long_run_of_escapes_then_a_newline_is_a_line_ending(tmp_path, run):
    """Red team F7 f01: the look for a newline after a page's escape sequences walked them one
    Python call at a time (a page of 3 MB of colour codes took 5 s, paging through it was
    quadratic); a page that does not end in \\r no longer looks, and a run of sequences longer
    than the look's windows is walked a run at a time. The view stays: a \\r before the run and
    its newline ends the line."""
    from overspill.text import shown_text, view_flags

    store = ToolOutputStore(tmp_path, durable=False)
    store._pages = None  # the store's own page rule, as a backend without a warm map
    payload = b"line\r" + run + b"\nnext\r" + run
    uri = store.write("s", "c", payload).uri
    assert store.read("s", uri, offset=0, limit=5).content == "line\r"
    assert store.read("s", uri, offset=0, limit=5).next == 5
    second = store.read("s", uri, offset=5 + len(run), limit=6)  # "\nnext\r", then the run to the end
    assert second.content == "\nnext"  # (no newline after that run: its \r is a redraw)
    whole = shown_text(payload, view_flags(store.views))
    assert whole == "line\r\nnext"
    for limit in (4096, 65_536):
        assert _pages_in_order(store, uri, limit) == whole, limit


# ---------------------------------------------------------------- red team G12 (empty page inside an escape)
@pytest.mark.parametrize("warm", [True, False])
@pytest.mark.parametrize("limit", [1, 3, 8, 9, 64])
def test_a_read_inside_an_escape_sequence_counts_its_limit_from_where_the_page_starts(tmp_path, warm, limit):
    """Red team G12: a read whose offset lies inside an escape sequence moved the page's start past
    the sequence but kept the end that the limit gave from the asked offset, clamped to the start:
    an empty page whose next offset was its own (``read(offset=5, limit=9)`` of this output gave
    offset = next = 73), which a reader following ``next`` never leaves.  The limit now counts from
    where the page starts: the page is the one read at the sequence's end, at least one character
    long, its next offset past it; the read tool's hint names that offset."""
    from overspill import tools

    store = ToolOutputStore(tmp_path, durable=False)
    if not warm:
        store._pages = None  # the store's own page rule, as a backend without a warm map (redis)
    # An OSC string at [1, 73), ESC(B at [73, 76), a CSI at [76, 81), then "b\n"; and an OSC string
    # longer than any page window, for a start moved past the window the offset asked for.
    data = b"a\x1b]" + b"u" * 70 + b"\x1b(B\x1b[31mb\n" + b"\x1b]8;;http://x/" + b"v" * 9000 + b"\x1b\\c\n"
    uri = store.write("s", "c", data).uri
    for inside, end in ((2, 73), (5, 73), (72, 73), (75, 76), (77, 81), (90, len(data) - 2), (5000, len(data) - 2)):
        page = store.read("s", uri, offset=inside, limit=limit)
        direct = store.read("s", uri, offset=end, limit=limit)
        assert (page.offset, page.next, page.content) == (direct.offset, direct.next, direct.content), inside
        assert page.offset == end and (page.next is None or page.next > page.offset), (inside, page)
        result = tools.call(store, "s", "c", "read", {"resource": uri, "offset": inside, "limit": limit})
        assert result.metadata["offset"] == end and result.metadata["next"] == page.next, (inside, result.metadata)
        if page.next is not None:
            assert f"offset={page.next} to continue" in result.output


# ---------------------------------------------------------------- fix D12 (a page of escape sequences only)
@pytest.mark.parametrize("warm", [True, False])
@pytest.mark.parametrize("limit", [1, 2, 3, 8])
def test_a_page_of_escape_sequences_only_goes_on_to_hold_a_character(tmp_path, warm, limit):
    """Noticed by fix D12: a read at the start of a run of escape sequences whose limit ends inside
    the run (``read(offset=73, limit=1)`` of this output) was an empty page, next 76, then another
    empty one, next 81, though a page holds at least one character.  Such a page now goes on to the
    text after the run, its limit counted from where that text starts: the page read there, from
    the asked offset; the read tool's hint names its next offset.  A read inside a sequence reads
    from its end, so it goes on the same way; a run that reaches the output's end makes the last
    page, empty; the pages read in order still make the output's view."""
    from overspill import tools
    from overspill.text import shown_text, view_flags

    store = ToolOutputStore(tmp_path, durable=False)
    if not warm:
        store._pages = None  # the store's own page rule, as a backend without a warm map (redis)
    # An OSC string at [1, 73), ESC(B at [73, 76), a CSI at [76, 81), then "b\n"; a run of sequences
    # longer than any page window before "c"; colour codes to the end.
    data = (b"a\x1b]" + b"u" * 70 + b"\x1b(B\x1b[31mb\n" + b"\x1b[0m\x1b[1A\x1b[2K" * 2000 + b"c\n"
            + b"\x1b[0m" * 3 + b"\x1b]0;t\x07")
    uri = store.write("s", "c", data).uri
    size = len(data)
    text_b, text_c = data.index(b"b\n"), data.index(b"c\n")
    for at, text in ((1, text_b), (73, text_b), (76, text_b), (text_b + 2, text_c), (text_b + 6, text_c),
                     (text_c - 4, text_c)):
        page = store.read("s", uri, offset=at, limit=limit)
        assert page.offset == at and page.content != "" and page.next > at, at
        if at + limit <= text:  # the window holds sequences only: the page is the one read at the text
            there = store.read("s", uri, offset=text, limit=limit)
            assert (page.next, page.content) == (there.next, there.content), at
        result = tools.call(store, "s", "c", "read", {"resource": uri, "offset": at, "limit": limit})
        assert result.metadata["next"] == page.next and f"offset={page.next} to continue" in result.output, at
    # Inside a sequence: read from its end, which starts a run: the page goes on past the run.
    inside = store.read("s", uri, offset=5, limit=limit)
    assert (inside.offset, inside.content) == (73, store.read("s", uri, offset=text_b, limit=limit).content)
    # Sequences to the end: the last page, empty, from wherever it is asked.
    tail = text_c + 2
    for at in (tail, tail + 1, size - 3, size):
        page = store.read("s", uri, offset=at, limit=limit)
        assert (page.content, page.next, page.truncated) == ("", None, False), at
    whole = shown_text(data, view_flags(store.views))
    assert whole == "ab\nc\n"
    assert _pages_in_order(store, uri, limit) == whole


# A second process that flips one byte back and forth through a shared writable map, as fast as it
# can, until it is killed: no timestamp changes, and the byte is the stored one half of the time.
TOGGLER = r"""
import mmap, sys
path, position = sys.argv[1], int(sys.argv[2])
with open(path, "r+b") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_WRITE) as shared:
    stored = shared[position]
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        shared[position] = 0x23
        shared[position] = stored
"""
# How long each race runs (reads are looped for it; nothing about their speed is asserted).
RACE_SECONDS = 2.5


@contextlib.contextmanager
def byte_toggled(path: Path, position: int) -> Iterator[None]:
    """``position`` of the file at ``path`` changed in place and back, without end, by another process."""
    toggler = subprocess.Popen([sys.executable, "-c", TOGGLER, str(path), str(position)], stdout=subprocess.PIPE)
    try:
        assert toggler.stdout is not None and toggler.stdout.readline() == b"ready\n"
        yield
    finally:
        toggler.kill()
        toggler.wait()
        toggler.stdout.close()  # type: ignore[union-attr]


def race(read: Callable[[], tuple[object, object]]) -> tuple[int, int, list[object]]:
    """Call ``read`` (``(what it returned, what was stored there)``) for RACE_SECONDS:
    how many returned the stored bytes, how many raised ResourceCorruptError, and what
    the others returned."""
    served = caught = 0
    wrong = []
    deadline = time.monotonic() + RACE_SECONDS
    while time.monotonic() < deadline:
        try:
            got, stored = read()
        except ResourceCorruptError:
            caught += 1
            continue
        if got == stored:
            served += 1
        else:
            wrong.append(got)
    return served, caught, wrong


@pytest.mark.parametrize("api", ["read warm", "read cold", "read_bytes", "iter_bytes"])
def test_a_byte_changed_during_a_read_is_never_served(tmp_path, api):
    """Promise 2 under a race (red team M12): another process flips a byte in place through a
    shared writable map while reads run.  Each read returns the stored bytes or raises
    ResourceCorruptError, never the changed byte: the bytes returned are the bytes checked.
    A store that verified the chunks in its map and then served (or decoded) the map's bytes
    returned the flipped byte in about one read of ten."""
    data = payload(200_000)
    position = data.index(b"abcdefghij", 60_000) + 3  # an ASCII byte: a flip to '#' keeps the text valid
    with ToolOutputStore(tmp_path, durable=False) as store:
        uri = store.write("s", "c", data).uri
        path = store.directory / f"{parse_uri(uri)}.txt"
        low = position - 20_000

        def page(reader: ToolOutputStore) -> tuple[object, object]:
            found = reader.read("s", uri, offset=low, limit=30_000)
            return found.content, data[found.offset : found.next].decode()

        def first_pages() -> tuple[object, object]:
            # A fresh store's first read (one pread) and its second (the payload mapped since).
            with ToolOutputStore(tmp_path, durable=False) as fresh:
                first, second = page(fresh), page(fresh)
            return (first[0], second[0]), (first[1], second[1])

        def some_bytes() -> tuple[object, object]:
            _, got, offset, _ = store.read_bytes("s", uri, offset=low, limit=30_000)
            return got, data[offset : offset + 30_000]

        def every_range() -> tuple[object, object]:
            return b"".join(bytes(view) for view in store.iter_bytes("s", uri)), data

        read = {"read warm": lambda: page(store), "read cold": first_pages, "read_bytes": some_bytes,
                "iter_bytes": every_range}[api]
        assert read()[0] == read()[1]
        with byte_toggled(path, position):
            served, caught, wrong = race(read)
    assert not wrong, f"{len(wrong)} reads served a byte never stored ({served} exact, {caught} caught)"
    assert served + caught > 0


# ``overspill read --all`` run again and again in one process for a time (a process per run leaves
# too few runs in a bounded test), its standard output a file, its standard error kept: per run,
# the bytes written and the exit status, counted.
READ_ALL_LOOP = r"""
import io, json, sys, time
from overspill.cli import main
uri, stored, sink, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
with open(stored, "rb") as file:
    data = file.read()
runs = {"exact": 0, "corrupt": 0, "wrong": 0}
deadline = time.monotonic() + seconds
while time.monotonic() < deadline:
    with open(sink, "w") as out:
        sys.stdout, sys.stderr = out, io.StringIO()
        status = main(["read", "--all", uri])
        said = sys.stderr.getvalue()
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    if status == 0:
        with open(sink, "rb") as file:
            runs["exact" if file.read() == data else "wrong"] += 1
    else:
        assert status == 3 and "is corrupt" in said, (status, said)
        runs["corrupt"] += 1
print(json.dumps(runs))
"""


def test_read_all_never_writes_a_byte_changed_while_it_runs(tmp_path, subprocess_env):
    """``overspill read --all`` (red team M12) while another process flips a byte in place through
    a shared writable map: each run writes the stored bytes (exit 0) or fails as corrupt (exit 3),
    never exit 0 with the changed byte, which a run that wrote the ranges straight from the map it
    had verified did in about one run of ten."""
    data = payload(2 * 1024 * 1024 + 1000)
    position = data.index(b"abcdefghij", 1024 * 1024 + 4096) + 3
    with ToolOutputStore(tmp_path / "data", durable=False) as store:
        resource = store.write("cli", "c", data)
    (tmp_path / "stored").write_bytes(data)
    subprocess_env["OVERSPILL_DATA_DIR"] = str(tmp_path / "data")
    subprocess_env["OVERSPILL_SESSION"] = "cli"
    with byte_toggled(tmp_path / "data" / "tool-output" / "managed" / f"{resource.id}.txt", position):
        loop = subprocess.run([sys.executable, "-c", READ_ALL_LOOP, resource.uri, str(tmp_path / "stored"),
                               str(tmp_path / "out"), str(2 * RACE_SECONDS)],
                              capture_output=True, text=True, env=subprocess_env, timeout=120)
    assert loop.returncode == 0, loop.stderr
    runs = json.loads(loop.stdout)
    assert not runs["wrong"], runs


# ---------------------------------------------------------------- fix U13 (a page of \r redraws only)
@pytest.mark.parametrize("warm", [True, False])
@pytest.mark.parametrize("limit", [1, 2, 3, 8])
@pytest.mark.parametrize("views", [("ansi", "cr"), ("cr",), ("ansi",), ()])
def test_a_page_of_redraws_only_goes_on_to_hold_a_character(tmp_path, warm, limit, views):
    """Fix U13: under the cr view, ``read(offset=122, limit=8)`` of this output, whose bytes there
    are all \\r, was an empty page with next 130 (limit 1 over the 50 \\r: 50 empty pages), though a
    page holds at least one character.  As a page of escape sequences only (fix D12), such a page
    (its bytes \\r redraws, and escape sequences under the ansi view) now goes on to the text after
    them, its limit counted from there: the page read there, from the asked offset; the read tool's
    hint names its next offset.  A \\r that ends a line (a \\n next, past escape sequences) is text:
    the page goes on to it, and holds that line ending.  A run that reaches the output's end makes
    the last page, empty.  Without the cr view, a \\r is a character, and nothing changes."""
    from overspill import tools
    from overspill.text import shown_text, view_flags

    store = ToolOutputStore(tmp_path, durable=False, config={"tool_output": {"views": list(views)}})
    if not warm:
        store._pages = None  # the store's own page rule, as a backend without a warm map (redis)
    assert store.views == views
    flags = view_flags(views)
    ansi = "ansi" in views
    # Redraws between progress lines; a run of 50 \r (the issue's); a run longer than any page
    # window and the walk's read-on window; \r\r\n; under the ansi view, \r mixed with sequences
    # (\r\x1b[K\r\n, and a long run); redraws to the end.
    data = (b"a\n" + b"progress 1%\r" * 10 + b"\r" * 50 + b"done\n" + b"\r" * 70_000 + b"e\n" + b"f\r\r\n"
            + (b"g\r\x1b[K\r\n" + b"\r\x1b[2K" * 20_000 + b"h\n" if ansi else b"")
            + b"\r" * 30 + (b"\x1b[0m\r" * 3 if ansi else b""))
    uri = store.write("s", "c", data).uri
    size = len(data)
    done, text_e, text_f = data.index(b"done"), data.index(b"\re\n") + 1, data.index(b"f\r")
    cases = [(13, 14), (122, done), (done - 50, done), (done - 1, done), (done + 5, text_e),
             (text_e - 3, text_e), (text_f + 1, text_f + 2)]  # \r\r\n: on to the \r that ends the line
    if ansi:
        text_g, text_h = data.index(b"g\r"), data.index(b"\x1b[2Kh\n") + 4
        cases += [(text_g + 1, text_g + 4),  # \r\x1b[K\r\n: on to the \r that ends the line
                  (text_g + 7, text_h), (text_h - 9, text_h)]
    tail = data.rindex(b"\n") + 1
    if "cr" not in views:
        # A \r is a character: the page is the bytes asked for, as it was.
        for at, _ in cases + [(tail, None)]:
            page = store.read("s", uri, offset=at, limit=limit)
            end = min(at + limit, size)
            if not ansi or b"\x1b" not in data[at:end]:
                assert (page.offset, page.next, page.content) == (at, end, shown_text(data[at:end], flags)), at
        return
    for at, text in cases:
        page = store.read("s", uri, offset=at, limit=limit)
        assert page.offset == at and page.content != "" and page.next > at, at
        if at + limit <= text:  # the window holds redraws (and sequences) only: the page is the one read at the text
            there = store.read("s", uri, offset=text, limit=limit)
            assert (page.next, page.content, page.truncated) == (there.next, there.content, there.truncated), at
        result = tools.call(store, "s", "c", "read", {"resource": uri, "offset": at, "limit": limit})
        assert result.metadata["next"] == page.next and f"offset={page.next} to continue" in result.output, at
    # A \r that ends a line is text: the page read from it holds that line ending.
    for crlf in [text_f + 2] + ([text_g + 4] if ansi else []):
        page = store.read("s", uri, offset=crlf, limit=limit)
        assert page.content == "\r" if limit == 1 else page.content.startswith("\r\n"), (crlf, page.content)
    # Redraws to the end: the last page, empty, from wherever it is asked.
    for at in (tail, tail + 1, size - 3, size):
        page = store.read("s", uri, offset=at, limit=limit)
        assert (page.content, page.next, page.truncated) == ("", None, False), at
    # Read in order, every page but the last holds a character.
    offset, contents = 0, []
    while offset is not None:
        page = store.read("s", uri, offset=offset, limit=limit)
        assert page.offset == offset and (page.content or page.next is None), offset
        contents.append(page.content)
        offset = page.next
    assert "".join(contents).endswith("h\n" if ansi else "f\r\n")


@pytest.mark.parametrize("part", ["head", "tail", "signal line", "colored head", "colored tail"])
def test_a_byte_changed_during_a_preview_is_never_shown(tmp_path, part):
    """Promise 2 for previews (review R12): another process flips a byte in place through a
    shared writable map while ``store.preview`` runs, in the head window, the tail window, a
    signal line of the omitted part, or a window whose escapes make the preview read the payload
    through its view.  Each preview is the one of the stored bytes or raises ResourceCorruptError,
    never one showing the changed byte: every window is copied out and checked before it is shown.
    Previews cut from a view of the shared map, checked when it was made, showed the flipped
    byte in hundreds of previews of thousands."""
    colored = part.startswith("colored")
    data = bytearray(payload(400_000))
    signal = data.index(b"\n", 200_000) + 1
    data[signal : signal + 32] = b"error: disk abcdefghij failed  \n"
    if colored:  # an escape near each end: the preview is cut from the payload's view
        data[100:105] = b"\x1b[31m"
        data[-200:-195] = b"\x1b[31m"
    data = bytes(data)
    position = {"head": data.index(b"abcdefghij", 2_000) + 3, "colored head": data.index(b"abcdefghij", 2_000) + 3,
                "tail": data.index(b"abcdefghij", len(data) - 3_000) + 3,
                "colored tail": data.index(b"abcdefghij", len(data) - 3_000) + 3,
                "signal line": signal + 15}[part]
    with ToolOutputStore(tmp_path, durable=False) as store:
        uri = store.write("s", "c", data).uri
        path = store.directory / f"{parse_uri(uri)}.txt"
        expected = store.preview("s", uri).content
        # The flipped byte is one the preview shows: a preview of the '#' differs from it.
        assert data[position : position + 1].decode() in expected
        # A signal scan that meets a chunk failing its check leaves the signal lines out (they are
        # a help: the preview stands without them), which shows no byte never stored either.
        with ToolOutputStore(tmp_path, durable=False, config={"tool_output": {"signals": []}}) as plain:
            without_signals = plain.preview("s", uri).content
        assert "error: disk" in expected and "error: disk" not in without_signals

        def shown() -> tuple[object, object]:
            got = store.preview("s", uri).content
            return got, (without_signals if got == without_signals else expected)

        with byte_toggled(path, position):
            served, caught, wrong = race(shown)
    assert not wrong, f"{len(wrong)} previews showed a byte never stored ({served} exact, {caught} caught)"
    assert served + caught > 0
