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

# Lines that form runs (they differ only in their numbers and hex digests) and lines that do not.
_RUN_TEMPLATES = ["tests/test_a.py::test_x[{0}] PASSED [{1}%]", "step {0}: loss={1}", "{0},{1},ok",
                  "commit {0:x}abcdef{1}", "Get:{0} http://deb/pool/{1} [{0} kB]", "é {0} 中 {1}", "{0}",
                  "request {0:08x}-{1:04x}-4abc-8def-{0:012x} done"]  # a UUID: one number (red team G14)
_LONE_LINES = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x1b\r\n"), max_size=12)


@st.composite
def run_texts(draw: st.DrawFn, max_run: int = 40) -> str:
    """Text without ESC or ``\\r`` made of blocks: runs of one template's lines
    (numbers counting up) and lone lines, for the preview's ``runs``."""
    lines: list[str] = []
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.booleans()):
            template = draw(st.sampled_from(_RUN_TEMPLATES))
            start = draw(st.integers(0, 10**6))
            count = draw(st.one_of(st.integers(1, max_run), st.integers(max_run // 2, max_run)))
            lines += [template.format(start + i, (start + i) * 7 % 1000) for i in range(count)]
        else:
            lines.append(draw(_LONE_LINES))
    return "\n".join(lines) + ("\n" if draw(st.booleans()) else "")
