"""A SKILL.md's front matter: the top-level ``key: value`` scalars of its leading ``---`` block.

Skills write their front matter in YAML's simple subset; this reads what they
use without a YAML library (the core has no third-party dependency): plain
scalars (a `` #`` comment cut off, continuation lines folded), single- and
double-quoted scalars (their escapes), and ``|``/``>`` block scalars, each
after its anchor and tag, which are not its value (``&a !!str x`` is ``x``;
``!!str`` makes ``null`` the string it is); an alias (``*a``) is the scalar its
anchor named.  A value may start on the line below its key (past blank and
comment lines), read there as on the key's line.  A value that is no string
is left out, as a missing key: a null (nothing, ``~``, ``null``), a flow
(``[a, b]``, ``{a: b}``) or block collection (``- a`` or ``key: value`` lines
below the key).  Values come back stripped of surrounding whitespace (a
block's final line break included).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up; annotations are never evaluated
    from collections.abc import Iterable, Iterator
    from typing import Optional

__all__ = ["front_matter"]

# YAML's double-quoted escapes that stand for one character.
_ESCAPES = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f",
            "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0",
            "L": "\u2028", "P": "\u2029"}
_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}
# The plain scalars YAML's core schema reads as null (as an empty value is).
_NULLS = frozenset({"~", "null", "Null", "NULL"})
# The tag that makes a node a string whatever its text (``!!str null`` is "null"), short and long.
_STRING_TAGS = frozenset({"!!str", "!<tag:yaml.org,2002:str>"})


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
    anchors: dict[str, Optional[str]] = {}
    index = 0
    while index < len(body):
        line = body[index]
        index += 1
        if not line.strip() or line.startswith((" ", "\t", "#")) or _is_sequence_entry(line):
            continue  # a blank line, a comment, or the rest of a nested value (a sequence may start at column 0)
        key, separator, rest = line.partition(":")
        # A value's continuation: the indented (and blank) lines after its key.
        block_end = index
        while block_end < len(body) and (not body[block_end].strip() or body[block_end].startswith((" ", "\t"))):
            block_end += 1
        block, index = body[index:block_end], block_end
        key = key.strip()
        if separator and key:
            value = _node(rest.strip(), block, anchors)
            if value is None:  # no string: as if the key were missing (a later one overrides an earlier)
                fields.pop(_unquoted_key(key), None)
            else:
                fields[_unquoted_key(key)] = value
    return fields


def _node(rest: str, block: list[str], anchors: dict[str, Optional[str]]) -> Optional[str]:
    """The string a top-level value is (``rest`` after its key's colon, continued by ``block``),
    after its anchor and tag, recorded in ``anchors`` under its anchor; an alias is the value its
    anchor named.  None: no string (a null, a collection, an alias to no anchor read)."""
    anchor = None
    string = False  # tagged !!str: a null's word, or nothing, is the string it is
    next_line = False
    while True:
        while rest.startswith(("&", "!")):  # node properties, in either order, each ended by a space or tab
            end = next((at for at, character in enumerate(rest) if character in " \t"), len(rest))
            token, rest = rest[:end], rest[end:].strip()
            if token[0] == "&":
                anchor = token[1:]
            else:
                string = token in _STRING_TAGS
        if _before_comment(rest):
            break
        # Nothing (or only properties) on this line: the value starts on the block's first line that is
        # not blank nor a comment, read by the same rules (its properties, quotes, a block's header).
        first = next((at for at, line in enumerate(block) if line.strip() and not line.strip().startswith("#")), None)
        if first is None:
            rest = ""
            break
        rest, block, next_line = block[first].strip(), block[first + 1 :], True
    if rest.startswith("*"):
        return anchors.get(_before_comment(rest)[1:].strip())
    value = _content(rest, block, string, next_line)
    if anchor:
        anchors[anchor] = value
    return value


def _content(rest: str, block: list[str], string: bool, next_line: bool) -> Optional[str]:
    """``_scalar``, stripped; None for a null or a collection.

    :param string: the node is tagged ``!!str``: a null's word, or nothing, is the string it is.
    :param next_line: ``rest`` is the line below its key's, where a block collection may start.
    """
    if not rest:
        return "" if string else None  # nothing: a null
    if rest.startswith(("[", "{")):
        return None  # a flow sequence or mapping
    if next_line and _starts_collection(rest):
        return None  # a block collection
    value = _scalar(rest, block).strip()
    if not string and not rest.startswith(("|", ">", '"', "'")) and value in _NULLS:
        return None
    return value


def _starts_collection(line: str) -> bool:
    """Whether ``line`` (stripped), a value's first line below its key, starts a block collection:
    a plain ``- item`` or ``key: value``, or a quoted key (one line, as a key is) and its ':'.
    A quoted scalar's text, a ``|``/``>`` block's, is never tested: its ': ' is text."""
    if line.startswith(('"', "'")):
        end = _unquoted(line)[1]
        return end is not None and line[end:].lstrip().startswith(":")
    if line.startswith(("|", ">")):
        return False
    return _is_sequence_entry(line) or _is_mapping_entry(line)


def _is_sequence_entry(line: str) -> bool:
    """Whether ``line`` (not indented) is a block sequence's ``- item``."""
    return line == "-" or line.startswith(("- ", "-\t"))


def _is_mapping_entry(line: str) -> bool:
    """Whether ``line`` (stripped) is a block mapping's ``key: value`` (or ``key:``), which no plain
    scalar can hold: its colon is followed by a space or ends the line, outside a comment."""
    text = _before_comment(line)
    return text.endswith(":") or ": " in text or ":\t" in text


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
    value, end = _unquoted(text)
    return text[1:] if end is None else value  # never closed: the text as written


def _unquoted(text: str) -> tuple[str, Optional[int]]:
    """The quoted scalar ``text`` starts with (its lines folded), and where its closing quote
    ends in ``text`` (None: never closed)."""
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
            return "".join(out), position + 1
        if character == "\\" and quote == '"' and position + 1 < len(text):
            escaped, position = _escape(text, position + 1)
            out.append(escaped)
            continue
        out.append(character)
        position += 1
    return "".join(out), None


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
