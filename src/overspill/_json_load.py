"""``json.loads`` of a record's bytes without importing ``json``.

``json.decoder`` imports ``re`` (for its whitespace and string patterns), and
the two cost more than the rest of ``overspill read URI --all``, which parses
one record.  This runs the same C scanner ``json`` uses, with the default
decoder's settings, on the same text: the same values for every input, and
a ``ValueError`` (``json.JSONDecodeError`` is one) wherever ``json.loads``
raises one.  Input that ``json`` would not decode as UTF-8 (a byte-order mark,
UTF-16 or UTF-32), and interpreters without the C scanner, go to ``json``
itself.
"""

from __future__ import annotations

__all__ = ["loads", "loads_text"]

# What ``json.decoder.WHITESPACE`` matches around the value.
_WHITESPACE = " \t\n\r"
_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}


class _Settings:
    """``json.JSONDecoder()``'s settings, as the C scanner reads them."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__
    memo: dict[str, str] = {}


try:
    from _json import make_scanner as _make_scanner
except ImportError:  # pragma: no cover - an interpreter without json's C scanner
    _scan = None
else:
    _scan = _make_scanner(_Settings())


def loads(data: bytes) -> object:
    """``json.loads(data)``.

    :raises ValueError: ``data`` is not JSON (or not text), as ``json.loads`` raises.
    :raises RecursionError: it nests deeper than the interpreter's recursion limit.
    """
    # json.detect_encoding gives UTF-8 unless the data starts with a byte-order
    # mark or has a NUL in its first two bytes (UTF-16 or UTF-32 text).
    if _scan is None or len(data) < 4 or data[0] in (0, 0xEF, 0xFE, 0xFF) or data[1] == 0:
        import json

        return json.loads(data)
    text = data.decode("utf-8", "surrogatepass")
    end = len(text)
    try:
        value, stop = _scan(text, end - len(text.lstrip(_WHITESPACE)))
    except StopIteration:
        raise ValueError("Expecting value") from None
    except SystemError:
        # The scanner reports a syntax error as json.decoder.JSONDecodeError,
        # which it takes from sys.modules: without json imported it sets no
        # exception at all (a SystemError).  json itself raises the right one.
        import json

        return json.loads(data)
    if stop != end and text[stop:].lstrip(_WHITESPACE):
        raise ValueError(f"Extra data at character {stop}")
    return value


def loads_text(text: str | bytes) -> object:
    """``json.loads(text)`` of text someone else wrote (a model's arguments, a
    configuration file), where a nesting deeper than the interpreter's recursion
    limit is one more ``ValueError``: the one rule for every caller that reports
    malformed JSON.

    :raises ValueError: ``text`` is not JSON, or nests too deeply to parse.
    """
    import json  # its callers are rare (a tool call's text, a configuration file)

    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply to parse") from None
