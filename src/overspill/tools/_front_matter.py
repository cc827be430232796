"""A SKILL.md's front matter: the top-level ``key: value`` scalars of its leading ``---`` block.

Skills write their front matter in YAML's simple subset; this reads what they
use without a YAML library (the core has no third-party dependency): plain
scalars (a `` #`` comment cut off, continuation lines folded), single- and
double-quoted scalars (their escapes), and ``|``/``>`` block scalars.  Nested
mappings and sequences are read as text and never used.  Values come back
stripped of surrounding whitespace (a block's final line break included).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up; annotations are never evaluated
    from collections.abc import Iterable, Iterator

__all__ = ["front_matter"]

# YAML's double-quoted escapes that stand for one character.
_ESCAPES = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f",
            "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0",
            "L": "\u2028", "P": "\u2029"}
_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}


def front_matter(text: str) -> dict[str, str]:
    """The top-level scalars of ``text``'s front matter (``{}``: none, or never closed).

    :param text: the file's text; its first line must be ``---`` and a later one close the block.
    """
    # YAML's line breaks (\n, \r\n, a lone \r), not str.splitlines(), which also breaks inside a value
    # at U+2028, \x85 or \x0c and so would cut a description short.
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines[0].strip() != "---":
        return {}
    for close in range(1, len(lines)):
        if lines[close].strip() == "---":
            break
    else:
        return {}  # never closed: not front matter
    body = lines[1:close]
    fields: dict[str, str] = {}
    index = 0
    while index < len(body):
        line = body[index]
        index += 1
        if not line.strip() or line.startswith((" ", "\t", "#")):
            continue  # a blank line, a comment, or the rest of a nested value
        key, separator, rest = line.partition(":")
        # A value's continuation: the indented (and blank) lines after its key.
        block_end = index
        while block_end < len(body) and (not body[block_end].strip() or body[block_end].startswith((" ", "\t"))):
            block_end += 1
        block, index = body[index:block_end], block_end
        key = key.strip()
        if separator and key:
            fields[_unquoted_key(key)] = _scalar(rest.strip(), block).strip()
    return fields


def _unquoted_key(key: str) -> str:
    if len(key) >= 2 and key[0] == key[-1] and key[0] in "'\"":
        return key[1:-1]
    return key


def _scalar(rest: str, block: list[str]) -> str:
    """The value whose first line (after its key's colon) is ``rest``, continued by ``block``."""
    if rest.startswith(("|", ">")):
        return _block_scalar(rest, block)
    if rest.startswith(('"', "'")):
        return _quoted(rest, block)
    return _plain(rest, block)


def _plain(rest: str, block: list[str]) -> str:
    """A plain scalar: up to a comment (`` #``), its lines folded (one break: a space)."""
    return _fold([_before_comment(rest)] if rest else [], _uncommented(block))


def _uncommented(block: list[str]) -> Iterator[str]:
    """A plain scalar's continuation lines, trimmed, up to a comment (a comment line, or one after text)."""
    for line in block:
        line = line.strip()
        if line.startswith("#"):
            return
        text = _before_comment(line)
        yield text
        if text != line:
            return


def _before_comment(line: str) -> str:
    if line.startswith("#"):
        return ""
    for mark in (" #", "\t#"):
        found = line.find(mark)
        if found >= 0:
            line = line[:found]
    return line.rstrip()


def _fold(pieces: list[str], lines: Iterable[str], escapes: bool = False) -> str:
    """``pieces`` (a first line's, or none) and ``lines`` (trimmed) folded as a flow scalar's lines
    are: one break a space, more kept as breaks.

    :param escapes: a double-quoted scalar's lines: a line ending in an escaping backslash (an odd
        run of them: ``\\\\`` is an escaped backslash) escapes its line break, which is then left
        out, backslash and all (YAML 1.2, 7.3.1: ``"fi\\`` then ``  les"`` is ``files``); blank
        lines after it are still breaks.
    """
    breaks = 0
    for line in lines:
        if not line:
            breaks += 1
            continue
        if pieces:
            last = pieces[-1]  # the previous line (a separator always comes before a line)
            if escapes and (len(last) - len(last.rstrip("\\"))) % 2:
                pieces[-1] = last[:-1]
                pieces.append("\n" * breaks)
            else:
                pieces.append("\n" * breaks if breaks else " ")
        pieces.append(line)
        breaks = 0
    return "".join(pieces)


def _quoted(rest: str, block: list[str]) -> str:
    """A single- or double-quoted scalar (it may span lines); unclosed, its text as written."""
    text = _fold([rest], (line.strip() for line in block), escapes=rest[0] == '"')
    quote = text[0]
    out: list[str] = []
    position = 1
    while position < len(text):
        character = text[position]
        if character == quote:
            if quote == "'" and text.startswith("''", position):
                out.append("'")
                position += 2
                continue
            return "".join(out)
        if character == "\\" and quote == '"' and position + 1 < len(text):
            escaped, position = _escape(text, position + 1)
            out.append(escaped)
            continue
        out.append(character)
        position += 1
    return text[1:]  # never closed: the text as written


def _escape(text: str, position: int) -> tuple[str, int]:
    """The character a double-quoted escape at ``text[position]`` (after its backslash) stands for,
    and where the text goes on; an unknown escape stands for itself, backslash included."""
    letter = text[position]
    if letter in _ESCAPES:
        return _ESCAPES[letter], position + 1
    digits = _HEX_DIGITS.get(letter)
    if digits:
        code = text[position + 1 : position + 1 + digits]
        if len(code) == digits and all(digit in "0123456789abcdefABCDEF" for digit in code):
            number = int(code, 16)
            if 0xD800 <= number <= 0xDFFF:  # a lone surrogate: no character, and it could not be encoded
                return "\ufffd", position + 1 + digits
            if number <= 0x10FFFF:
                return chr(number), position + 1 + digits
    return "\\" + letter, position + 1


def _block_scalar(header: str, block: list[str]) -> str:
    """A ``|`` (literal: lines kept) or ``>`` (folded: one break a space) block scalar, its
    indentation that of its first non-blank line unless the header gives it."""
    indicators = _before_comment(header)[1:]
    digits = [character for character in indicators if character.isdigit()]
    indent = int(digits[0]) if digits and digits[0] != "0" else 0
    if not indent:
        for line in block:
            if line.strip():
                indent = len(line) - len(line.lstrip(" "))
                break
    if not indent:
        return ""
    lines = [line[indent:] if line[:indent].strip(" ") == "" else line.strip() for line in block]
    if header[0] == "|":
        return "\n".join(lines)
    pieces: list[str] = []
    breaks = 0
    previous_more = False
    for line in lines:
        if not line:  # (spaces past the indentation are a more indented line's text)
            breaks += 1
            continue
        more = line.startswith((" ", "\t"))  # more indented: its breaks are kept
        if pieces:
            pieces.append("\n" * (breaks + (more or previous_more)) if breaks else "\n" if more or previous_more else " ")
        pieces.append(line)
        breaks = 0
        previous_more = more
    return "".join(pieces)
