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
# Their start and end tags end an open row, as HTML5's implied end tags do.
_ROW_GROUPS = {"thead", "tbody", "tfoot"}
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


class _Table:
    """An open table: its rows so far, the row and the cell being filled (None when none is open)."""

    __slots__ = ("rows", "row", "cell")

    def __init__(self) -> None:
        self.rows = 0
        self.row: Optional[list[str]] = None
        self.cell: Optional[list[str]] = None


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
        # One entry per open table, innermost last: a layout table inside a
        # cell has its own row and cell, so its tags leave the outer ones be.
        self.tables: list[_Table] = []

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

    @staticmethod
    def _open_cell(tables: list[_Table]) -> Optional[list[str]]:
        """The innermost open cell of ``tables``: where text goes while they are open."""
        for table in reversed(tables):
            if table.cell is not None:
                return table.cell
        return None

    def _ending_here(self, size: int) -> str:
        """The last ``size`` characters of what is being written: the open cell, or the output."""
        cell = self._open_cell(self.tables)
        return self._ending(self.out if cell is None else cell, size)

    def emit(self, text: str) -> None:
        cell = self._open_cell(self.tables)
        if cell is not None:
            cell.append(text)
        else:
            self._put(text)

    def newlines(self, count: int) -> None:
        """End the current line and leave ``count - 1`` blank lines (never more)."""
        cell = self._open_cell(self.tables)
        if cell is not None:
            cell.append(" ")
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
            if self.tables and self.tables[-1].cell is None:
                # A table among another's rows, not in a cell, ends that one (as HTML5 parses it).
                self.end_table()
            self.newlines(2)
            self.tables.append(_Table())
        elif not self.tables:
            return  # row and cell tags outside a table are ignored; their text is not
        elif tag == "tr" or tag in _ROW_GROUPS:
            self.end_row()
            if tag == "tr":
                self.tables[-1].row = []
        elif tag in ("td", "th"):
            # A cell ends the one before it, and one outside a row opens the row it implies.
            table = self.tables[-1]
            self.end_cell()
            if table.row is None:
                table.row = []
            table.cell = []

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
                if self._ending_here(1) != "\n":
                    self.emit("\n")
                self.emit("```")
            self.newlines(2)
        elif tag == "a":
            href = self.links.pop() if self.links else None
            if href and self.markdown:
                self.emit(f"]({href})")
        elif not self.tables:
            return
        elif tag in ("td", "th"):
            self.end_cell()
        elif tag == "tr" or tag in _ROW_GROUPS:
            self.end_row()
        elif tag == "table":
            self.end_table()

    # -- tables: these act on the innermost open one
    def end_cell(self) -> None:
        """Add the open cell, if any, to its row."""
        table = self.tables[-1]
        if table.cell is not None and table.row is not None:
            table.row.append(_SPACE.sub(" ", "".join(table.cell)).strip())
        table.cell = None

    def end_row(self) -> None:
        """Put the open row, if any: as a line of its own, or as text in the cell around its table."""
        self.end_cell()
        table = self.tables[-1]
        row, table.row = table.row, None
        if not row:
            return
        # A table nested in a cell becomes text in that cell: Markdown has no
        # nested tables, and a row of the outer one is a single line.
        outer = self._open_cell(self.tables[:-1])
        if outer is not None:
            outer.append(" " + " ".join(row) + " ")
        else:
            self._row(row, first=table.rows == 0)
        table.rows += 1

    def _row(self, row: list[str], first: bool) -> None:
        """Put a row of a table that is not inside another, on a line of its own."""
        if self._ending(self.out, 1) not in ("", "\n"):
            self._put("\n")  # after a caption or text among the rows
        if self.markdown:
            self._put("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |\n")
            if first:
                self._put("|" + "|".join(" --- " for _ in row) + "|\n")
        else:
            self._put("\t".join(row) + "\n")

    def end_table(self) -> None:
        """Close the innermost table, putting the row it has open."""
        self.end_row()
        self.tables.pop()
        self.newlines(2)

    def close(self) -> None:
        """Finish the document: tables left open keep the rows they have."""
        super().close()
        while self.tables:
            self.end_table()

    def handle_data(self, data: str) -> None:
        if self.dropping:
            return
        if self.pre:
            self.emit(data)
            return
        text = _SPACE.sub(" ", data)
        if not text.strip():
            # Whitespace between inline elements is one space; at a line start, none.
            last = self._ending_here(1)
            if last and last not in (" ", "\n"):
                self.emit(" ")
            return
        if self._ending_here(1) in ("", "\n"):
            text = text.lstrip()
        self.emit(text)


def _convert(html: str, markdown: bool) -> str:
    converter = _Converter(markdown)
    converter.feed(html)
    converter.close()
    lines = [line.rstrip() for line in "".join(converter.out).split("\n")]
    text = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def html_to_markdown(html: str) -> str:
    """Markdown for the content of an HTML page."""
    return _convert(html, True)


def html_to_text(html: str) -> str:
    """Plain text for the content of an HTML page."""
    return _convert(html, False)
