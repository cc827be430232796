"""read_regular (issue 21): a regular file opened (never through a symlink or
blocking on a FIFO), identified and read in one call, the same in both
implementations; the descriptor is the caller's, and nothing stays open on an error."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import tempfile

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


_INTERRUPTING_LIBC = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/types.h>
/* The next `opens` opens of a path holding "interrupted", and the next `reads`
   preads, fail with EINTR (as when a signal arrives), then calls go through. */
static int opens = 0, reads = 0;
void interrupt_next(int open_calls, int pread_calls) { opens = open_calls; reads = pread_calls; }
ssize_t pread64(int fd, void *buffer, size_t count, off_t offset) {
    static ssize_t (*real)(int, void *, size_t, off_t);
    if (!real) real = (ssize_t (*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread64");
    if (reads > 0) { reads--; errno = EINTR; return -1; }
    return real(fd, buffer, count, offset);
}
ssize_t pread(int fd, void *buffer, size_t count, off_t offset) { return pread64(fd, buffer, count, offset); }
int open64(const char *path, int flags, ...) {
    static int (*real)(const char *, int, ...);
    va_list arguments; va_start(arguments, flags); int mode = va_arg(arguments, int); va_end(arguments);
    if (!real) real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open64");
    if (opens > 0 && strstr(path, "interrupted")) { opens--; errno = EINTR; return -1; }
    return real(path, flags, mode);
}
int open(const char *path, int flags, ...) {
    va_list arguments; va_start(arguments, flags); int mode = va_arg(arguments, int); va_end(arguments);
    return open64(path, flags, mode);
}
"""

_INTERRUPTED_READS = """
import ctypes, os, sys
from overspill import _native
try:
    from overspill import _speedups
except ImportError:
    _speedups = None
shim = ctypes.CDLL(sys.argv[1])
for kernel in (_speedups, _native):
    if kernel is None:
        continue
    for opens, reads in ((1, 0), (0, 1), (2, 2)):
        shim.interrupt_next(opens, reads)
        fd, identity, data = kernel.read_regular(sys.argv[2], 2, 5, 100)
        os.close(fd)
        print(kernel.__name__, opens, reads, data.decode())
        shim.interrupt_next(opens, reads)
        fd, identity, found = kernel.read_page(sys.argv[2], 0, 10, 10, 2, 10, 2, 5, 0, 0, None, 1)
        os.close(fd)
        print(kernel.__name__, "page", opens, reads, found[2])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("gcc") is None,
                    reason="interrupts glibc's open and pread through LD_PRELOAD")
def test_an_interrupted_open_or_read_is_retried_as_os_does(tmp_path):
    # PEP 475: os.open and os.pread retry after EINTR; the compiled kernels (read_regular,
    # and read_page, whose pread is made in the open's release of the GIL) do too.
    source = tmp_path / "interrupting.c"
    source.write_text(_INTERRUPTING_LIBC)
    shim = tmp_path / "interrupting.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(shim), str(source), "-ldl"], check=True)
    target = tmp_path / "interrupted.txt"
    target.write_bytes(b"0123456789")
    run = subprocess.run([sys.executable, "-c", _INTERRUPTED_READS, str(shim), str(target)],
                         capture_output=True, text=True, env={**os.environ, "LD_PRELOAD": str(shim)}, timeout=60)
    assert run.returncode == 0, run.stderr
    answers = run.stdout.split("\n")
    assert [line.split()[-1] for line in answers if line] == ["23456"] * (12 if "_speedups" in run.stdout else 6)


def _read_as_another_user(path: str) -> list[str]:
    """What each implementation reads of ``path`` in a child that is not its owner."""
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        os.close(reader)
        try:
            os.setgid(65534)
            os.setuid(65534)
            answers = []
            for kernel in (_kernels.read_regular, _native.read_regular):
                fd, _, data = kernel(path, 0, 5, 100)
                os.close(fd)
                answers.append(data.decode())
        except BaseException as error:
            answers = [repr(error)]
        os.write(writer, "\n".join(answers).encode())
        os._exit(0)
    os.close(writer)
    with os.fdopen(reader) as answer:
        text = answer.read()
    os.waitpid(child, 0)
    return text.split("\n")


@pytest.mark.skipif(not hasattr(os, "O_NOATIME"), reason="O_NOATIME is Linux's")
def test_a_file_of_another_user_is_read_without_o_noatime(tmp_path):
    # O_NOATIME is refused (EPERM) to a reader that does not own the file: the
    # open is made again without it, as any reader's.
    if os.geteuid() == 0:
        shared = tempfile.mkdtemp()  # in /tmp: pytest's own folders are closed to other users
        try:
            os.chmod(shared, 0o755)
            path = os.path.join(shared, "shared.txt")
            with open(path, "wb") as file:
                file.write(b"hello world")
            os.chmod(path, 0o644)
            assert _read_as_another_user(path) == ["hello", "hello"]
        finally:
            shutil.rmtree(shared)
    else:
        owned_by_root = "/etc/passwd"
        if not os.path.exists(owned_by_root) or os.stat(owned_by_root).st_uid == os.geteuid():
            pytest.skip("no readable file of another user")
        for kernel in (_kernels.read_regular, _native.read_regular):
            fd, _, data = kernel(owned_by_root, 0, 5, 1 << 30)
            os.close(fd)
            assert len(data) == 5
