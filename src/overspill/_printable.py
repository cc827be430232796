"""The printable rule: text another party chose, shown with its non-printable characters escaped.

One home below every floor that shows such text: the CLI (names, session ids, error lines),
every tool's, the MCP server's and the wrapper's own error lines (``tools._result.message_line``,
through ``_frontend``; an upstream's own JSON-RPC error is its answer, passed on as sent), and the
Redis backend's URL errors, which
may not import a front end's module.  Importing it imports nothing.
"""

from __future__ import annotations

__all__ = ["printable", "shown_characters"]


def _escape(character: str) -> str:
    # Always the code point in hex (``\x0a``, not ``\n``): one form for every control character,
    # the one README shows (``\x1b``).
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: str) -> str:
    """``text`` with every non-printable character (controls, escape codes, bidi overrides)
    written as a Python escape (``\\x1b``): for text another party chose (a caller's name or
    session id the CLI prints, a server's reason phrase in a tool's error line, a store URL in
    a ``ConfigError``), which shown raw could drive a terminal or hide what it says."""
    if text.isprintable():
        return text
    return "".join(shown_characters(text))


def shown_characters(text: str) -> list[str]:
    """Each character of ``text`` as ``printable`` shows it (itself, or its escape): for a cut
    between whole escapes."""
    return [character if character.isprintable() else _escape(character) for character in text]
