"""HTML to Markdown or plain text with the standard library's ``html.parser``.

Headings, paragraphs, links, lists, emphasis, code and pre, tables and block
quotes are kept; scripts, styles and other non-content elements are dropped.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Optional

__all__ = ["html_to_markdown", "html_to_text", "sniff_charset"]

_DROPPED = {"script", "style", "noscript", "template", "svg", "head", "iframe", "object", "canvas"}
_VOID = {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "track", "wbr"}
_BLOCKS = {"p", "div", "section", "article", "main", "header", "footer", "nav", "aside", "form", "figure",
           "figcaption", "dl", "dt", "dd", "address", "details", "summary", "body", "html"}
# Markdown for inline elements, the same on both sides (code inside pre is left plain).
_INLINE_MARKERS = {"strong": "**", "b": "**", "em": "*", "i": "*", "code": "`"}
_SPACE = re.compile(r"\s+")
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.IGNORECASE)
# HTML's rules for parsing integers: white space, a sign, digits; what follows is ignored.
_INTEGER = re.compile(r"[\t\n\f\r ]*([+-]?)([0-9]+)")
# Browsers hold <ol start> in a 32-bit int and take a value outside it as no value.
_START_BOUND = 2**31


def sniff_charset(head: bytes) -> Optional[str]:
    """The charset a ``<meta>`` tag declares in the first bytes of a page, if any."""
    match = _META_CHARSET.search(head[:4096])
    return match.group(1).decode("ascii") if match else None


def _list_start(value: Optional[str]) -> int:
    """The number an ``<ol start>`` value gives the first item, read as browsers read it.

    Leading digits count ("2.0" is 2, " +3x" is 3); no digits at all, or a number
    outside a 32-bit int, leaves the default, 1.
    """
    match = _INTEGER.match(value or "")
    if match is None:
        return 1
    digits = match.group(2).lstrip("0") or "0"
    # Checked before int(): Python refuses a string of over 4300 digits with a ValueError.
    if len(digits) > len(str(_START_BOUND)):
        return 1
    number = int(match.group(1) + digits)
    return number if -_START_BOUND <= number < _START_BOUND else 1


class _Converter(HTMLParser):
    def __init__(self, markdown: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.markdown = markdown
        self.out: list[str] = []
        self.visible = False  # whether anything but white space was output yet
        self.dropping = 0  # depth inside dropped elements
        self.pre = 0
        self.lists: list[list[int]] = []  # per open list: [is_ordered, next number]
        self.links: list[Optional[str]] = []
        self.quote = 0
        self.row: Optional[list[str]] = None
        self.cell: Optional[list[str]] = None
        self.rows_in_table: list[int] = []

    # -- output helpers
    # The output is only ever inspected at its end, a few characters at a
    # time: joining all of it per text node would make a large page quadratic.
    @staticmethod
    def _ending(parts: list[str], size: int) -> str:
        """The last ``size`` characters of ``parts`` joined, reading only the pieces that needs."""
        tail: list[str] = []
        have = 0
        for piece in reversed(parts):
            tail.append(piece)
            have += len(piece)
            if have >= size:
                break
        return "".join(reversed(tail))[-size:]

    def _put(self, piece: str) -> None:
        self.out.append(piece)
        if not self.visible and piece.strip():
            self.visible = True

    def emit(self, text: str) -> None:
        if self.cell is not None:
            self.cell.append(text)
        else:
            self._put(text)

    def newlines(self, count: int) -> None:
        """End the current line and leave ``count - 1`` blank lines (never more)."""
        if self.cell is not None:
            self.cell.append(" ")
            return
        if not self.visible:
            return
        ending = self._ending(self.out, count)
        trailing = len(ending) - len(ending.rstrip("\n"))
        if trailing < count:
            self._put("\n" * (count - trailing))
        if self.quote and self.markdown:
            self._put("> " * self.quote)

    def inline(self, marker: str) -> None:
        if self.markdown:
            self.emit(marker)

    # -- parser callbacks
    def handle_starttag(self, tag: str, attrs: list[tuple[str, Optional[str]]]) -> None:
        if tag in _DROPPED:
            if tag not in _VOID:
                self.dropping += 1
            return
        if self.dropping:
            return
        attributes = dict(attrs)
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self.newlines(2)
            self.inline("#" * int(tag[1]) + " ")
        elif tag in _BLOCKS:
            self.newlines(2)
        elif tag == "br":
            self.newlines(1)
        elif tag == "hr":
            self.newlines(2)
            self.emit("---" if self.markdown else "")
            self.newlines(2)
        elif tag == "blockquote":
            self.quote += 1
            self.newlines(2)
        elif tag in ("ul", "ol"):
            self.lists.append([tag == "ol", _list_start(attributes.get("start")) if tag == "ol" else 0])
            self.newlines(1 if len(self.lists) > 1 else 2)
        elif tag == "li":
            self.newlines(1)
            depth = max(len(self.lists) - 1, 0)
            if self.lists and self.lists[-1][0]:
                bullet = f"{self.lists[-1][1]}. "
                self.lists[-1][1] += 1
            else:
                bullet = "- " if self.markdown else "• "
            self.emit("  " * depth + bullet)
        elif tag in _INLINE_MARKERS and not (tag == "code" and self.pre):
            self.inline(_INLINE_MARKERS[tag])
        elif tag == "pre":
            self.newlines(2)
            self.inline("```\n")
            self.pre += 1
        elif tag == "a":
            href = attributes.get("href")
            self.links.append(href)
            if href and self.markdown:
                self.emit("[")
        elif tag == "img":
            alt = attributes.get("alt") or ""
            if self.markdown and attributes.get("src"):
                self.emit(f"![{alt}]({attributes['src']})")
            elif alt:
                self.emit(alt)
        elif tag == "table":
            self.newlines(2)
            self.rows_in_table.append(0)
        elif tag == "tr":
            self.row = []
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in _DROPPED:
            if tag not in _VOID:
                self.dropping = max(self.dropping - 1, 0)
            return
        if self.dropping:
            return
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6") or tag in _BLOCKS:
            self.newlines(2)
        elif tag == "blockquote":
            self.quote = max(self.quote - 1, 0)
            self.newlines(2)
        elif tag in ("ul", "ol"):
            if self.lists:
                self.lists.pop()
            self.newlines(2 if not self.lists else 1)
        elif tag in _INLINE_MARKERS and not (tag == "code" and self.pre):
            self.inline(_INLINE_MARKERS[tag])
        elif tag == "pre":
            self.pre = max(self.pre - 1, 0)
            if self.markdown:
                if self._ending(self.out, 1) != "\n":
                    self.emit("\n")
                self.emit("```")
            self.newlines(2)
        elif tag == "a":
            href = self.links.pop() if self.links else None
            if href and self.markdown:
                self.emit(f"]({href})")
        elif tag in ("td", "th"):
            if self.cell is not None and self.row is not None:
                self.row.append(_SPACE.sub(" ", "".join(self.cell)).strip())
            self.cell = None
        elif tag == "tr":
            self.finish_row()
        elif tag == "table":
            self.finish_row()
            if self.rows_in_table:
                self.rows_in_table.pop()
            self.newlines(2)

    def finish_row(self) -> None:
        if self.row is None:
            return
        row, self.row = self.row, None
        if not row:
            return
        if self.markdown:
            self._put("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |\n")
            if self.rows_in_table and self.rows_in_table[-1] == 0:
                self._put("|" + "|".join(" --- " for _ in row) + "|\n")
        else:
            self._put("\t".join(row) + "\n")
        if self.rows_in_table:
            self.rows_in_table[-1] += 1

    def handle_data(self, data: str) -> None:
        if self.dropping:
            return
        if self.pre:
            self.emit(data)
            return
        text = _SPACE.sub(" ", data)
        if not text.strip():
            # Whitespace between inline elements is one space; at a line start, none.
            last = self._ending(self.out if self.cell is None else self.cell, 1)
            if last and last not in (" ", "\n"):
                self.emit(" ")
            return
        if self._ending(self.out if self.cell is None else self.cell, 1) in ("", "\n"):
            text = text.lstrip()
        self.emit(text)


def _convert(html: str, markdown: bool) -> str:
    converter = _Converter(markdown)
    converter.feed(html)
    converter.close()
    converter.finish_row()
    lines = [line.rstrip() for line in "".join(converter.out).split("\n")]
    text = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def html_to_markdown(html: str) -> str:
    """Markdown for the content of an HTML page."""
    return _convert(html, True)


def html_to_text(html: str) -> str:
    """Plain text for the content of an HTML page."""
    return _convert(html, False)
