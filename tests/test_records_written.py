"""``parse_record``'s fast path for the records overspill writes, against its
general path (JSON parsed by json's scanner, then every field checked).

The fast path accepts a record only when it is byte for byte ``record_json``
of the fields it read; these tests hold it to giving exactly what the general
path gives (the same record, or the same error), for records of every shape
and for records damaged one byte at a time.
"""

from __future__ import annotations

import pickle

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from overspill import ResourceNotFoundError
from overspill._owner import Owner
from overspill.records import (Record, Resource, _make_record, _parse_json, _written_record, new_id, parse_record,
                               record_json, uri_for)

_ID = new_id()
# Printable ASCII (written as it is), and what JSON must escape or may not hold raw.
_plain_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E, exclude_characters="\"\\\\"), max_size=12)
_any_text = st.one_of(_plain_text, st.text(max_size=6), st.sampled_from(['"', "\\", "\x00", "\x7f", "é", "\n", "a\"b"]))


@st.composite
def records(draw, text=_any_text) -> Record:
    chunk = draw(st.sampled_from([1, 7, 16 * 1024, 64 * 1024, 256 * 1024]))
    size = draw(st.sampled_from([0, 1, chunk - 1 or 1, chunk, chunk + 1, 5 * chunk + 3]))
    count = -(-size // chunk)
    checksums = draw(st.binary(min_size=4 * count, max_size=4 * count))
    stored = size
    capture = draw(st.one_of(st.none(), st.integers(stored, stored + 10**12).map(lambda total: (total, stored))))
    name = draw(st.one_of(st.none(), text))
    lines = draw(st.one_of(st.none(), st.integers(0, 10**15)))
    created = draw(st.integers(0, 10**17))
    return Record(Resource(uri_for(_ID), draw(text), size, name), draw(text), draw(text), created, checksums, chunk,
                  capture, lines)


def outcome(parse, data: bytes, resource_id: str = _ID) -> object:
    try:
        return parse(data, resource_id)
    except ResourceNotFoundError as error:
        return str(error)


@given(records(text=_plain_text))
def test_every_record_overspill_writes_takes_the_fast_path(record):
    data = record_json(record)
    assert _written_record(data, _ID) == record == _parse_json(data, _ID)
    assert type(_written_record(data, _ID)) is Record and type(record.resource) is Resource


@given(records())
def test_any_record_parses_as_the_general_path_parses_it(record):
    data = record_json(record)
    fast = _written_record(data, _ID)
    assert fast is None or fast == _parse_json(data, _ID)
    assert parse_record(data, _ID) == _parse_json(data, _ID) == record


_DAMAGE = st.sampled_from(list(b'0123456789af{}[],:"\\ -+.eEA\x00\x1f\x7f\x80') + [0xC3, 0xFF])


@given(records(), st.data())
@example(Record(Resource(uri_for(_ID), "text/plain", 20, None), "s", "c", 1, bytes(4), 16 * 1024), None)
def test_a_damaged_record_parses_as_the_general_path_parses_it(record, data):
    raw = bytearray(record_json(record))
    if data is not None:
        for _ in range(data.draw(st.integers(1, 3))):
            where = data.draw(st.integers(0, len(raw)))
            how = data.draw(st.sampled_from(["replace", "insert", "delete"]))
            byte = data.draw(_DAMAGE)
            if how == "insert":
                raw[where:where] = bytes([byte])
            elif where < len(raw):
                raw[where:where + 1] = b"" if how == "delete" else bytes([byte])
    damaged = bytes(raw)
    fast = _written_record(damaged, _ID)
    general = outcome(_parse_json, damaged)
    assert fast is None or fast == general
    assert outcome(parse_record, damaged) == general


@pytest.mark.parametrize("change", [
    (b'"size":20', b'"size":020'), (b'"size":20', b'"size":-20'), (b'"size":20', b'"size":20.0'),
    (b'"size":20', b'"size":2e1'), (b'"created":1', b'"created":-1'), (b'"created":1', b'"created":1.5'),
    (b'"created":1', b'"created":' + b"9" * 400), (b'"chunk":16384}', b'"chunk":16385}'),
    (b'"values":"00000000"', b'"values":"0000000A"'), (b'"values":"00000000"', b'"values":"0000 000"'),
    (b'"sessionID":"s"', b'"sessionID":"\\u0073"'), (b'"sessionID":"s"', b'"sessionID":"s\x01"'),
    (b'"sessionID":"s"', b'"sessionID":"s\x7f"'), (b'"version":1', b'"version":1.0'), (b'"version":1', b'"version":true'),
    (b'"mime":"text/plain"', b'"mime":"text/plain","name":null'), (b'{', b' {'), (b'}', b'} '),
    (b'"created":1', b'"created":1,"created":2'), (b'"created":1', b'"created":1,"state":"exited"'),
])
def test_records_not_exactly_as_written_take_the_general_path(change):
    record = Record(Resource(uri_for(_ID), "text/plain", 20, None), "s", "c", 1, bytes(4), 16 * 1024)
    data = record_json(record)
    old, new = change
    assert old in data
    damaged = data.replace(old, new, 1)
    assert _written_record(damaged, _ID) is None
    assert outcome(parse_record, damaged) == outcome(_parse_json, damaged)


@pytest.mark.parametrize("resource_id", [_ID[:-1] + '"', _ID[:-1] + "\\", _ID[:-1] + "\x01", _ID[:-1] + "é"])
def test_an_id_that_json_would_escape_takes_the_general_path(resource_id):
    record = Record(Resource(uri_for(resource_id), "text/plain", 1, None), "s", "c", 1, bytes(4), 16 * 1024)
    data = record_json(record)
    assert _written_record(data, resource_id) is None
    assert outcome(parse_record, data, resource_id) == outcome(_parse_json, data, resource_id)


def test_background_records_take_the_general_path():
    owner = Owner("host", 1, 2, "boot")
    record = Record(Resource(uri_for(_ID), "text/plain", 20, None), "s", "c", 1, bytes(4), 16 * 1024, None, 3,
                    "exited", owner, (5, 6), 0)
    assert _written_record(record_json(record), _ID) is None
    assert parse_record(record_json(record), _ID) == record


def test_made_records_are_ordinary_frozen_records():
    resource = Resource(uri_for(_ID), "text/plain", 1, None)
    made = _make_record(resource, "s", "c", 1, bytes(4), 16 * 1024, None, None, None, None, None, None)
    assert type(made) is Record and made == Record(resource, "s", "c", 1, bytes(4), 16 * 1024)
    assert hash(made) == hash(Record(resource, "s", "c", 1, bytes(4), 16 * 1024))
    assert pickle.loads(pickle.dumps(made)) == made
    with pytest.raises(AttributeError):
        made.lines = 3  # type: ignore[misc]


@given(records(), st.data())
def test_the_kernel_gives_what_its_twin_gives(compiled, record, data):
    from overspill import _native

    raw = bytearray(record_json(record))
    for _ in range(data.draw(st.integers(0, 2))):
        where = data.draw(st.integers(0, len(raw)))
        raw[where:where + data.draw(st.integers(0, 1))] = bytes([data.draw(_DAMAGE)])
    resource_id = data.draw(st.sampled_from([_ID, _ID[:-1] + '"', _ID[:-1] + "\x01", _ID + "é", ""]))
    assert compiled.record_fields(bytes(raw), resource_id) == _native.record_fields(bytes(raw), resource_id)


@pytest.mark.parametrize("level", [0, 1, 3])
def test_every_checksum_digit_is_read_by_each_instruction_set(compiled, level):
    # The checksums' hex digits are scanned and decoded 16 at a time (SSE2) or
    # one by one (portable): each path, on runs that end at every position of a
    # 16-digit step, with a digit replaced by each byte next to a digit range.
    from overspill import _native

    resource = Resource(uri_for(_ID), "text/plain", 9 * 7, None)
    record = Record(resource, "s", "c", 1, bytes(range(7, 7 + 4 * 9)), 7, None, 3)
    raw = record_json(record)
    start = raw.index(b'"values":"') + len(b'"values":"')
    previous = compiled._set_simd_cap(level)
    try:
        assert compiled.record_fields(raw, _ID) == _native.record_fields(raw, _ID) is not None
        for where in range(start, start + 8 * 9):
            for byte in b"/0:9@`afgAF":
                damaged = raw[:where] + bytes([byte]) + raw[where + 1:]
                assert compiled.record_fields(damaged, _ID) == _native.record_fields(damaged, _ID)
    finally:
        compiled._set_simd_cap(previous)


@pytest.mark.parametrize("arguments", [(bytearray(b"{}"), _ID), (memoryview(b"{}"), _ID), ("{}", _ID), (b"{}", None),
                                       (b"{}", b"id")])
def test_the_kernel_takes_bytes_and_a_str_only(compiled, arguments):
    from overspill import _native

    for kernel in (compiled.record_fields, _native.record_fields):
        with pytest.raises(TypeError):
            kernel(*arguments)


def test_a_record_that_grew_after_its_fstat_is_read_to_its_end(tmp_path, monkeypatch):
    # read_regular reads the fstat size plus one byte: one byte more than the
    # fstat said shows a file that grew, and open_record reads on from there
    # (pread keeps no position: the rest is read at the offsets it reached).
    from overspill import _kernels
    from overspill.records import open_record, record_json
    import os

    from overspill import ToolOutputStore

    with ToolOutputStore(tmp_path / "data", durable=False) as store:
        written = store.write("s", "c", "line\n" * 30000)
        record = store.status("s", written.uri)
    resource_id = record.id
    path = tmp_path / f"{resource_id}.json"
    path.write_bytes(record_json(record) + b" " * (3 << 20))  # past one 1 MiB pread of the rest
    real = _kernels.read_regular

    def seen_smaller(path, offset, length, most):
        fd, identity, data = real(path, offset, length, most)
        return fd, identity[:3] + (10,) + identity[4:], data[:11]  # as if it had 10 bytes at its fstat

    monkeypatch.setattr(_kernels, "read_regular", seen_smaller)
    parsed, identity, fd = open_record(str(path), resource_id)
    os.close(fd)
    assert parsed == record and identity[3] == 10
