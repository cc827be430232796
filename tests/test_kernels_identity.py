"""regular_identity (issue 21): the identity of an open regular file without an
``os.stat_result``, the same in both implementations, as ``file_identity`` of its ``fstat``."""

from __future__ import annotations

import os

import pytest

from overspill import _kernels, _native
from overspill.backends._local_maps import file_identity


def test_a_regular_file_has_the_identity_its_fstat_gives(tmp_path):
    path = tmp_path / "payload.txt"
    path.write_bytes(b"stored bytes\n")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert _kernels.regular_identity(fd) == file_identity(os.fstat(fd)) == _native.regular_identity(fd)
        os.utime(path, ns=(1, -1_500_000_001))  # a time before 1970, not a whole second
        assert _kernels.regular_identity(fd) == file_identity(os.fstat(fd))
        os.truncate(path, 3)
        assert _kernels.regular_identity(fd)[3] == 3
    finally:
        os.close(fd)


def test_anything_else_has_none(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    for path, flags in ((tmp_path, os.O_RDONLY), (tmp_path / "fifo", os.O_RDONLY | os.O_NONBLOCK)):
        fd = os.open(path, flags)
        try:
            assert _kernels.regular_identity(fd) is None
        finally:
            os.close(fd)


def test_a_descriptor_not_open_is_an_os_error(tmp_path):
    closed = os.open(tmp_path, os.O_RDONLY)
    os.close(closed)
    with pytest.raises(OSError) as raised:
        _kernels.regular_identity(closed)
    assert raised.value.errno == 9  # EBADF, as os.fstat says
    with pytest.raises(OverflowError):
        _kernels.regular_identity(2**40)


@pytest.mark.parametrize(("fd", "error"), [(-1, ValueError), (True, TypeError), (1.0, TypeError), ("3", TypeError)])
def test_arguments_are_checked_as_the_twin_checks_them(fd, error):
    with pytest.raises(error):
        _kernels.regular_identity(fd)
