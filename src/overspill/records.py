"""Resource ids, ``tool-output://`` URIs and the ``{id}.json`` commit record.

The record is the one KiloCode and opencode write (``version`` 1, ``id``,
``uri``, ``sessionID``, ``toolCallID``, ``mime``, optional ``name``, ``size``,
``created`` in ms) plus overspill's ``checksums`` of the payload and, when the
output was larger than the stored copy, ``capture`` (``{"total": T, "stored":
S}``: the payload holds the first S of the T bytes the output had), which those
tools ignore.  Records without checksums (written by them) stay readable.
"""

from __future__ import annotations

import errno
import math
import os
import time
from _thread import allocate_lock  # threading's Lock, without importing threading (start-up)

from . import _files, _kernels
from ._arguments import MAX_METADATA_BYTES  # re-exported: a record's bound on each caller string
from ._frozen import frozen, maker, replace
from ._json_load import loads
from ._owner import Owner
from .errors import InvalidResourceError, OverspillError, ResourceNotFoundError, StorageError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and pathlib cost start-up; annotations are never evaluated
    from pathlib import Path
    from typing import Any, Optional, Union

__all__ = [
    "BACKGROUND_STATES",
    "CHECKSUM_CHUNK",
    "ID_LENGTH",
    "LEGACY_CHECKSUM_CHUNK",
    "MAX_METADATA_BYTES",
    "MAX_PAYLOAD_BYTES",
    "MAX_RECORD_BYTES",
    "SCHEME",
    "Record",
    "Resource",
    "is_resource_id",
    "load_record",
    "new_id",
    "open_record",
    "parse_record",
    "parse_uri",
    "read_record",
    "unreadable",
    "record_json",
    "record_size",
    "uri_for",
]

SCHEME = "tool-output://"
#: States of a background command's output, as records and tools name them.
BACKGROUND_STATES = ("running", "exited", "lost")
ID_LENGTH = 26
#: Bytes covered by each CRC-32 of a new payload: every page read verifies the
#: chunks under it, every time, so they are kept near a page's size (a 50 KB
#: page verifies about 66 KB of 16 KiB chunks, where it did 114 KB of 64 KiB
#: ones).  Records name their chunk: those of 64 KiB (and older) still read.
CHECKSUM_CHUNK = 16 * 1024
#: The chunk of records that do not name one (written before ``chunk`` existed).
LEGACY_CHECKSUM_CHUNK = 256 * 1024
#: The largest payload a record is written for: ``tool_output.max_stored_bytes``
#: (which caps every stored copy) is refused above it.  Its checksums take
#: 8 hex digits per 16 KiB chunk, 32 MiB, half of ``MAX_RECORD_BYTES``.
MAX_PAYLOAD_BYTES = 64 * 1024**3
# Larger records are refused unread.  Every record written fits: the checksums
# of a MAX_PAYLOAD_BYTES payload and four strings of MAX_METADATA_BYTES (each
# at most six times that once escaped) are far below it.
MAX_RECORD_BYTES = 64 * 1024 * 1024

_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
# An id is 12 of [0-9a-f] then 14 of [0-9A-Za-z], ASCII only (checked by
# hand: ``re`` is not imported by ``import overspill``).
_TIME_DIGITS = frozenset("0123456789abcdef")
_ID_DIGITS = frozenset(_BASE62)


class _IdClock:
    """The 48-bit time part of ids: milliseconds times 16, strictly increasing
    within a process so that ids sort by creation even within a millisecond."""

    def __init__(self) -> None:
        self._lock = allocate_lock()
        self._last = 0

    def next(self) -> int:
        with self._lock:
            self._last = max(time.time_ns() // 1_000_000 * 16, self._last + 1)
            return self._last

    def reset_after_fork(self) -> None:
        # The lock may have been held by a thread that does not exist in the child.
        self._lock = allocate_lock()


_CLOCK = _IdClock()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_CLOCK.reset_after_fork)


# The random part is one draw of 88 bits from os.urandom, read as 14 base62
# digits.  Draws at or above the largest multiple of 62**14 that fits are
# redrawn (about 4 % of them), so every digit string is equally likely.  One
# system call, where ``secrets.choice`` per digit made fourteen; and importing
# ``secrets`` (hmac, hashlib, OpenSSL) cost more than the rest of the store.
_RANDOM_SPACE = 62**14
_RANDOM_LIMIT = (1 << 88) // _RANDOM_SPACE * _RANDOM_SPACE


def _random_base62() -> str:
    value = int.from_bytes(os.urandom(11), "big")
    while value >= _RANDOM_LIMIT:
        value = int.from_bytes(os.urandom(11), "big")
    value %= _RANDOM_SPACE
    digits = []
    for _ in range(14):
        value, digit = divmod(value, 62)
        digits.append(_BASE62[digit])
    return "".join(digits)


def new_id() -> str:
    """A fresh id: 12 lowercase hex digits of time, then 14 base62 from ``os.urandom``.

    The random part (83 bits) comes from the OS, so ids stay unique across
    threads, processes and forks; the time part makes them sort by creation.
    """
    return f"{_CLOCK.next() % (1 << 48):012x}{_random_base62()}"


def is_resource_id(text: str) -> bool:
    return (len(text) == ID_LENGTH and _ID_DIGITS.issuperset(text)
            and _TIME_DIGITS.issuperset(text[:12]))  # type: ignore[arg-type]


def uri_for(resource_id: str) -> str:
    return SCHEME + resource_id


# parse_uri's answers for valid URIs, so that paging through a resource checks
# its URI once (a warm page read is a few microseconds of Python around one
# kernel call).  Exact ``str`` keys only: a subclass could compare equal to a
# different text.  Emptied when full.
_PARSED_URIS: dict[str, str] = {}
_PARSED_URIS_MAX = 4096


def parse_uri(uri: object) -> str:
    """The id named by a ``tool-output://`` URI.

    :raises InvalidResourceError: ``uri`` is not exactly ``tool-output://`` and
        a well-formed id (ASCII only; no path, no trailing characters).
    """
    if type(uri) is str:
        known = _PARSED_URIS.get(uri)
        if known is not None:
            return known
    if not isinstance(uri, str):
        raise InvalidResourceError(f"a resource URI must be a str, not {type(uri).__name__}")
    resource_id = uri[len(SCHEME):]
    if not (uri.startswith(SCHEME) and is_resource_id(resource_id)):
        shown = uri if len(uri) <= 80 else uri[:77] + "..."
        raise InvalidResourceError(
            f"{shown!r} is not a tool-output URI (expected tool-output:// and a {ID_LENGTH}-character id)"
        )
    if type(uri) is str:
        if len(_PARSED_URIS) >= _PARSED_URIS_MAX:
            _PARSED_URIS.clear()
        _PARSED_URIS[uri] = resource_id
    return resource_id


@frozen(defaults={"name": None})
class Resource:
    """A stored output: its URI, MIME type, size in bytes and optional name."""

    __slots__ = ("uri", "mime", "size", "name")
    uri: str
    mime: str
    size: int
    name: Optional[str]

    @property
    def id(self) -> str:
        return self.uri[len(SCHEME) :]


@frozen(defaults={"capture": None, "lines": None, "state": None, "owner": None, "process": None,
                  "exit_code": None})
class Record:
    """A validated ``{id}.json``."""

    __slots__ = ("resource", "session_id", "tool_call_id", "created_ms", "checksums", "checksum_chunk", "capture",
                 "lines", "state", "owner", "process", "exit_code")
    resource: Resource
    session_id: str
    tool_call_id: str
    created_ms: float
    checksums: Optional[bytes]  # big-endian CRC-32 per ``checksum_chunk`` bytes, or None when absent
    checksum_chunk: int
    # (total, stored): the output had ``total`` bytes, the payload holds its first
    # ``stored`` (== resource.size); None when the payload is the whole output.
    capture: Optional[tuple[int, int]]
    # Lines of the whole output as ``wc -l`` counts them, plus one for a final
    # line without a newline; None in records that do not say (older, other tools').
    lines: Optional[int]
    # A background command's output: "running" (growing: ``resource.size`` is
    # the sealed, verified prefix), "exited", or "lost" (running, but its owner
    # is gone: never complete); None for every other resource.
    state: Optional[str]
    # The process writing a growing resource (kept after it exited).
    owner: Optional[Owner]
    # The command's process (its pid, which is its process group, and its start time).
    process: Optional[tuple[int, int]]
    # The command's exit code once it exited (negative: the signal that ended it).
    exit_code: Optional[int]

    @property
    def id(self) -> str:
        return self.resource.id

    @property
    def complete(self) -> bool:
        """Whether ``resource.size`` is the output's final size (not a running or lost command's prefix)."""
        return self.state is None or self.state == "exited"


# Records as a cold read makes them: every field, in order (see maker).
_make_resource = maker(Resource)
_make_record = maker(Record)


def record_size(record: Record, chunk: int) -> int:
    """The bytes of ``record_json`` of ``record`` with checksums of every ``chunk``
    bytes of its ``resource.size`` (whatever ``record.checksums`` holds), without
    building the checksums: each takes 8 hex digits."""
    count = max(-(-record.resource.size // chunk), 1)
    return len(record_json(replace(record, checksums=bytes(4), checksum_chunk=chunk))) + 8 * (count - 1)


def record_json(record: Record) -> bytes:
    """The serialized record, keys in the reference store's order."""
    resource = record.resource
    document: dict[str, Any] = {
        "version": 1,
        "id": resource.id,
        "uri": resource.uri,
        "sessionID": record.session_id,
        "toolCallID": record.tool_call_id,
        "mime": resource.mime,
    }
    if resource.name is not None:
        document["name"] = resource.name
    if record.state != "running":
        document["size"] = resource.size  # a running record has no final size yet
    document["created"] = int(record.created_ms)
    if record.checksums is not None:
        document["checksums"] = {
            "algorithm": "crc32",
            "chunk": record.checksum_chunk,
            "values": record.checksums.hex(),
        }
        # Said twice on purpose: readers of the first format look inside
        # ``checksums``; the record's own ``chunk`` is the documented field.
        document["chunk"] = record.checksum_chunk
    if record.capture is not None:
        document["capture"] = {"total": record.capture[0], "stored": record.capture[1]}
    if record.lines is not None:
        document["lines"] = record.lines
    if record.state is not None:
        document["state"] = "running" if record.state == "lost" else record.state
    if record.owner is not None:
        owner = record.owner
        document["owner"] = {"host": owner.host, "pid": owner.pid, "start": owner.start, "boot": owner.boot}
    if record.process is not None:
        document["process"] = {"pid": record.process[0], "start": record.process[1]}
    if record.exit_code is not None:
        document["exitCode"] = record.exit_code
    import json  # here, not at the top: most processes that import overspill never touch a record

    return json.dumps(document, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


# Errors that mean the file is not there as a resource's file (gone, a
# symlink, not a regular file); any other failure to open or read it (no
# descriptors left, no permission, an I/O error) is the storage's, not the
# resource's: reporting it as "not found" would hide it, and let a listing or
# a sweep treat a good resource as missing.
_ABSENT = frozenset({0, errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.ENXIO, errno.ENODEV})


def unreadable(uri: str, what: str, error: OSError) -> OverspillError:
    """The error for a resource file that could not be opened, read or mapped.

    :param uri: the resource's URI, for the message.
    :param what: what is wrong when the file is absent ("has no readable payload").
    :param error: the ``OSError`` raised.
    :returns: ``ResourceNotFoundError`` when the file is missing or not a
        regular file, else ``StorageError`` with the error's errno.
    """
    if error.errno is None or error.errno in _ABSENT:
        return ResourceNotFoundError(f"resource {uri} {what}")
    return StorageError(error.errno, f"cannot read resource {uri}: {error.strerror or error}")


def _invalid(resource_id: str, why: str) -> ResourceNotFoundError:
    return ResourceNotFoundError(f"resource {resource_id} has an invalid record: {why}")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _checksums(document: dict[str, Any], resource_id: str, size: int) -> tuple[Optional[bytes], int]:
    if "checksums" not in document:
        return None, LEGACY_CHECKSUM_CHUNK
    entry = document["checksums"]
    if not isinstance(entry, dict) or entry.get("algorithm") != "crc32":
        raise _invalid(resource_id, "unknown checksums")
    values = entry.get("values")
    # The chunk size: the record's ``chunk``, else the one inside ``checksums``,
    # else 256 KiB (records written before either existed); two must agree.
    named = [value for value in (document.get("chunk"), entry.get("chunk")) if value is not None]
    chunk = named[0] if named else LEGACY_CHECKSUM_CHUNK
    if any(value != chunk for value in named):
        raise _invalid(resource_id, "two different checksum chunk sizes")
    if not _is_int(chunk) or chunk < 1 or not isinstance(values, str):
        raise _invalid(resource_id, "malformed checksums")
    if len(values) != 8 * -(-size // chunk):
        raise _invalid(resource_id, "checksums do not cover the size")
    checksums = _hex_checksums(values)
    if checksums is None:
        raise _invalid(resource_id, "malformed checksums")
    return checksums, chunk


def _capture(document: dict[str, Any], resource_id: str, size: int) -> Optional[tuple[int, int]]:
    if "capture" not in document:
        return None
    entry = document["capture"]
    if not isinstance(entry, dict):
        raise _invalid(resource_id, "malformed capture")
    total, stored = entry.get("total"), entry.get("stored")
    if not (_is_int(total) and _is_int(stored)) or stored != size or total < stored:
        raise _invalid(resource_id, "capture does not match the size")
    return total, stored


def _finite(number: float) -> bool:
    # An int too large for a float (a 401-digit ``created``) is no time at all:
    # math.isfinite would raise OverflowError out of every read and listing.
    try:
        return math.isfinite(number)
    except OverflowError:
        return False


def _hex_checksums(values: str) -> Optional[bytes]:
    """The CRC-32s that ``values`` spells: lowercase hex digits only, else None."""
    # fromhex is a C loop (a regex over a 1 GiB payload's 128 KB of hex was
    # most of a cold read); it allows upper case and spaces, which we do not.
    try:
        checksums = bytes.fromhex(values)
    except ValueError:
        return None
    if 2 * len(checksums) != len(values) or values != values.lower():
        return None
    return checksums


def _written_record(data: bytes, resource_id: str) -> Optional[Record]:
    """The record when ``data`` is exactly what ``record_json`` writes for a
    finished output whose strings need no escape (every record overspill
    writes, but a background command's); None for anything else, which
    ``parse_record``'s general path decides.

    A cold read parsed its record with the JSON scanner, then checked each
    field in Python: most of the read.  The kernel ``record_fields`` reads
    this one shape in one pass, with the checks ``parse_record`` makes: the
    general path would return an equal record.
    """
    fields = _kernels.record_fields(data, resource_id)
    if fields is None:
        return None
    session, call, mime, name, size, created, checksums, chunk, capture, lines = fields
    return _make_record(_make_resource(SCHEME + resource_id, mime, size, name), session, call, created, checksums,
                        chunk, capture, lines, None, None, None, None)


def parse_record(data: bytes, resource_id: str) -> Record:
    """Validate a ``{id}.json`` the way the reference store does, and more.

    :raises ResourceNotFoundError: the record is not UTF-8 JSON of the expected
        shape (wrong version, types or id, negative or non-integer size, a
        non-finite ``created``, malformed checksums, nesting too deep).
    """
    written = _written_record(data, resource_id) if type(data) is bytes and type(resource_id) is str else None
    return written if written is not None else _parse_json(data, resource_id)


def _parse_json(data: bytes, resource_id: str) -> Record:
    """``parse_record`` of any record: JSON parsed, then each field checked."""
    try:
        document = loads(data)
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise _invalid(resource_id, "not JSON") from None
    if not isinstance(document, dict):
        raise _invalid(resource_id, "not an object")
    version, size, created = document.get("version"), document.get("size"), document.get("created")
    if not _is_int(version) or version != 1:
        raise _invalid(resource_id, "unsupported version")
    if document.get("id") != resource_id or document.get("uri") != uri_for(resource_id):
        raise _invalid(resource_id, "id or uri does not match the file name")
    for key in ("sessionID", "toolCallID", "mime"):
        if not isinstance(document.get(key), str):
            raise _invalid(resource_id, f"{key} is not a string")
    name = document.get("name")
    if name is not None and not isinstance(name, str):
        raise _invalid(resource_id, "name is not a string")
    state = document.get("state")
    if state is not None and state not in BACKGROUND_STATES[:2]:
        raise _invalid(resource_id, "unknown state")
    if state == "running":
        if "size" in document or "checksums" in document:
            raise _invalid(resource_id, "a running record has a size")
        size = 0  # the backend gives the sealed prefix's size
    if not _is_int(size) or size < 0:
        raise _invalid(resource_id, "size is not a non-negative integer")
    if isinstance(created, bool) or not isinstance(created, (int, float)) or not _finite(created):
        raise _invalid(resource_id, "created is not a finite number")
    checksums, chunk = _checksums(document, resource_id, size)
    capture = _capture(document, resource_id, size)
    lines = document.get("lines")
    if lines is not None and (not _is_int(lines) or lines < 0):
        raise _invalid(resource_id, "lines is not a non-negative integer")
    owner, process, exit_code = _background(document, resource_id, state)
    resource = Resource(uri_for(resource_id), document["mime"], size, name)
    return Record(resource, document["sessionID"], document["toolCallID"], created, checksums, chunk, capture,
                  lines, state, owner, process, exit_code)


def _background(document: dict[str, Any], resource_id: str,
                state: Optional[str]) -> tuple[Optional[Owner], Optional[tuple[int, int]], Optional[int]]:
    """A background command's owner, process and exit code, checked."""
    if state is None:
        if any(key in document for key in ("owner", "process", "exitCode")):
            raise _invalid(resource_id, "owner, process or exitCode without a state")
        return None, None, None
    entry = document.get("owner")
    if not isinstance(entry, dict) or not isinstance(entry.get("host"), str) \
            or not isinstance(entry.get("boot"), str) \
            or not all(_is_int(entry.get(key)) and entry[key] >= 0 for key in ("pid", "start")):
        raise _invalid(resource_id, "malformed owner")
    owner = Owner(entry["host"], entry["pid"], entry["start"], entry["boot"])
    process = None
    if "process" in document:
        entry = document["process"]
        if not isinstance(entry, dict) or not all(_is_int(entry.get(key)) and entry[key] >= 0
                                                  for key in ("pid", "start")):
            raise _invalid(resource_id, "malformed process")
        process = (entry["pid"], entry["start"])
    exit_code = document.get("exitCode")
    if exit_code is not None and not _is_int(exit_code):
        raise _invalid(resource_id, "exitCode is not an integer")
    if (state == "running") != (exit_code is None):
        raise _invalid(resource_id, "an exit code belongs to an exited command only")
    return owner, process, exit_code


def read_record(path: Union[str, Path], resource_id: str) -> tuple[Record, tuple[int, ...]]:
    """Read and validate the record file at ``path`` (never through a symlink),
    with the identity of the file it was read from (``_kernels.read_regular``).

    :raises ResourceNotFoundError: missing, not a regular file, oversized,
        unreadable or invalid.
    """
    record, identity, fd = open_record(path, resource_id)
    os.close(fd)
    return record, identity


def open_record(path: Union[str, Path], resource_id: str) -> tuple[Record, tuple[int, ...], int]:
    """``read_record``, with the file left open: ``(record, identity, fd)``, for
    a caller that checks it again later with ``fstat`` (it closes ``fd``).

    :raises ResourceNotFoundError: as ``read_record`` (nothing is left open).
    """
    try:
        # Opened, identified and read in one kernel call: a cold read's first system calls.
        fd, identity, data = _kernels.read_regular(os.fspath(path), 0, MAX_RECORD_BYTES + 1, MAX_RECORD_BYTES)
    except FileNotFoundError:
        raise ResourceNotFoundError(f"no resource {uri_for(resource_id)}") from None
    except OSError as error:
        raise unreadable(uri_for(resource_id), "has no readable record", error) from None
    try:
        if data is None:
            raise ResourceNotFoundError(f"resource {uri_for(resource_id)} has an oversized record")
        if len(data) > identity[3]:  # it grew since its fstat: the rest too
            parts, at = [data], len(data)
            while more := os.pread(fd, 1 << 20, at):
                parts.append(more)
                at += len(more)
            data = b"".join(parts)
        # parse_record's two paths, called directly (data is bytes; the caller's id a str).
        record = _written_record(data, resource_id) if type(resource_id) is str else None
        return (record if record is not None else _parse_json(data, resource_id)), identity, fd
    except OSError as error:
        os.close(fd)
        raise unreadable(uri_for(resource_id), "has no readable record", error) from None
    except BaseException:
        os.close(fd)
        raise


def load_record(path: Union[str, Path], resource_id: str) -> Record:
    """Read and validate the record file at ``path`` (never through a symlink).

    :raises ResourceNotFoundError: missing, not a regular file, oversized,
        unreadable or invalid.
    """
    return read_record(path, resource_id)[0]
