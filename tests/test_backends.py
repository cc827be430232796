"""The backend seam: the local backend keeps the ``Backend`` protocol, backends
never import the store, and the store's window-based previews and pages equal
what the whole payload gives."""

from __future__ import annotations

import ast
import os
import pathlib
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import overspill
from overspill.text import shown_text, view_flags
from overspill import ResourceCorruptError, ResourceNotFoundError, ToolOutputStore
from overspill.backends import Backend, CleanupReport, Writer
from overspill.backends.local import LocalBackend
from overspill.records import new_id

BACKENDS = pathlib.Path(overspill.__file__).parent / "backends"


@pytest.fixture
def backend(tmp_path):
    opened = LocalBackend(tmp_path / "managed", durable=False)
    yield opened
    opened.close()


def publish(backend, data: bytes, session: str = "s"):
    writer = backend.create(new_id())
    for start in range(0, len(data), 70_000):
        writer.write(memoryview(data[start : start + 70_000]))
    return writer.publish(session, "call", "text/plain", None, retention=timedelta(days=1))


def test_local_backend_keeps_the_protocol(backend):
    assert isinstance(backend, Backend)
    writer = backend.create(new_id())
    try:
        assert isinstance(writer, Writer)
    finally:
        writer.abort()
    assert CleanupReport is overspill.CleanupReport


def _backend_classes():
    from overspill.backends._local_writer import LocalWriter
    from overspill.backends.local import LocalBackend

    found = [(LocalBackend, LocalWriter)]
    try:
        from overspill.backends import redis as redis_backend
    except ImportError:  # the optional client is not installed: only the local backend to compare
        return found
    return found + [(redis_backend.RedisBackend, redis_backend.RedisWriter)]


@pytest.mark.parametrize("protocol", [Backend, Writer], ids=["Backend", "Writer"])
def test_every_backend_has_the_protocol_methods_with_the_same_signatures(protocol):
    import inspect

    def shape(function):
        return [(p.name, p.kind) for p in inspect.signature(function).parameters.values()
                if p.kind is not p.VAR_KEYWORD and p.default is p.empty]

    names = [name for name in vars(protocol) if not name.startswith("_")]
    assert {"create", "record", "read", "records", "delete", "sweep", "close"} <= set(vars(Backend))
    for classes in _backend_classes():
        implementation = classes[0] if protocol is Backend else classes[1]
        for name in names:
            if isinstance(vars(protocol)[name], property):
                continue  # ``id`` and ``size`` may be instance attributes: checked on live writers elsewhere
            member = getattr(implementation, name, None)
            assert callable(member), f"{implementation.__name__} lacks {name}"
            # Required parameters agree in name and kind; extra ones must be optional.
            assert shape(member) == shape(getattr(protocol, name)), (implementation.__name__, name)


def test_no_backend_imports_the_store_or_a_higher_layer():
    for path in BACKENDS.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [alias.name for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                assert name.split(".")[-1] not in ("store", "capture", "tools", "cli", "mcp"), (path.name, name)


def test_the_store_touches_no_file_itself():
    source = (pathlib.Path(overspill.__file__).parent / "store.py").read_text()
    for call in ("os.open", "os.pread", "os.lstat", "os.stat", "os.listdir", "mmap", "_files"):
        assert call not in source, call


def test_publish_read_ranges_verified(backend):
    data = bytes(range(256)) * 2000  # 512,000 bytes: several checksum chunks
    record = publish(backend, data)
    assert record.resource.size == len(data) and record.session_id == "s"
    assert backend.record(record.id) == record
    for start, end in [(0, 0), (0, 1), (5, 70_000), (262_140, 262_150), (len(data) - 3, len(data))]:
        with backend.read(record, start, end) as view:
            assert bytes(view) == data[start:end]
    assert [r.id for r in backend.records("s")] == [record.id]
    assert backend.records("other") == []


def test_a_changed_byte_is_corrupt_for_the_chunks_that_cover_it(backend):
    data = b"x" * 600_000
    record = publish(backend, data)
    path = backend.directory / f"{record.id}.txt"
    with open(path, "r+b") as file:
        file.seek(500_000)
        file.write(b"y")
    with pytest.raises(ResourceCorruptError):
        backend.read(record, 499_990, 500_010).release()
    with backend.read(record, 0, 10) as view:  # another chunk still reads
        assert bytes(view) == b"x" * 10


def test_abort_leaves_nothing_and_a_taken_id_is_refused(backend):
    resource_id = new_id()
    writer = backend.create(resource_id)
    writer.write(memoryview(b"partial"))
    with pytest.raises(FileExistsError):
        backend.create(resource_id)
    writer.abort()
    assert {name for name in os.listdir(backend.directory) if not name.startswith(".cleanup")} == set()
    with pytest.raises(ResourceNotFoundError):
        backend.record(resource_id)


def test_delete_removes_the_pair(backend):
    record = publish(backend, b"abc" * 10)
    assert backend.delete(record.id) > 30
    assert backend.delete(record.id) == 0
    with pytest.raises(ResourceNotFoundError):
        backend.record(record.id)


def test_sweep_through_the_backend(backend):
    record = publish(backend, b"old")
    report = backend.sweep(4e12, timedelta(days=7), timedelta(hours=1))
    assert report.removed_ids == (record.id,) and report.removed == 1


# Lines of awkward bytes, many of them, so that previews cut by lines and by
# bytes far from both ends, where the store reads only two windows.
_line = st.lists(st.sampled_from([b"a", b"\xc3\xa9", b"\xe4\xb8\xad", b"\xf0\x9f\x98\x80", b"\xc3", b"\x80", b"\r"]),
                 max_size=40).map(b"".join)
_payloads = st.lists(_line, min_size=1, max_size=400).map(b"\n".join)


@given(_payloads, st.integers(1, 60), st.integers(1, 200), st.integers(1, 997))
@settings(max_examples=120)
def test_windowed_stream_preview_equals_the_whole_preview(tmp_path_factory, data, max_lines, max_bytes, chunk):
    store = ToolOutputStore(tmp_path_factory.mktemp("windows"), durable=False)
    chunks = [data[i : i + chunk] for i in range(0, len(data), chunk)]
    streamed = store.truncate_stream("s", "c", chunks, max_lines=max_lines, max_bytes=max_bytes)
    whole = store.truncate("s", "c", data, max_lines=max_lines, max_bytes=max_bytes)
    assert streamed.truncated == whole.truncated
    if whole.truncated:
        assert streamed.content.replace(streamed.resource.uri, "U") == whole.content.replace(whole.resource.uri, "U")


@given(_payloads, st.integers(0, 20_000), st.integers(1, 64))
@settings(max_examples=120)
def test_windowed_pages_equal_pages_of_the_whole(tmp_path_factory, data, offset, limit):
    store = ToolOutputStore(tmp_path_factory.mktemp("pages"), durable=False)
    resource = store.write("s", "c", data)
    page = store.read("s", resource.uri, offset=offset, limit=limit)
    start, end = overspill.page_bounds(data, min(offset, len(data)), limit, True)
    # A page shows the view of its stored bytes (escapes removed, redraws collapsed); a \r
    # ending it before a \n is that line's ending, as in the view of the whole (the payloads hold no ESC).
    flags = view_flags(("ansi", "cr"))
    shown = (shown_text(data[start : end + 1], flags)[:-1] if data[end : end + 1] == b"\n"
             else shown_text(data[start:end], flags))
    if shown == "" and start < end:
        # Redraws only: the page goes on to the text after them (fix U13), as the page read there; a \r
        # right before a \n is that line's ending, text; redraws up to the end make the last page, empty.
        text = start
        while text < len(data) and data[text] == 0x0D and data[text + 1 : text + 2] != b"\n":
            text += 1
        if text >= len(data):
            assert (page.offset, page.content, page.next) == (start, "", None)
        else:
            there = store.read("s", resource.uri, offset=text, limit=limit)
            assert there.content and (page.offset, page.content, page.next) == (start, there.content, there.next)
        return
    assert (page.offset, page.content) == (start, shown)
    assert page.next == (end if end < len(data) else None)


def _open_descriptors() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_a_read_after_a_first_one_maps_the_files_that_one_kept_open(tmp_path, monkeypatch):
    # A first read keeps its record and payload open (issue 21: no close on its
    # way, no second open on the next read's): the next read opens nothing by path.
    from overspill import _files

    with ToolOutputStore(tmp_path, durable=False) as writer:
        uri = writer.write("s", "c", "".join(f"line {n}\n" for n in range(20000))).uri
    store = ToolOutputStore(tmp_path, durable=False)
    first = store.read("s", uri, offset=100, limit=50)
    opened = []
    real_open = os.open

    def counted_open(path, *args, **kwargs):
        opened.append(str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(_files.os, "open", counted_open)
    again = store.read("s", uri, offset=100, limit=50)
    later = store.read("s", uri, offset=150_000, limit=50)
    monkeypatch.undo()
    assert again.content == first.content and "\nline " in later.content
    assert opened == []
    store.close()


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts this process's descriptors in /proc")
def test_a_store_dropped_unclosed_lets_its_files_go_at_once(tmp_path):
    # No reference cycle keeps a backend (and the files and maps its reads hold)
    # alive until the garbage collector runs: dropping the last reference is enough.
    import gc

    with ToolOutputStore(tmp_path, durable=False) as writer:
        uri = writer.write("s", "c", "line\n" * 40000).uri
    before = _open_descriptors()
    enabled = gc.isenabled()
    gc.disable()
    try:
        store = ToolOutputStore(tmp_path, durable=False)
        for _ in range(3):  # a first read, then the map
            store.read("s", uri, offset=7, limit=20)
        store.write("s", "d", "y" * 300_000)
        assert store.records("s") and _open_descriptors() - before
        del store
        assert _open_descriptors() <= before
    finally:
        if enabled:
            gc.enable()


def test_a_payload_replaced_after_a_first_read_is_looked_up_again(tmp_path):
    # The payload the first read kept open was renamed over: the next read finds
    # it unlinked (fstat), takes the new file by path and refuses its bytes.
    with ToolOutputStore(tmp_path, durable=False) as writer:
        uri = writer.write("s", "c", "".join(f"line {n}\n" for n in range(20000))).uri
    store = ToolOutputStore(tmp_path, durable=False)
    assert store.read("s", uri, offset=0, limit=20).content == "line 0\nline 1\nline 2"
    payload = str(store.directory / (uri.split("//")[1] + ".txt"))
    size = os.path.getsize(payload)
    with open(payload + ".new", "wb") as file:
        file.write(b"x" * size)
    os.replace(payload + ".new", payload)
    with pytest.raises(ResourceCorruptError):
        store.read("s", uri, offset=0, limit=20)
    store.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks")
def test_a_forked_child_counts_only_its_own_unpublished_bytes(tmp_path):
    # The quota's running total subtracts this process's unpublished payloads
    # when it recounts the folder: in a child, the parent's writers are not its own.
    backend = LocalBackend(tmp_path / "managed", durable=False, index=tmp_path / "index")
    parents = backend.create(new_id())
    parents.write(memoryview(b"p" * 1000))
    assert backend._pending() == backend._usage._unpublished() == 1000
    child = os.fork()
    if child == 0:  # pragma: no cover - reported through the exit status
        try:
            backend.reset_after_fork()  # as a store does for its backend in a forked child
            mine = backend.create(new_id())
            mine.write(memoryview(b"c" * 10))
            os._exit(0 if backend._pending() == backend._usage._unpublished() == 10 else 1)
        finally:
            os._exit(2)
    assert os.waitpid(child, 0)[1] == 0
    parents.abort()


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts this process's descriptors in /proc")
def test_descriptors_held_for_warm_reads_stay_bounded_and_close(tmp_path):
    """Warm reads hold the record and the payload open beside each cached map
    (their ``fstat`` replaces a stat by path): reading many resources again and
    again holds descriptors for the open maps alone, a forked child keeps none
    of its parent's, and ``close`` lets every one go."""
    uris = []
    with ToolOutputStore(tmp_path, durable=False) as writer:
        for number in range(120):
            uris.append(writer.write("s", f"c{number}", b"line %d\n" % number * 9000).uri)
    before = _open_descriptors()
    store = ToolOutputStore(tmp_path, durable=False)
    most = 0
    for _ in range(3):  # a first read, one that maps, one that holds the record too
        for uri in uris:
            assert store.read("s", uri, offset=70, limit=9).content
            most = max(most, len(_open_descriptors() - before))
    # Per open map (16 at most): the map's own descriptor, the payload's and the record's.
    assert most <= 3 * 16
    child = os.fork()
    if child == 0:  # the child's caches start empty: none of the parent's files stay open in it
        os._exit(0 if _open_descriptors() <= before else 1)
    assert os.waitpid(child, 0)[1] == 0
    store.close()
    assert _open_descriptors() <= before


# Long lines whose view is a few bytes of many: a progress bar redrawn with \r, runs of escapes
# (an OSC string among them), beside the short lines above.
_noisy_piece = st.sampled_from([b"progress 42%\r", b"\r", b"\x1b[31m", b"\x1b[0m", b"\x1b]0;title\x07",
                                b"\x1b]8;;http://x\x1b\\", b"\x1b]0;" + b"y" * 30, b"\x1b", b"ok", b"\xc3\xa9",
                                b"error", b" ", b"\r\n"])
_long_line = st.tuples(st.lists(_noisy_piece, min_size=1, max_size=6), st.integers(1, 120)).map(
    lambda parts: b"".join(parts[0]) * parts[1])
_noisy_payloads = st.lists(st.one_of(_line, _long_line), min_size=1, max_size=12).map(b"\n".join)


@given(_noisy_payloads, st.integers(1, 30), st.integers(1, 200), st.integers(1, 997),
       st.sampled_from([(0, 7), (50, 3), (400, 64)]))
@settings(max_examples=150)
def test_windowed_stream_preview_of_long_redraw_and_escape_lines_equals_the_whole_preview(
        tmp_path_factory, data, max_lines, max_bytes, chunk, pieces):
    """A payload whose ends hold escapes or redraws is previewed from the whole stored copy, a
    long region a piece at a time (red team F7 f05: a 200 MB progress line was held whole).
    With the pieces made tiny, every long line goes through the piecewise view: the stored
    copy's preview equals the one cut from the output held whole in memory."""
    from overspill import _views

    store = ToolOutputStore(tmp_path_factory.mktemp("long"), durable=False)
    whole = store.truncate("s", "c", data, max_lines=max_lines, max_bytes=max_bytes)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_views, "_REGION_BYTES", pieces[0])
        patch.setattr(_views, "_PIECE_BYTES", pieces[1])
        patch.setattr(_views, "_CAP_MARGIN", 8)
        chunks = [data[i : i + chunk] for i in range(0, len(data), chunk)]
        streamed = store.truncate_stream("s", "c", chunks, max_lines=max_lines, max_bytes=max_bytes)
    assert streamed.truncated == whole.truncated
    if whole.resource is not None:
        assert streamed.content.replace(streamed.resource.uri, "U") == whole.content.replace(whole.resource.uri, "U")
    else:
        assert streamed.content == whole.content


def test_resources_read_large_once_are_not_listed_for_ever(tmp_path, monkeypatch):
    """Review of the bounded-memory preview: each resource read past the verify step stayed listed
    (its dead map references) until it was read again, so a long-lived server that previews many
    large outputs that others remove grew that list without end; past a few, the dead are dropped."""
    import gc

    from overspill.backends import local

    monkeypatch.setattr(local, "_VERIFY_STEP", 1 << 20)
    monkeypatch.setattr(local, "_LARGE_MAP_IDS", 4, raising=False)
    with ToolOutputStore(tmp_path, durable=False) as store:
        backend = store._backend
        data = bytes(range(256)) * 8192  # 2 MiB: over the step
        for _ in range(12):
            record = backend.record(store.write("s", "c", data).uri.removeprefix("tool-output://"))
            with backend.read(record, 0, len(data)) as view:
                assert view == data
            del view
            gc.collect()
        assert len(backend._large_maps) <= 5


@pytest.mark.parametrize("data, max_lines, max_bytes", [
    (b"aaaaa\nprogress 42%\r\x1b]0;" + b"y" * 30, 2, 2),  # hypothesis found it (the windowed test above)
    (b"".join(b"line %d\n" % i for i in range(50)) + b"\x1b]0;" + b"y" * 5000, 10, 100),
    (b"x" * 300 + b"\n" + b"\x1b]8;;http://example.com/" + b"z" * 3000, 5, 200),
])
def test_a_tail_window_inside_an_unterminated_escape_sequence_is_not_plain_text(tmp_path, data, max_lines,
                                                                                 max_bytes):
    """A stored payload is previewed from its first and last windows when both are their own view;
    a last window that lies wholly inside an escape sequence begun before it (an unterminated OSC
    string ending the output) looked like plain text, so the stored output's tail showed the
    string's bytes where the output's view (truncate of the same bytes) shows none of them."""
    store = ToolOutputStore(tmp_path, durable=False)
    whole = store.truncate("s", "c", data, max_lines=max_lines, max_bytes=max_bytes)
    streamed = store.truncate_stream("s", "d", [data[i : i + 7] for i in range(0, len(data), 7)],
                                     max_lines=max_lines, max_bytes=max_bytes)
    assert streamed.content.replace(streamed.resource.uri, "U") == whole.content.replace(whole.resource.uri, "U")
    assert not streamed.content.endswith(("y", "z"))


def test_a_running_outputs_verified_copy_is_made_once():
    """SealChain.verified_copy (a running output's copied read) copies its range once (review
    R12): its check sliced each sealed stretch's part out of the copy as ``bytes``, a second copy
    of it, where a view of the copy reads the same bytes.  Counted with tracemalloc: the peak
    above what the call returns stays under half a stretch."""
    import tracemalloc
    import zlib

    from overspill.backends._seals import SealChain, seal_entry

    size, stretch = 4 << 20, 2 << 20
    payload = (b"0123456789 abcdefghij\n" * (size // 22 + 1))[:size]
    chain = SealChain("a-resource")
    chain.feed(b"".join(seal_entry("a-resource", low, low + stretch, zlib.crc32(payload[low : low + stretch]))
                        for low in range(0, size, stretch)))
    assert chain.end == size
    view = memoryview(payload)
    assert chain.verified_copy("U", view, 0, 0, size) == payload
    tracemalloc.start()
    try:
        got = chain.verified_copy("U", view, 0, 0, size)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got == payload
    assert peak - len(got) < stretch // 2, f"{peak - len(got)} bytes allocated beyond the {len(got)} returned"
