"""grep's ``glob``, as ``rg --glob`` reads it, for the search without rg.

grep promises the same files with or without ``rg``, so its Python search
applies rg's rules (ripgrep 13: its ``ignore`` crate's overrides over
``globset``), not ``fnmatch``'s:

* ``*`` and ``?`` never match ``/``; ``**`` matches any number of folders
  (``**/x``, ``x/**``, ``a/**/b``; elsewhere it is ``*``); ``[...]`` and
  ``[!...]``/``[^...]`` are classes (which may match ``/``); ``{a,b}``
  alternates (not nested); ``\\`` escapes the next character.
* A glob without ``/`` matches a name at any depth; one with a ``/`` matches
  the whole path (relative to the host's folder, a leading ``./`` dropped); a
  leading ``/`` only anchors; a trailing ``/`` makes it match folders only.
* ``!glob`` excludes what it matches, folders with all they hold; any other
  glob keeps only the files it matches (folders are still entered).  Of
  several globs the last one that matches decides.
* A glob starting with ``#``, or blank once trailing spaces are dropped, is
  no glob; ``\\!`` and ``\\#`` start one with a literal ``!`` or ``#``.
* Matching is on the path's bytes, as rg does: ``?`` is one byte, so it does
  not match a letter that takes two in UTF-8.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional, Union

__all__ = ["Glob", "Overrides", "translate"]

# What Rust's str::trim_end drops (Unicode White_Space), which rg applies to a glob
# not ending in an escaped space.
_WHITESPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
              "\u2028\u2029\u202f\u205f\u3000"


@dataclass(frozen=True)
class Glob:
    """One glob as rg applies it.

    :ivar regex: matches (``fullmatch``) the bytes of a path that the glob matches.
    :ivar excludes: the glob began with ``!``: what it matches is skipped.
    :ivar folders_only: the glob ended with ``/``: it matches folders only.
    """

    regex: re.Pattern[bytes]
    excludes: bool
    folders_only: bool


# Tokens of a parsed glob (globset's Token).
_ANY, _STAR, _PREFIX, _SUFFIX, _MIDDLE = "any", "star", "prefix", "suffix", "middle"


def _literal(character: str) -> str:
    """A character as a bytes-regex literal: its UTF-8 bytes, each escaped."""
    return "".join(re.escape(chr(byte)) if byte < 0x80 else f"\\x{byte:02x}" for byte in character.encode("utf-8"))


class _Parser:
    """globset's parser (literal_separator and backslash_escape on), token for token."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.position = 0
        self.previous: Optional[str] = None
        self.current: Optional[str] = None
        self.stack: list[list[object]] = [[]]

    def bump(self) -> Optional[str]:
        self.previous = self.current
        self.current = self.text[self.position] if self.position < len(self.text) else None
        if self.current is not None:
            self.position += 1
        return self.current

    def peek(self) -> Optional[str]:
        return self.text[self.position] if self.position < len(self.text) else None

    def parse(self) -> list[object]:
        while (character := self.bump()) is not None:
            if character == "?":
                self.stack[-1].append(_ANY)
            elif character == "*":
                self.star()
            elif character == "[":
                self.stack[-1].append(self.character_class())
            elif character == "{":
                if len(self.stack) > 1:
                    raise ValueError("nested alternate groups are not allowed")
                self.stack.append([])
            elif character == "}":
                alternates = []
                while len(self.stack) >= 2:
                    alternates.append(self.stack.pop())
                self.stack[-1].append(("alternates", alternates))
            elif character == "," and len(self.stack) > 1:
                self.stack.append([])
            elif character == "\\":
                escaped = self.bump()
                if escaped is None:
                    raise ValueError("dangling '\\'")
                self.stack[-1].append(("literal", escaped))
            else:
                self.stack[-1].append(("literal", character))
        if len(self.stack) > 1:
            raise ValueError("unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)")
        return self.stack[0]

    def star(self) -> None:
        tokens = self.stack[-1]
        previous = self.previous
        if self.peek() != "*":
            tokens.append(_STAR)
            return
        self.bump()
        if not tokens:
            if self.peek() not in (None, "/"):
                tokens += [_STAR, _STAR]
            else:
                tokens.append(_PREFIX)
                self.bump()
            return
        if previous != "/" and (len(self.stack) <= 1 or previous not in (",", "{")):
            tokens += [_STAR, _STAR]
            return
        following = self.peek()
        if following is None:
            suffix = True
        elif following in (",", "}") and len(self.stack) >= 2:
            suffix = True
        elif following == "/":
            self.bump()
            suffix = False
        else:
            tokens += [_STAR, _STAR]
            return
        last = tokens.pop()
        if last in (_PREFIX, _SUFFIX):
            tokens.append(last)
        else:
            tokens.append(_SUFFIX if suffix else _MIDDLE)

    def character_class(self) -> tuple[str, bool, list[tuple[str, str]]]:
        ranges: list[list[str]] = []
        negated = self.peek() in ("!", "^")
        if negated:
            self.bump()
        first, in_range = True, False
        while True:
            character = self.bump()
            if character is None:
                raise ValueError("unclosed character class; missing ']'")
            if character == "]" and not first:
                break
            if character == "-" and not first and not in_range:
                in_range = True
            elif in_range:
                ranges[-1][1] = character
                if ranges[-1][1] < ranges[-1][0]:
                    raise ValueError(f"invalid range; '{ranges[-1][0]}' > '{ranges[-1][1]}'")
                in_range = False
            else:
                ranges.append([character, character])
            first = False
        if in_range:
            ranges.append(["-", "-"])
        return ("class", negated, [(low, high) for low, high in ranges])


def _fixed_run(tokens: Sequence[object], start: int) -> int:
    """Where the run of ``?`` and literals other than ``/`` from ``start`` ends."""
    end = start
    while end < len(tokens) and (tokens[end] == _ANY or isinstance(tokens[end], tuple)
                                 and tokens[end][0] == "literal" and tokens[end][1] != "/"):  # type: ignore[index]
        end += 1
    return end


def _regex(tokens: Sequence[object], groups: Optional[list[int]] = None) -> str:
    """globset's regex for ``tokens`` (its ``(?-u)`` bytes semantics).

    ``*X*`` (X a run of ``?`` and literals, no ``/``) takes X's first match,
    atomically (a look-ahead group matched again by reference), as fnmatch does:
    a later match leaves the next ``*`` less to take, never more, so no match is
    lost, and ``*a*a*a*a*b`` against a long name is linear instead of
    exponential (each ``[^/]*`` retrying every split of the rest).
    """
    groups = [0] if groups is None else groups
    parts = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if token == _STAR:
            while index < len(tokens) and tokens[index] == _STAR:  # ** inside a name is one *
                index += 1
            end = _fixed_run(tokens, index)
            if end > index and end < len(tokens) and tokens[end] == _STAR:
                groups[0] += 1
                run = _regex(tokens[index:end], groups)
                parts.append(f"(?=(?P<g{groups[0]}>[^/]*?{run}))(?P=g{groups[0]})")
                index = end
            else:
                parts.append("[^/]*")
        elif token == _ANY:
            parts.append("[^/]")
        elif token == _PREFIX:
            parts.append("(?:/?|.*/)")
        elif token == _SUFFIX:
            parts.append("/.*")
        elif token == _MIDDLE:
            parts.append("(?:/|/.*/)")
        elif token[0] == "literal":  # type: ignore[index]
            parts.append(_literal(token[1]))  # type: ignore[index]
        elif token[0] == "class":  # type: ignore[index]
            _, negated, ranges = token  # type: ignore[misc]
            members = "".join(_literal(low) if low == high else f"{_literal(low)}-{_literal(high)}"
                              for low, high in ranges)
            parts.append(f"[{'^' if negated else ''}{members}]")
        else:  # alternates; an empty one matches the empty string
            alternatives = [regex for regex in (_regex(alternative, groups) for alternative in token[1])  # type: ignore[index]
                            if regex]
            if alternatives:
                parts.append(f"(?:{'|'.join(alternatives)})")
    return "".join(parts)


def translate(glob: str) -> Optional[Glob]:
    """The rule that ``rg --glob=GLOB`` adds, or None when rg reads ``glob`` as
    no glob at all (blank, or a ``#`` comment).

    :raises ValueError: rg refuses the glob; the message says why, in globset's words.
    """
    if glob.startswith("#"):
        return None
    if not glob.endswith("\\ "):
        glob = glob.rstrip(_WHITESPACE)
    if not glob:
        return None
    excludes = anchored = folders_only = False
    if glob.startswith(("\\!", "\\#")):
        glob = glob[1:]
    else:
        if glob.startswith("!"):
            excludes, glob = True, glob[1:]
        if glob.startswith("/"):
            anchored, glob = True, glob[1:]
    if glob.endswith("/"):
        folders_only, glob = True, glob[:-1]
    if not anchored and "/" not in glob and not (glob.startswith("**/") or glob == "**"):
        glob = "**/" + glob
    if glob.endswith("/**"):
        glob += "/*"
    tokens = _Parser(glob).parse()
    regex = ".*" if tokens == [_PREFIX] else _regex(tokens)
    try:
        compiled = re.compile(regex.encode("ascii"))
    except re.error as error:  # a class range of multi-byte letters that bytes cannot express
        raise ValueError(f"cannot be compiled: {error}") from None
    return Glob(compiled, excludes, folders_only)


class Overrides:
    """rg's overrides: the globs given with ``--glob``, in order, as its walk applies
    them to each path under the folder searched (never to that folder, nor to a
    file named as the path).

    :param globs: the globs, as passed to rg.
    :param cwd: the folder rg runs in (a path under it is matched relative to it).
    :raises ValueError: rg refuses one of the globs.
    """

    def __init__(self, globs: Sequence[str], cwd: Union[str, os.PathLike[str]]) -> None:
        self._globs = [rule for rule in (translate(glob) for glob in globs) if rule is not None]
        self._selecting = any(not rule.excludes for rule in self._globs)
        self._root = os.fsencode(os.path.abspath(cwd))

    def skips(self, path: str, is_folder: bool) -> bool:
        """Whether rg skips ``path`` (as rg names it: the searched path joined with
        the names below it), a folder when ``is_folder``."""
        data = os.fsencode(path)
        for _ in range(2):  # rg's walk drops a leading ./, and so does its matcher
            if data.startswith(b"./"):
                data = data[2:]
        # rg strips its folder from a path with a /, as bytes (not by components), then one /.
        if b"/" in data and data.startswith(self._root):
            data = data[len(self._root):]
            if data.startswith(b"/"):
                data = data[1:]
        for rule in reversed(self._globs):
            if (not rule.folders_only or is_folder) and rule.regex.fullmatch(data):
                return rule.excludes
        return self._selecting and not is_folder
