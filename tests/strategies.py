"""Hypothesis strategies shared by the test modules.

They lean towards the inputs that break text code: newlines of every kind,
NUL, multi-byte and 4-byte characters, lone surrogates and invalid UTF-8.
"""

from __future__ import annotations

from hypothesis import strategies as st

_AWKWARD_CHARS = ["\n", "\r\n", "\r", "\x00", "é", "€", "中", "😀", "\udcc3", "\udca9", "\ud800", "\udfff",
                  "\udc80", "\udc7f", "a"]


class StrSubclass(str):
    """A str subclass, as agent frameworks return (smolagents' ``AgentText``): accepted
    wherever ``str`` is, by both implementations (issue 9, item 16)."""


class BytesSubclass(bytes):
    """A bytes subclass: accepted wherever ``bytes`` is."""


class BytearraySubclass(bytearray):
    """A bytearray subclass: accepted wherever a bytes-like object is."""


_plain_texts = st.lists(
    st.one_of(st.sampled_from(_AWKWARD_CHARS), st.characters(codec=None)), max_size=60
).map("".join)

#: Text with every awkward code point the content policy must handle, sometimes as a str subclass.
texts = st.one_of(_plain_texts, _plain_texts.map(StrSubclass))

# Bytes that form, break and interleave UTF-8 sequences.
_AWKWARD_BYTES = [0x0A, 0x0D, 0x00, 0x41, 0x7F, 0x80, 0x8F, 0xBF, 0xC0, 0xC2, 0xC3, 0xDF, 0xE0, 0xE2,
                  0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF]
_plain_bytes = st.one_of(
    st.lists(st.sampled_from(_AWKWARD_BYTES), max_size=60).map(bytes),
    st.binary(max_size=60),
    _plain_texts.map(lambda text: text.encode("utf-8", "surrogatepass")),
)
#: Bytes, sometimes as a bytes or bytearray subclass.
raw_bytes = st.one_of(_plain_bytes, _plain_bytes.map(BytesSubclass), _plain_bytes.map(BytearraySubclass))

contents = st.one_of(texts, raw_bytes)
limits = st.integers(min_value=1, max_value=80)
