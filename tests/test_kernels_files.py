"""file_unchanged (issue 21): an open file checked against the identity it
was known by, without a stat by path, in both implementations."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from overspill import _kernels, _native
from overspill.backends._local_maps import file_identity


@pytest.fixture
def opened(tmp_path):
    path = tmp_path / "payload.txt"
    path.write_bytes(b"stored bytes\n")
    fd = os.open(path, os.O_RDONLY)
    try:
        yield path, fd, file_identity(os.fstat(fd))
    finally:
        os.close(fd)


def test_an_untouched_file_is_unchanged(opened):
    _, fd, identity = opened
    assert _kernels.file_unchanged(fd, identity) is True


@pytest.mark.parametrize("change", [
    pytest.param(lambda path: path.open("ab").write(b"more"), id="appended"),
    pytest.param(lambda path: os.truncate(path, 3), id="truncated"),
    pytest.param(lambda path: path.chmod(0o600), id="mode"),
    pytest.param(lambda path: os.utime(path, (1, 1)), id="times"),
    pytest.param(lambda path: os.link(path, path.with_name("second-name")), id="new-link"),
    pytest.param(lambda path: path.unlink(), id="unlinked"),
    pytest.param(lambda path: (path.with_name("new").write_bytes(b"stored bytes\n"),
                               os.replace(path.with_name("new"), path)), id="renamed-over"),
])
def test_a_changed_or_unnamed_file_is_not(opened, change):
    path, fd, identity = opened
    change(path)
    assert _kernels.file_unchanged(fd, identity) is False


@pytest.mark.parametrize("position", range(5))
def test_each_field_of_the_identity_counts(opened, position):
    _, fd, identity = opened
    other = identity[:position] + (identity[position] + 1,) + identity[position + 1 :]
    assert _kernels.file_unchanged(fd, other) is False


def test_a_descriptor_not_open_is_not_known(opened, tmp_path):
    _, _, identity = opened
    closed = os.open(tmp_path, os.O_RDONLY)
    os.close(closed)
    assert _kernels.file_unchanged(closed, identity) is False
    assert _kernels.file_unchanged(2**40, identity) is False


@pytest.mark.parametrize(("fd", "identity", "error"), [
    ("3", (1, 2, 3, 4, 5), TypeError),
    (True, (1, 2, 3, 4, 5), TypeError),
    (3.0, (1, 2, 3, 4, 5), TypeError),
    (-1, (1, 2, 3, 4, 5), ValueError),
    (0, [1, 2, 3, 4, 5], TypeError),
    (0, (1, 2, 3, 4), TypeError),
    (0, (1, 2, 3, 4, 5, 6), TypeError),
    (0, (1, 2, 3, 4, True), TypeError),
    (0, (1, 2, "3", 4, 5), TypeError),
    (0, None, TypeError),
])
def test_bad_arguments_are_typed_errors(fd, identity, error):
    with pytest.raises(error):
        _kernels.file_unchanged(fd, identity)


@given(deltas=st.tuples(*[st.sampled_from([0, 0, 0, 1, -1, 2**63, -(2**70)])] * 5),
       change=st.sampled_from(["none", "append", "chmod"]))
def test_twins_agree(compiled, tmp_path_factory, deltas, change):
    path = tmp_path_factory.mktemp("agree") / "file"
    path.write_bytes(b"x")
    fd = os.open(path, os.O_RDONLY)
    try:
        identity = tuple(value + delta for value, delta in zip(file_identity(os.fstat(fd)), deltas))
        if change == "append":
            path.open("ab").write(b"y")
        elif change == "chmod":
            path.chmod(0o600)
        expected = _native.file_unchanged(fd, identity)
        assert compiled.file_unchanged(fd, identity) is expected
        assert expected is (deltas == (0,) * 5 and change == "none")
    finally:
        os.close(fd)
