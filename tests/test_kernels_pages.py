"""The page kernel (issue 21): a verified page's bounds and text in one call,
against a naive reference built from zlib and the view rules, between the
two implementations, and on every instruction set."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from strategies import raw_bytes
from test_kernels import naive_boundaries
from test_kernels_views import naive_view

from overspill import _kernels, _native

ANSI, CR = _native.VIEW_ANSI, _native.VIEW_CR

# Long runs of plain ASCII (the 128-byte steps of the SIMD scan), with an
# escape, a redraw, a \r\n, a multi-byte or broken character anywhere.
_PIECES = [b"x" * 127, b"y" * 31, b"z" * 130, b"\n", b"\r", b"\r\n", b"\x1b", b"\x1b[31m", b"\xc3\xa9",
           b"\xe4\xb8\xad", b"\xe2\x80", b"\xff", b"\x80", b"ok 42%"]
payloads = st.one_of(raw_bytes, st.lists(st.sampled_from(_PIECES), max_size=40).map(b"".join))


def checksums_of(data: bytes, chunk: int) -> bytes:
    return b"".join(zlib.crc32(data[i : i + chunk]).to_bytes(4, "big") for i in range(0, len(data), chunk))


def naive_bounds(window: bytes, offset: int, limit: int, final: bool) -> tuple[int, int]:
    """page_bounds from the boundary rule, on a window that may not be the whole payload."""
    bounds = sorted(naive_boundaries(window, final))
    later = [b for b in bounds if b >= offset]
    if not later:
        return len(window), len(window)
    start = later[0]
    fitting = [b for b in bounds if start < b <= start + limit]
    if fitting:
        return start, max(fitting)
    return start, min((b for b in bounds if b > start), default=start)


def maybe_split(data: bytes, low: int, edge: int, reach: int) -> bool:
    """Whether an edge may split an escape sequence: an ESC in the reach bytes before it, or all reach of
    them in the window and none of them an ESC, a newline or a BEL (a longer sequence may be under way)."""
    window = data[max(low, edge - reach) : edge]
    return 0x1B in window or (reach > 0 and edge - reach >= low and not {0x1B, 0x0A, 0x07} & set(window))


def naive_page_text(data: bytes, low: int, high: int, offset: int, limit: int, flags: int, reach: int,
                    checksums: bytes | None, chunk: int):
    if checksums is not None:
        for index in range(low // chunk, (high - 1) // chunk + 1):
            piece = data[index * chunk : (index + 1) * chunk]
            if zlib.crc32(piece) != int.from_bytes(checksums[4 * index : 4 * index + 4], "big"):
                return index
    start, end = naive_bounds(data[low:high], offset - low, limit, high == len(data))
    start, end = start + low, end + low
    follows = data[end] if end < high else None  # the byte after the page, when the window holds it
    if flags & ANSI and (any(maybe_split(data, low, edge, reach) for edge in (start, end))
                         or flags & CR and follows == 0x1B):
        return start, end, None
    if flags & CR and follows == 0x0A:  # a final \r is the line's ending, as in the whole view
        return start, end, naive_view(data[start : end + 1], flags).decode("utf-8", "replace")[:-1]
    return start, end, naive_view(data[start:end], flags).decode("utf-8", "replace")


@st.composite
def page_calls(draw, payload=payloads):
    data = draw(payload.filter(len).map(bytes))
    size = len(data)
    low = draw(st.integers(0, size - 1))
    high = draw(st.integers(low + 1, size))
    offset = draw(st.integers(low, high))
    limit = draw(st.integers(1, max(high - low, 1) + 4))
    chunk = draw(st.sampled_from([1, 3, 16, 64, 4096]))
    checksums = draw(st.one_of(st.none(), st.just(checksums_of(data, chunk))))
    return data, low, high, offset, limit, draw(st.integers(0, 3)), draw(st.integers(0, 40)), checksums, chunk


@given(page_calls())
@example((b"\x1b[1;31m", 0, 7, 0, 1, ANSI | CR, 512, None, 16))
@example((b"a\r\nb\rc" + b"x" * 300, 0, 306, 1, 200, CR, 8, None, 64))
@example((("row \u00e9\u4e2d\n" * 40).encode(), 5, 400, 7, 100, ANSI | CR, 16, None, 3))
@example((b"ab\r\ncd", 0, 6, 0, 3, CR, 0, None, 16))  # red team V f06: the page keeps its line's \r
@example((b"ab\r\x1b[0m\ncd", 0, 10, 0, 3, ANSI | CR, 0, None, 16))  # an ESC after the end: the caller's
def test_page_text_matches_naive_reference(call):
    data, low, high, offset, limit, flags, reach, checksums, chunk = call
    assert _kernels.page_text(*call) == naive_page_text(*call)


@given(page_calls(), st.data())
def test_a_changed_byte_is_the_first_bad_chunk_under_the_window(call, draw):
    data, low, high, offset, limit, flags, reach, _, chunk = call
    checksums = checksums_of(data, chunk)
    where = draw.draw(st.integers(0, len(data) - 1))
    changed = bytearray(data)
    changed[where] ^= 0x20
    found = _kernels.page_text(bytes(changed), low, high, offset, limit, flags, reach, checksums, chunk)
    if low // chunk <= where // chunk <= (high - 1) // chunk:
        assert found == where // chunk
    else:
        assert found == naive_page_text(bytes(changed), low, high, offset, limit, flags, reach, None, chunk)


def test_page_text_is_the_store_steps_in_one_call():
    data = b"\x1b[31mred\x1b[0m line\n" * 3000
    checksums = checksums_of(data, 16384)
    low, offset = 1000, 1200
    found = _kernels.page_text(data, low, 40_000, offset, 30_000, ANSI | CR, 0, checksums, 16384)
    view = memoryview(data)[low:40_000]
    assert _kernels.verify_chunks(data, 0, low, 40_000, checksums, 16384) == -1
    start, end = _kernels.page_bounds(view, offset - low, 30_000, False)
    assert found == (start + low, end + low, _kernels.view_text(view[start:end], ANSI | CR))
    # An escape within reach of an edge leaves the edges to the caller's escape rule.
    assert _kernels.page_text(data, low, 40_000, offset, 30_000, ANSI, 512, checksums, 16384)[2] is None


@pytest.mark.parametrize(("args", "error"), [
    (("text", 0, 1, 0, 1, 0, 0, None, 1), TypeError),
    ((b"ab", 0, 1, 0, 1, 0, 0, "ab", 1), TypeError),
    ((memoryview(b"abcd")[::2], 0, 1, 0, 1, 0, 0, None, 1), TypeError),
    ((b"ab", 0, 1, 0, 1, 0, 0, 5, 1), TypeError),
    ((b"ab", 1, 1, 1, 1, 0, 0, None, 1), ValueError),  # an empty window
    ((b"ab", 0, 3, 0, 1, 0, 0, None, 1), ValueError),  # past the end
    ((b"ab", 1, 2, 0, 1, 0, 0, None, 1), ValueError),  # offset outside the window
    ((b"ab", 0, 2, 0, 0, 0, 0, None, 1), ValueError),
    ((b"ab", 0, 2, 0, 1, 4, 0, None, 1), ValueError),
    ((b"ab", 0, 2, 0, 1, 0, -1, None, 1), ValueError),
    ((b"ab", 0, 2, 0, 1, 0, 0, None, 0), ValueError),
    ((b"ab", 0, 2, 0, 1, 0, 0, b"\0\0\0", 1), ValueError),  # too few checksums
    ((b"ab", 0, 2, 0, 1, True, 0, None, 1), TypeError),
    ((b"ab", 0, 2.0, 0, 1, 0, 0, None, 1), TypeError),
])
def test_page_text_rejects(args, error):
    with pytest.raises(error):
        _kernels.page_text(*args)


def outcome(function, *args):
    try:
        return ("ok", function(*args))
    except Exception as error:  # noqa: BLE001 - the type is what is compared
        return ("error", type(error))


_ARGUMENTS = st.one_of(st.none(), st.booleans(), st.integers(-2, 40), st.text(max_size=2), st.binary(max_size=8))


@given(page_calls(), st.lists(st.tuples(st.integers(0, 8), _ARGUMENTS), max_size=2))
def test_twins_agree_on_page_text(compiled, call, replaced):
    args = list(call)
    for position, value in replaced:
        args[position] = value
    assert outcome(compiled.page_text, *args) == outcome(_native.page_text, *args)


@given(page_calls(payloads.map(lambda data: data * 5)))
@example((b"x" * 127 + b"\r" + b"\n" + b"y" * 200, 0, 329, 0, 400, CR, 0, None, 64))
@example((b"x" * 255 + b"\r", 0, 256, 0, 400, CR, 0, None, 64))
@example((b"x" * 300 + b"\xc3\xa9" + b"x" * 300 + b"\x1b[0m", 0, 606, 0, 700, ANSI, 0, None, 64))
def test_page_text_is_the_same_on_every_instruction_set(compiled, call):
    expected = naive_page_text(*call)
    for level in (0, 1, 2, 3):
        previous = compiled._set_simd_cap(level)
        try:
            assert compiled.page_text(*call) == expected
            data, _, _, _, _, flags, _, _, _ = call
            shown = naive_view(data, flags).decode("utf-8", "replace")
            assert compiled.view_text(data, flags) == shown
        finally:
            compiled._set_simd_cap(previous)
