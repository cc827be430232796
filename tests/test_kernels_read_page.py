"""read_page (issue 21, goal 2): a first read's window opened, read, verified and
paged in one call.  The compiled kernel and its twin give the same answers and
the same errors, and both give what ``page_text`` gives over the whole payload;
the descriptor is the caller's, and nothing stays open on an error."""

from __future__ import annotations

import errno
import os
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overspill import _kernels, _native


def _open_descriptors() -> set[str]:
    return set(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else set()


def _checksums(content: bytes, chunk: int) -> bytes:
    return b"".join(zlib.crc32(content[at:at + chunk]).to_bytes(4, "big")
                    for at in range(0, max(len(content), 1), chunk))


def _page(kernel, *arguments):
    """The kernel's answer, its descriptor checked (a pread's: position untouched) and closed."""
    fd, identity, found = kernel(*arguments)
    try:
        assert identity[3] == os.fstat(fd).st_size
        assert os.lseek(fd, 0, os.SEEK_CUR) == 0
        assert (os.get_inheritable(fd), os.get_blocking(fd)) == (False, False)
    finally:
        os.close(fd)
    return identity, found


_BYTES = st.sampled_from([b"a", b"b", b"\n", b"\r", b"\x1b", b"[", b"m", b"\xc3\xa9", b"\xe2\x82\xac",
                          b"\xf0\x9f\x98\x80", b"\xc3", b"\xff"])


@settings(max_examples=200, deadline=None)
@given(data=st.data(), parts=st.lists(_BYTES, min_size=1, max_size=120), chunk=st.sampled_from([1, 3, 7, 16, 64]),
       flags=st.integers(0, 3), reach=st.integers(0, 8), limit=st.integers(1, 80), damage=st.booleans(),
       size_delta=st.sampled_from([0, 0, 0, -1, 1]))
def test_the_twins_agree_and_page_as_page_text_does(tmp_path_factory, data, parts, chunk, flags, reach, limit, damage,
                                                    size_delta):
    content = b"".join(parts)
    size = len(content)
    sums = _checksums(content, chunk)
    stored = bytearray(content)
    if damage:
        stored[data.draw(st.integers(0, size - 1))] ^= 0x20
    path = tmp_path_factory.mktemp("page") / "payload.txt"
    path.write_bytes(bytes(stored))
    low = data.draw(st.integers(0, size - 1))
    high = data.draw(st.integers(low + 1, size))
    offset = data.draw(st.integers(low, high))
    base = data.draw(st.sampled_from([low - low % chunk, 0]))
    # The window as a first read takes it: whole chunks, one byte past the last (when there is one).
    length = data.draw(st.sampled_from([min(-(-high // chunk) * chunk + 1, size) - base, high - base,
                                        size - base + 1]))
    arguments = (str(path), base, length, size + size_delta, low, high, offset, limit, flags, reach,
                 data.draw(st.sampled_from([sums, memoryview(sums), None])), chunk)
    if arguments[10] is not None and base + length < min(-(-high // chunk) * chunk, size + size_delta):
        for kernel in (_kernels.read_page, _native.read_page):  # a part of a chunk cannot be verified
            with pytest.raises(ValueError):
                kernel(*arguments)
        return
    compiled = _page(_kernels.read_page, *arguments)
    assert compiled == _page(_native.read_page, *arguments)
    identity, found = compiled
    if size_delta or base + length > size:
        assert found is None  # not the size the record says, or a short read: nothing verified
        return
    whole = _native.page_text(bytes(stored), low, high, offset, limit, flags, reach, arguments[10], chunk)
    if high < base + length or base + length == size:  # the window's end is the payload's only at its end
        assert found == whole
    if isinstance(found, int):
        assert arguments[10] is not None and low // chunk <= found <= (high - 1) // chunk
        assert zlib.crc32(bytes(stored[found * chunk:(found + 1) * chunk])) != int.from_bytes(
            sums[4 * found:4 * found + 4], "big")


def test_a_payload_not_of_the_record_size_is_not_paged(tmp_path):
    path = tmp_path / "payload.txt"
    path.write_bytes(b"0123456789")
    for kernel in (_kernels.read_page, _native.read_page):
        for size in (9, 11, 100):
            assert _page(kernel, str(path), 0, 5, size, 0, 4, 0, 4, 0, 0, None, 1)[1] is None
        assert _page(kernel, str(path), 5, 6, 10, 5, 10, 5, 10, 0, 0, None, 1)[1] is None  # a short read
        assert _page(kernel, str(path), 4, 6, 10, 5, 10, 5, 10, 0, 0, None, 1)[1] == (5, 10, "56789")


def test_a_mismatched_chunk_is_named_from_the_payload_start(tmp_path):
    content = b"".join(bytes([65 + k]) * 8 for k in range(8))
    sums = bytearray(_checksums(content, 8))
    sums[4 * 5] ^= 1  # chunk 5 ([40, 48)) does not match
    path = tmp_path / "payload.txt"
    path.write_bytes(content)
    for kernel in (_kernels.read_page, _native.read_page):
        assert _page(kernel, str(path), 32, 25, 64, 33, 56, 40, 16, 0, 0, bytes(sums), 8)[1] == 5
        assert _page(kernel, str(path), 24, 17, 64, 25, 40, 30, 8, 0, 0, bytes(sums), 8)[1] == (30, 38, "DDEEEEEE")


def test_what_is_not_a_regular_file_is_refused_and_nothing_stays_open(tmp_path):
    (tmp_path / "target").write_bytes(b"x" * 10)
    os.symlink(tmp_path / "target", tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    before = _open_descriptors()
    for kernel in (_kernels.read_page, _native.read_page):
        with pytest.raises(OSError) as raised:
            kernel(str(tmp_path / "link"), 0, 5, 10, 0, 4, 0, 4, 0, 0, None, 1)
        assert raised.value.errno == errno.ELOOP
        with pytest.raises(FileNotFoundError) as missing:
            kernel(str(tmp_path / "missing"), 0, 5, 10, 0, 4, 0, 4, 0, 0, None, 1)
        assert missing.value.filename == str(tmp_path / "missing")
        for path in (tmp_path / "fifo", tmp_path):
            with pytest.raises(OSError) as raised:
                kernel(str(path), 0, 5, 10, 0, 4, 0, 4, 0, 0, None, 1)
            assert type(raised.value) is OSError and raised.value.errno in (0, errno.EISDIR)
    assert _open_descriptors() <= before


_GOOD = ("/no/such/file", 0, 8, 8, 1, 5, 2, 4, 0, 0, bytes(8), 4)


@pytest.mark.parametrize(("position", "value", "error"), [
    (0, b"/tmp/x", TypeError), (1, True, TypeError), (1, -4, ValueError),
    (2, 8.0, TypeError), (3, -1, ValueError), (4, "1", TypeError), (5, None, TypeError), (6, -1, ValueError),
    (7, 0, ValueError), (8, 4, ValueError), (8, True, TypeError), (9, -1, ValueError), (10, "sums", TypeError),
    (10, 12345, TypeError), (10, bytes(4), ValueError), (11, 0, ValueError),
    (4, 6, ValueError), (5, 1, ValueError), (6, 6, ValueError), (5, 9, ValueError), (1, 4, ValueError),
    (2, 4, ValueError),
])
def test_arguments_are_checked_before_the_file_is_opened(position, value, error):
    # Every argument is checked first: a bad one is reported even for a path that does not exist.
    arguments = list(_GOOD)
    arguments[position] = value
    for kernel in (_kernels.read_page, _native.read_page):
        with pytest.raises(error):
            kernel(*arguments)
        with pytest.raises(FileNotFoundError):
            kernel(*_GOOD)


@pytest.mark.parametrize("arguments", [
    ("/no/such/\0file", 0, 8, 8, 1, 5, 2, 4, 0, 0, None, 4),  # a NUL, found as os.open finds it
    ("/no/such/file", 3, 5, 8, 3, 5, 4, 4, 0, 0, bytes(8), 2),  # checksums, and a window not at a chunk
    ("/no/such/file", 0, 3, 8, 1, 3, 2, 4, 0, 0, bytes(8), 4),  # a window that ends inside a chunk
])
def test_a_window_that_cannot_be_verified_is_a_value_error(arguments):
    for kernel in (_kernels.read_page, _native.read_page):
        with pytest.raises(ValueError):
            kernel(*arguments)
    if arguments[10] is not None:  # the same window without checksums is read (here: a missing file)
        for kernel in (_kernels.read_page, _native.read_page):
            with pytest.raises(FileNotFoundError):
                kernel(*arguments[:10], None, arguments[11])


@pytest.mark.parametrize("arguments", [
    # Found by a red-team pass: numbers near the Py_ssize_t maximum made the compiled checks
    # overflow (4 * chunks wrapped negative and read past the checksums; base + length and
    # high + chunk - 1 wrapped), where the twin compares exactly.
    ("/no/such/file", 2**61, 16, 2**61 + 16, 2**61, 2**61 + 16, 2**61, 10, 0, 0, b"", 1),
    ("/no/such/file", 2**62, 16, 120, 2**62, 2**62 + 16, 2**62, 10, 0, 0, bytes(64), 1),
    ("/no/such/file", 0, 2**62 + 2, 2**63 - 1, 0, 2**62 + 2, 0, 10, 0, 0, bytes(8), 2**62 + 1),
])
def test_numbers_near_the_maximum_are_checked_exactly(arguments):
    for kernel in (_kernels.read_page, _native.read_page):
        with pytest.raises(ValueError):
            kernel(*arguments)


def test_a_window_past_the_maximum_and_a_size_too_large_to_hold_are_mismatches(tmp_path):
    path = tmp_path / "payload.txt"
    path.write_bytes(b"x" * 120)
    for kernel in (_kernels.read_page, _native.read_page):
        # base + length past the maximum: a window read as the twin reads it (nothing there).
        assert _page(kernel, str(path), 2**62, 2**62, 120, 2**62, 2**62 + 1, 2**62, 10, 0, 0, None, 1)[1] is None
        # A record that claims a size no buffer holds: the file has not that size, so a
        # mismatch, not a MemoryError (the compiled kernel sized its buffer from the claim).
        assert _page(kernel, str(path), 0, 2**50, 2**50, 0, 10, 0, 10, 0, 0, None, 1)[1] is None
        assert _page(kernel, str(path), 0, 2**50, 2**50, 0, 10, 0, 10, 0, 0, bytes(4), 2**50)[1] is None


def test_a_path_that_cannot_be_encoded_releases_the_checksums():
    # The compiled kernel took the checksums' buffer before encoding the path, and kept it
    # (and a reference) when that failed: a bytearray stayed locked against resizing.
    import gc
    import sys

    locked, held = bytearray(8), bytes(8)
    before = sys.getrefcount(held)
    for kernel in (_kernels.read_page, _native.read_page):
        for checksums in (locked, held):
            for _ in range(20):
                with pytest.raises(UnicodeEncodeError):
                    kernel("/tmp/\ud800", 0, 4, 4, 0, 4, 0, 10, 0, 0, checksums, 4)
    del checksums
    gc.collect()  # the last traceback's frames (the twin's hold its arguments) are gone
    locked.append(0)  # BufferError if a view were still exported
    assert sys.getrefcount(held) == before
