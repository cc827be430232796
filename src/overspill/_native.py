"""Pure-Python kernels: the readable specification of ``overspill._speedups``.

Both modules export the same names with the same positional-only signatures,
return the same results and raise the same exception types for every input;
``overspill._kernels`` picks one of them.  This one leans on fast built-ins
(``bytes.count``, ``str.find``, ``str.encode``) and never loops per character
over unbounded input.

Conventions shared by every kernel:

* A *line* is what ``str.split("\\n")`` yields: ``""`` is one line and a final
  line without ``"\\n"`` counts.
* The *stored form* of a ``str`` is UTF-8 with ``surrogateescape`` (U+DC80 to
  U+DCFF stand for one raw byte each) and every other lone surrogate stored as
  U+FFFD (three bytes).  Bytes-like data is its own stored form.
* A position in bytes is a *boundary* unless a lead byte before it announces a
  sequence that covers it and every byte of that sequence is a continuation
  byte inside the buffer.  This is the ordinary code-point boundary for valid
  UTF-8 and a total, loop-free rule for invalid bytes.
* *Arguments are checked one at a time, in the order of the signature*: each
  alone, its type first (an int is an int and not a bool; a bytes-like
  argument is no ``str`` and a C-contiguous buffer), then its own range (a
  minimum, a maximum, a length), before the next argument is looked at; only
  when every argument has passed alone are the relations between them checked
  (``start <= end <= len(buffer)``, checksums that cover a range, ...).  So,
  of several bad arguments, the first in the signature decides the exception.
* An argument is read by its *own value*: an ``int`` subclass by its int
  value (``int.__index__``, never its ``__int__``, ``__index__`` or
  comparisons), a ``str`` or ``bytes`` subclass by its characters or bytes
  (``_buffers.plain_str``/``plain_bytes``, never its ``count``, ``find``,
  ``__len__``...), as the compiled module reads their storage.

The twin is specified in one module per seam; this module states the
conventions above and gathers the kernels under the names ``_kernels`` binds:

* ``_native_bytes``: ``count_lines``, ``utf8_length``, ``page_bounds`` (the
  boundary rule), ``crc32``, ``verify_chunks``, ``verified_copy`` (a range
  copied, then verified), ``ascii_view``; the line
  finder the others use.
* ``_native_preview``: ``preview_cuts``.
* ``_native_stream``: ``StreamCap``.
* ``_native_text``: ``view_bytes``, ``view_text``, ``page_text`` (a verified
  page's text in one call), ``text_fits``, ``signal_lines``.
* ``_native_outline``: ``outline_lines``; ``_native_json``: ``JsonOutline``.
* ``_native_files``: ``file_unchanged`` (an open file checked against its identity),
  ``regular_identity`` (an open regular file's identity), ``read_regular``
  (a regular file opened, identified and read in one call), ``read_page``
  (a first read's window read and paged in one call).
* ``_native_record``: ``record_fields`` (a record as overspill writes it, for
  ``records.parse_record``).
* ``_native_values``: ``new_slotted`` (a value class's instance without its
  ``__init__``).
"""

from __future__ import annotations

from ._buffers import VIEW_ANSI, VIEW_CR
from ._native_bytes import ascii_view, count_lines, crc32, page_bounds, utf8_length, verified_copy, verify_chunks
from ._native_files import file_unchanged, read_page, read_regular, regular_identity
from ._native_json import JSON_KEY_MAX, JSON_KEYS_MAX, JSON_NESTING_MAX, JsonOutline
from ._native_outline import OUTLINE_DEPTH_MAX, SUBJECT_MAX, TOKEN_MAX, outline_lines
from ._native_preview import preview_cuts
from ._native_record import record_fields
from ._native_stream import StreamCap
from ._native_text import page_text, signal_lines, text_fits, view_bytes, view_text
from ._native_values import new_slotted

__all__ = [
    "JSON_KEYS_MAX", "JSON_KEY_MAX", "JSON_NESTING_MAX", "OUTLINE_DEPTH_MAX", "SUBJECT_MAX", "TOKEN_MAX", "VIEW_ANSI",
    "VIEW_CR", "JsonOutline", "StreamCap", "ascii_view", "count_lines", "crc32", "file_unchanged", "new_slotted",
    "outline_lines", "page_bounds", "page_text", "preview_cuts", "read_page", "read_regular", "record_fields",
    "regular_identity", "signal_lines", "text_fits", "utf8_length", "verified_copy", "verify_chunks", "view_bytes",
    "view_text",
]

# A kernel's home is this module, whichever file specifies it: the twin is one
# module to its callers, as the compiled ``overspill._speedups`` is.
for _kernel in (JsonOutline, StreamCap, ascii_view, count_lines, crc32, file_unchanged, new_slotted, outline_lines,
                page_bounds, page_text, preview_cuts, read_regular, record_fields, regular_identity, signal_lines,
                text_fits, utf8_length, verified_copy, verify_chunks, view_bytes, view_text):
    _kernel.__module__ = __name__
del _kernel
