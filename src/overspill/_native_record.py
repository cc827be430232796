"""Pure-Python twin of the record kernel ``record_fields``: the fields of a
``{id}.json`` written exactly as ``overspill.records.record_json`` writes a
finished output's record (``tests/test_records_written.py`` holds the two
together), for the record a cold read parses."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up; annotations are never evaluated
    from typing import Optional

from ._buffers import plain_bytes, plain_str

__all__ = ["RECORD_NUMBER_LIMIT", "record_fields"]

#: The numbers of a record the kernel reads are whole, not negative and below this (18 digits).
RECORD_NUMBER_LIMIT = 10**18
_SCHEME = "tool-output://"


def record_fields(data: bytes, resource_id: str, /) -> Optional[tuple[object, ...]]:
    """``(session, call, mime, name, size, created, checksums, chunk, capture,
    lines)`` when ``data`` is exactly the compact JSON ``record_json`` writes
    for a finished output of ``resource_id``: keys in its order, ``checksums``
    (``crc32``, lowercase hex, the chunk said twice), optional ``name``,
    ``capture`` and ``lines``, every string printable ASCII without a quote or
    backslash, every number whole, not negative and below
    ``RECORD_NUMBER_LIMIT``, the checksums covering ``size``, ``capture``'s
    stored part ``size``.  None for anything else.  ``name``, ``capture``
    (``(total, stored)``) and ``lines`` are None when absent.

    :raises TypeError: ``data`` is not bytes or ``resource_id`` not a str.
    """
    if not isinstance(data, bytes):
        raise TypeError(f"data must be bytes, not {type(data).__name__}")
    if not isinstance(resource_id, str):
        raise TypeError(f"resource_id must be a str, not {type(resource_id).__name__}")
    data, resource_id = plain_bytes(data), plain_str(resource_id)  # their own values, as the compiled twin reads
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        return None
    # No escape; an id that JSON would write as it is (it is written back below).
    if "\\" in text or '"' in resource_id or not resource_id.isprintable():
        return None
    parts = text.split('"')
    # ['{', 'version', ':1,', 'id', ':', ID, ',', 'uri', ':', URI, ',', 'sessionID', ':', SESSION, ',',
    #  'toolCallID', ':', CALL, ',', 'mime', ':', MIME, ',', ('name', ':', NAME, ',',) 'size', ':N,', 'created',
    #  ':N,', 'checksums', ':{', 'algorithm', ':', 'crc32', ',', 'chunk', ':C,', 'values', ':', HEX, '},',
    #  'chunk', ':C,' ('capture', ':{', 'total', ':T,', 'stored', ':S},',) 'lines', ':L}'], each optional.
    # Read loosely on purpose: what is read wrongly here is not written back the same.
    try:
        name = parts[25] if parts[23] == "name" else None
        at = 23 if name is None else 27
        size, created, chunk = int(parts[at + 1][1:-1]), int(parts[at + 3][1:-1]), int(parts[at + 11][1:-1])
        checksums = bytes.fromhex(parts[at + 14])
        at += 18
        capture = None
        if len(parts) > at and parts[at] == "capture":
            capture = (int(parts[at + 3][1:-1]), int(parts[at + 5][1:-2]))
            at += 6
        lines = int(parts[at + 1][1:-1]) if len(parts) > at and parts[at] == "lines" else None
    except (ValueError, IndexError):
        return None
    session, call, mime = parts[13], parts[17], parts[21]
    # JSON allows no control character in a string; written back, one would match.
    if not (session.isprintable() and call.isprintable() and mime.isprintable()
            and (name is None or name.isprintable())):
        return None
    limit = RECORD_NUMBER_LIMIT
    if (not 0 <= created < limit or not 0 <= size < limit or not 1 <= chunk < limit
            or len(checksums) != 4 * -(-size // chunk)
            or (capture is not None and not size == capture[1] <= capture[0] < limit)
            or (lines is not None and not 0 <= lines < limit)):
        return None
    # Written back as record_json writes it (the checksums as lowercase hex, no spaces): the
    # same text means that text is this record's, whatever the split above guessed.
    written = (f'{{"version":1,"id":"{resource_id}","uri":"{_SCHEME}{resource_id}","sessionID":"{session}",'
               f'"toolCallID":"{call}","mime":"{mime}",'
               + ("" if name is None else f'"name":"{name}",')
               + f'"size":{size},"created":{created},"checksums":{{"algorithm":"crc32","chunk":{chunk},'
               f'"values":"{checksums.hex()}"}},"chunk":{chunk}'
               + ("" if capture is None else f',"capture":{{"total":{capture[0]},"stored":{capture[1]}}}')
               + ("" if lines is None else f',"lines":{lines}') + "}")
    if written != text:
        return None
    return session, call, mime, name, size, created, checksums, chunk, capture, lines
