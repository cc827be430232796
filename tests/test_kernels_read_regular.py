"""read_regular (issue 21): a regular file opened (never through a symlink or
blocking on a FIFO), identified and read in one call, the same in both
implementations; the descriptor is the caller's, and nothing stays open on an error."""

from __future__ import annotations

import errno
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overspill import _kernels, _native
from overspill.backends._local_maps import file_identity


def _open_descriptors() -> set[str]:
    return set(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else set()


def _read(path, offset, length, most):
    fd, identity, data = _kernels.read_regular(str(path), offset, length, most)
    try:
        assert identity == file_identity(os.fstat(fd))
        assert os.lseek(fd, 0, os.SEEK_CUR) == 0  # a pread: the position is not moved
        flags = os.get_inheritable(fd), os.get_blocking(fd)
    finally:
        os.close(fd)
    assert flags == (False, False)  # close-on-exec, and opened without blocking
    return identity, data


def test_reads_the_window_and_one_byte_more_only_at_the_end(tmp_path):
    path = tmp_path / "payload.txt"
    path.write_bytes(b"0123456789")
    assert _read(path, 2, 4, 10)[1] == b"2345"
    assert _read(path, 6, 4, 10)[1] == b"6789"  # ends at the end: nothing more to see
    assert _read(path, 7, 4, 10)[1] == b"789"
    assert _read(path, 0, 100, 10)[1] == b"0123456789"
    assert _read(path, 10, 5, 10)[1] == b""
    assert _read(path, 50, 5, 10)[1] == b""
    assert _read(path, 3, 0, 10)[1] == b""
    identity, data = _read(path, 0, 5, 9)  # larger than ``most``: identified, not read
    assert data is None and identity[3] == 10


def test_a_file_that_grew_since_its_fstat_shows_one_byte_more(tmp_path):
    # The read is bounded by the fstat size plus one: a record read whole with
    # length most + 1 sees that it grew (its caller then reads the rest).
    path = tmp_path / "record.json"
    path.write_bytes(b"{}")
    fd, identity, data = _kernels.read_regular(str(path), 0, 1 << 20, 1 << 20)
    os.close(fd)
    assert (identity[3], data) == (2, b"{}")


@settings(max_examples=60, deadline=None)
@given(content=st.binary(max_size=300), offset=st.integers(0, 400), length=st.integers(0, 400),
       most=st.integers(0, 400))
def test_the_implementations_agree(tmp_path_factory, content, offset, length, most):
    path = tmp_path_factory.mktemp("agree") / "file"
    path.write_bytes(content)
    answers = []
    for kernel in (_kernels.read_regular, _native.read_regular):
        fd, identity, data = kernel(str(path), offset, length, most)
        os.close(fd)
        answers.append((identity, data))
    assert answers[0] == answers[1]
    identity, data = answers[0]
    if len(content) > most:
        assert data is None
    else:
        assert data == content[offset:offset + length]


def test_what_is_not_a_regular_file_is_refused_and_nothing_stays_open(tmp_path):
    (tmp_path / "target").write_bytes(b"x")
    os.symlink(tmp_path / "target", tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    before = _open_descriptors()
    with pytest.raises(OSError) as raised:
        _kernels.read_regular(str(tmp_path / "link"), 0, 1, 1)
    assert raised.value.errno == errno.ELOOP
    with pytest.raises(FileNotFoundError) as missing:
        _kernels.read_regular(str(tmp_path / "missing"), 0, 1, 1)
    assert missing.value.filename == str(tmp_path / "missing")
    for name in ("fifo", ""):  # a FIFO does not block the open; a directory is no regular file
        with pytest.raises(OSError) as raised:
            _kernels.read_regular(str(tmp_path / name) if name else str(tmp_path), 0, 1, 1)
        assert type(raised.value) is OSError and raised.value.errno in (0, errno.EISDIR)
    assert _open_descriptors() <= before


@pytest.mark.parametrize(("arguments", "error"), [
    ((b"/tmp", 0, 1, 1), TypeError), ((None, 0, 1, 1), TypeError), (("/tmp", -1, 1, 1), ValueError),
    (("/tmp", 0, -1, 1), ValueError), (("/tmp", 0, 1, -1), ValueError), (("/tmp", True, 1, 1), TypeError),
    (("/tmp", 0, 1.0, 1), TypeError), (("/tmp", 0, 1, "1"), TypeError), (("/tm\0p", 0, 1, 1), ValueError),
])
def test_arguments_are_checked_as_the_twin_checks_them(arguments, error):
    for kernel in (_kernels.read_regular, _native.read_regular):
        with pytest.raises(error):
            kernel(*arguments)


@pytest.mark.skipif(not hasattr(os, "O_NOATIME"), reason="O_NOATIME is Linux's")
def test_reading_writes_no_access_time(tmp_path):
    # A first read of a file written just before would dirty its inode (relatime
    # updates an access time older than the modification): a cold read leaves it.
    path = tmp_path / "payload.txt"
    path.write_bytes(b"stored bytes\n" * 100)
    modified = os.stat(path).st_mtime_ns
    for kernel in (_kernels.read_regular, _native.read_regular):
        os.utime(path, ns=(modified - 10**9, modified))
        fd, identity, data = kernel(str(path), 0, 100, 1 << 20)
        os.close(fd)
        assert data == (b"stored bytes\n" * 100)[:100]
        assert os.stat(path).st_atime_ns == modified - 10**9
