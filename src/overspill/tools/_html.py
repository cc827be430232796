"""HTML to Markdown or plain text with the standard library's ``html.parser``.

Headings, paragraphs, links, lists, emphasis, code and pre, tables and block
quotes are kept; scripts, styles and other non-content elements are dropped.
The end tags HTML lets a page leave out are implied where HTML5 implies them
(a head ends at the body's first tag, an svg at a paragraph, a cell at the
next cell), and a dropped element left open to the end keeps its content, so
malformed markup can lose formatting but not the page's text.  A pre is
written as its text is, blank lines and spaces kept (markup inside it writes
no Markdown), in a fence longer than any run of backticks in it; one left open
in a table ends where HTML closes its cell (the cell's or row's end, the next
cell or row, the table's end), not at the page's end; a table row
whose cells hold a pre (Pygments' line numbers and code) is written as blocks,
cell by cell, since a row of a Markdown table is one line.  Lists and
block quotes nested deeper than ``_MAX_NESTING`` are written at that depth, and
tables nested deeper are read as text of the cell around them, so the output
and the time stay linear in the page.
"""

from __future__ import annotations

import itertools
import re
from html.parser import HTMLParser
from typing import Iterator, Optional, Union

__all__ = ["convert_page", "html_to_markdown", "html_to_text"]

_DROPPED = {"script", "style", "noscript", "template", "svg", "head", "title", "iframe", "object", "canvas"}
# A dropped element still open at the end of the page has its content kept
# (a second pass), so that a missing end tag cannot empty the page; but not
# these raw-text ones: html.parser itself holds back the text of an unclosed
# script or style (as a browser does), so there is nothing to keep.
_RAW_TEXT = {"script", "style"}
# What HTML5 lets a head hold: any other start tag ends it (so does text),
# as do </body>, </html> and </br>.  The same for a <noscript> in the head.
_HEAD_CONTENT = {"base", "basefont", "bgsound", "link", "meta", "title", "noscript", "noframes", "script", "style",
                 "template", "head", "html"}
_HEAD_NOSCRIPT_CONTENT = {"basefont", "bgsound", "link", "meta", "noframes", "style"}
_HEAD_END_TAGS = {"body", "html", "br"}
# The start tags that end an open <svg> (HTML5's breakout from foreign
# content), and the end tags; <font> breaks out with one of these attributes.
_SVG_BREAKOUT = {"b", "big", "blockquote", "body", "br", "center", "code", "dd", "div", "dl", "dt", "em", "embed",
                 "h1", "h2", "h3", "h4", "h5", "h6", "head", "hr", "i", "img", "li", "listing", "menu", "meta",
                 "nobr", "ol", "p", "pre", "ruby", "s", "small", "span", "strong", "strike", "sub", "sup", "table",
                 "tt", "u", "ul", "var"}
_SVG_BREAKOUT_END_TAGS = {"p", "br"}
_FONT_BREAKOUT = {"color", "face", "size"}
# Elements of an svg that hold HTML: no breakout inside them.
_SVG_HTML_POINTS = {"foreignobject", "desc", "title"}
_HTML_SPACE = " \t\n\f\r"
_BLOCKS = {"p", "div", "section", "article", "main", "header", "footer", "nav", "aside", "form", "figure",
           "figcaption", "dl", "dt", "dd", "address", "details", "summary", "body", "html"}
# Their start and end tags end an open row, as HTML5's implied end tags do.
_ROW_GROUPS = {"thead", "tbody", "tfoot"}
# Markdown for inline elements, the same on both sides (inside a pre none is written).
_INLINE_MARKERS = {"strong": "**", "b": "**", "em": "*", "i": "*", "code": "`"}
_SPACE = re.compile(r"\s+")
# Inside a pre only text is written: these tags end a line there (as blocks do), a cell's
# separates words; any other writes nothing of its own.
_PRE_LINE_ENDS = _BLOCKS | _ROW_GROUPS | {"h1", "h2", "h3", "h4", "h5", "h6", "hr", "blockquote", "ul", "ol", "li",
                                          "table", "tr", "p"}
_BACKTICKS = re.compile(r"`+")
# HTML's rules for parsing integers: white space, a sign, digits; what follows is ignored.
_INTEGER = re.compile(r"[\t\n\f\r ]*([+-]?)([0-9]+)")
# Browsers hold <ol start> in a 32-bit int and take a value outside it as no value.
_START_BOUND = 2**31
# The deepest list indentation and block-quote prefix written: deeper nesting is
# written at this depth (and tables nested deeper are text of their outer cell).  Each level costs bytes on every item or line, so an
# unbounded depth makes the output quadratic in the page (40 KB of "<ul><li>" was
# 25 MB); renderers stop nesting about here anyway (markdown-it's CommonMark
# preset at 20), and the text is all kept.
_MAX_NESTING = 20


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


class _Verbatim(str):
    """A piece of the output the final whitespace normalisation leaves as it is: a pre's block."""

    __slots__ = ()


# A line break that starts a line with text, and one that starts a blank line.
_TEXT_LINE = re.compile(r"\n(?!\n)")
_BLANK_LINE = re.compile(r"\n(?=\n)")


# The characters of a pre's text prefixed at a time: its prefixes can make a block tens of times
# the page's size, and the output stops growing once past its limit (``_Converter.limit``).
_BLOCK_PIECE = 1 << 14


def _quoted(text: str, prefix: str) -> Iterator[str]:
    """``text``, lines of a block in a block quote, each line after ``prefix`` (a blank one after
    the prefix without its last space, as ``newlines`` writes one; a last empty line, where the
    closing fence goes, after the whole prefix), in pieces of ``_BLOCK_PIECE`` characters of ``text``."""
    bare = prefix.rstrip(" ")
    yield bare if text.startswith("\n") else prefix
    for start in range(0, len(text), _BLOCK_PIECE):
        end = start + _BLOCK_PIECE
        # (No replacement is a template: the prefixes are "> " only.)
        piece = _BLANK_LINE.sub("\n" + bare, _TEXT_LINE.sub("\n" + prefix, text[start:end]))
        if text[end - 1:end + 1] == "\n\n":  # its last line break starts a blank line, in the next piece
            piece = piece[:len(piece) - len(prefix)] + bare
        yield piece


class _Block(str):
    """A pre's text held in a table's cell, written as a block with the cell's row (``_block_row``)."""

    __slots__ = ()


#: A cell as its row holds it: its text on one line, or, when it holds a pre, its parts in
#: order: each run of text on one line, and each pre's ``_Block``.
_Cell = Union[str, list[str]]


class _Table:
    """An open table: its rows (the ones written as a table since the last written as blocks),
    the row and the cell being filled (None when none is open)."""

    __slots__ = ("rows", "row", "cell")

    def __init__(self) -> None:
        self.rows = 0
        self.row: Optional[list[_Cell]] = None
        self.cell: Optional[list[str]] = None


class _Converter(HTMLParser):
    def __init__(self, markdown: bool, kept: frozenset[int] = frozenset(), limit: Optional[int] = None) -> None:
        super().__init__(convert_charrefs=True)
        self.markdown = markdown
        self.out: list[str] = []
        # The characters in ``out``; once past ``limit`` (None: no limit) the output is ``full``:
        # nothing more is written, though the page is read to its end (the second pass needs to
        # know what it left open).  Quote prefixes can make the output 40 times the page.
        self.size = 0
        self.limit = limit
        self.full = False
        self.visible = False  # whether anything but white space was output yet
        # Open dropped elements, innermost last: the tag and its start tag's
        # ordinal, which names it across passes (they see the same tags).
        self.drops: list[tuple[str, int]] = []
        # Ordinals of dropped elements an earlier pass found never closed: they
        # open and close as before, so that every pass sees the same elements
        # open, but their content is kept.  How many open ones are not kept:
        self.kept = kept
        self.dropping = 0
        self.starts = 0  # start tags seen so far
        self.in_body = False  # past the head: HTML5 ignores a later <head>
        self.pre = 0
        # The text of the open outermost pre, written whole (``_end_pre``) when it closes.
        self.pre_text: list[str] = []
        # The last token was a <pre>'s start tag: a line break right after it is no content (HTML's
        # parsing drops it, so that a listing may start on the line after the tag).
        self.pre_opened = False
        # Tables open inside the open pre (words there, not in ``tables``): while one is, the cell
        # and row tags are its own, and end no pre (``_table_ends_pre``).
        self.pre_tables = 0
        self.lists: list[list[int]] = []  # per open list: [is_ordered, next number]
        self.links: list[Optional[str]] = []
        self.quote = 0
        self.content_quote = 0  # the block-quote depth of the last text written
        # What the last newlines() wrote, while it is the output's last piece (a line
        # holding only a quote's prefix is blank): (pieces then, line breaks before it, line breaks after).
        self.breaks: Optional[tuple[int, int, int]] = None
        # One entry per open table, innermost last: a layout table inside a
        # cell has its own row and cell, so its tags leave the outer ones be.
        self.tables: list[_Table] = []
        # Tables open inside a cell of a table nested ``_MAX_NESTING`` deep: their
        # tags only separate words of that cell.  Every level of nesting copies
        # its cells' text into the cell around it, so an unbounded depth made the
        # conversion quadratic in time (a 275 KB page took 90 s); nested tables
        # are single lines of text in their outer cell anyway.
        self.flat_tables = 0

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
        if self.full:
            return
        self._append(piece)
        if piece.strip():
            self.visible = True
            self.content_quote = self.quote

    def _append(self, piece: str) -> None:
        """Add ``piece`` to the output, which is full once past the limit."""
        self.out.append(piece)
        self.size += len(piece)
        if self.limit is not None and self.size > self.limit:
            self.full = True

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
        if self.pre:  # a pre's text is written when it closes
            self.pre_text.append(text)
            return
        cell = self._open_cell(self.tables)
        if cell is not None:
            cell.append(text)
        else:
            self._put(text)

    def _prefix(self, quote: int) -> str:
        """What starts a line inside ``quote`` block quotes."""
        return "> " * min(quote, _MAX_NESTING) if self.markdown else ""

    def newlines(self, count: int) -> None:
        """End the current line and leave ``count - 1`` blank lines (never more).

        Inside a block quote every line, blank ones too, starts with the
        quote's prefix (a bare blank line would end the quote), and a line
        that holds only a prefix counts as blank: the lines this call writes
        are rewritten by the next one when nothing came between them, so the
        prefix of the line text will go on is the quote's depth then.

        Inside a pre, a block's start or end only ends the line, if one was begun.
        """
        if self.pre:
            if self._ending(self.pre_text, 1) not in ("", "\n"):
                self.pre_text.append("\n")
            return
        cell = self._open_cell(self.tables)
        if cell is not None:
            cell.append(" ")
            return
        if self.full:
            return
        if not self.visible:
            # Nothing shown yet: the first line starts with the prefix of the quote it is in, and only that.
            self.out.clear()
            self.size = 0
            if self.quote and self.markdown:
                self._append(self._prefix(self.quote))
            return
        if self.breaks is not None and self.breaks[0] == len(self.out):
            _, trailing, written = self.breaks
            self.size -= len(self.out.pop())
            count = max(count, written)
        else:
            ending = self._ending(self.out, count)
            trailing = len(ending) - len(ending.rstrip("\n"))
        if trailing >= count and not self.quote:
            self.breaks = None
            return
        # A blank line between two depths belongs to the shallower: it neither ends the quote text came
        # from nor opens the one text goes on in.
        blank = "\n" + self._prefix(min(self.quote, self.content_quote))
        lines = max(count - trailing, 0)
        piece = blank * max(lines - 1, 0) + ("\n" if lines else "") + self._prefix(self.quote)
        self._append(piece)
        self.breaks = (len(self.out), trailing, max(count, trailing))

    def inline(self, marker: str) -> None:
        if self.markdown:
            self.emit(marker)

    # -- dropped elements
    def _ends_innermost_drop(self, tag: Optional[str], attrs: list[tuple[str, Optional[str]]], end: bool) -> bool:
        """Whether a start tag (an end tag if ``end``; text if ``tag`` is None)
        ends the innermost open dropped element without its end tag, as in HTML5."""
        inner = self.drops[-1][0]
        if inner == "head" or inner == "noscript" and len(self.drops) > 1 and self.drops[-2][0] == "head":
            if end:
                return tag in _HEAD_END_TAGS
            return tag not in (_HEAD_CONTENT if inner == "head" else _HEAD_NOSCRIPT_CONTENT)
        if inner == "svg" and tag is not None:
            if end:
                return tag in _SVG_BREAKOUT_END_TAGS
            return tag in _SVG_BREAKOUT or tag == "font" and any(name in _FONT_BREAKOUT for name, _ in attrs)
        return False

    def _end_implied_drops(self, tag: Optional[str], attrs: list[tuple[str, Optional[str]]], end: bool) -> None:
        """End the open dropped elements that ``tag`` cannot be inside."""
        while self.drops and self._ends_innermost_drop(tag, attrs, end):
            self._pop_drop()

    def _pop_drop(self) -> None:
        tag, ordinal = self.drops.pop()
        if ordinal not in self.kept:
            self.dropping -= 1
        if tag == "head":
            self.in_body = True

    def unclosed(self) -> set[int]:
        """The ordinals of the dropped elements left open at the end whose content a second pass keeps.

        The same on that pass, which opens and closes the same elements.
        """
        return {ordinal for tag, ordinal in self.drops if tag not in _RAW_TEXT}

    # -- parser callbacks
    def parse_marked_section(self, i: int, report: int = 1) -> int:
        """Skip a ``<![...`` section, and return where the text after it starts (-1: not all here yet).

        html.parser raises AssertionError at a keyword it does not know
        (``<![foo[``, ``<![ x``, Word's ``<![-->``): such a section is a bogus
        comment that ends at the next ``>``, as HTML5 reads it.
        """
        try:
            return super().parse_marked_section(i, report)
        except AssertionError:
            end = self.rawdata.find(">", i + 3)
            return -1 if end < 0 else end + 1

    def handle_starttag(self, tag: str, attrs: list[tuple[str, Optional[str]]]) -> None:
        self.pre_opened = False
        ordinal = self.starts
        self.starts += 1
        if self.drops:
            self._end_implied_drops(tag, attrs, end=False)
        if tag in _DROPPED or tag in _SVG_HTML_POINTS and self.drops and self.drops[-1][0] == "svg":
            if tag == "head" and (self.in_body or self.drops):
                return  # a <head> past the head, or inside a dropped element, is ignored (HTML5)
            self.drops.append((tag, ordinal))
            if ordinal not in self.kept:
                self.dropping += 1
            return
        # Only what is outside every dropped element, kept or not, ends the
        # head: a pass that keeps some must see the same <head> tags ignored.
        if not self.drops and tag not in _HEAD_CONTENT:
            self.in_body = True
        if self.dropping:
            return
        attributes = dict(attrs)
        if self.pre and tag != "pre":
            if not self._table_ends_pre(tag, end=False):
                self._start_in_pre(tag, attributes)
                return
            self._end_pres()  # then the tag is read as outside the pre
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
            depth = min(max(len(self.lists) - 1, 0), _MAX_NESTING)
            if self.lists and self.lists[-1][0]:
                bullet = f"{self.lists[-1][1]}. "
                self.lists[-1][1] += 1
            else:
                bullet = "- " if self.markdown else "• "
            self.emit("  " * depth + bullet)
        elif tag in _INLINE_MARKERS:
            self.inline(_INLINE_MARKERS[tag])
        elif tag == "pre":
            self.newlines(2)
            self.pre += 1
            self.pre_opened = True
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
            if self.flat_tables or len(self.tables) >= _MAX_NESTING and self.tables[-1].cell is not None:
                self.flat_tables += 1
                self.emit(" ")
                return
            if self.tables and self.tables[-1].cell is None:
                # A table among another's rows, not in a cell, ends that one (as HTML5 parses it).
                self.end_table()
            self.newlines(2)
            self.tables.append(_Table())
        elif not self.tables:
            return  # row and cell tags outside a table are ignored; their text is not
        elif self.flat_tables and (tag in ("tr", "td", "th") or tag in _ROW_GROUPS):
            self.emit(" ")  # a flattened table's rows and cells are words of the cell around it
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
        self.pre_opened = False
        if self.drops:
            self._end_implied_drops(tag, [], end=True)
        if tag in _DROPPED or tag in _SVG_HTML_POINTS:
            # The nearest open element of that name ends, and whatever was opened inside it.
            for depth in range(len(self.drops) - 1, -1, -1):
                if self.drops[depth][0] == tag:
                    while len(self.drops) > depth:
                        self._pop_drop()
                    break
            return
        if self.dropping:
            return
        if self.pre and tag != "pre" and self._table_ends_pre(tag, end=True):
            self._end_pres()  # then the tag is read as outside the pre
        if self.pre and tag != "pre":
            # As at its start (``_start_in_pre``): a link's "](href)" is not written (no "[" was).
            if tag == "a" and self.links:
                self.links.pop()
            elif tag in ("td", "th"):
                self.emit(" ")
            elif tag in _PRE_LINE_ENDS:
                if tag == "table" and self.pre_tables:
                    self.pre_tables -= 1
                self.newlines(1)
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
        elif tag in _INLINE_MARKERS:
            self.inline(_INLINE_MARKERS[tag])
        elif tag == "pre":
            if self.pre:
                self.pre -= 1
                if self.pre:
                    self.newlines(1)  # a pre inside one: a block, which ends a line
                else:
                    self._end_pre()
                    self.newlines(2)
        elif tag == "a":
            href = self.links.pop() if self.links else None
            if href and self.markdown:
                self.emit(f"]({href})")
        elif not self.tables:
            return
        elif self.flat_tables:
            if tag == "table":
                self.flat_tables -= 1
            if tag in ("td", "th", "tr", "table") or tag in _ROW_GROUPS:
                self.emit(" ")
        elif tag in ("td", "th"):
            self.end_cell()
        elif tag == "tr" or tag in _ROW_GROUPS:
            self.end_row()
        elif tag == "table":
            self.end_table()

    # -- pre: its text is written whole when it closes
    def _start_in_pre(self, tag: str, attributes: dict[str, Optional[str]]) -> None:
        """A start tag inside a pre: only its text is written, so a tag writes no Markdown (a link
        neither brackets nor its URL, emphasis no stars, an image its alt text), a block ends a
        line, a line break is one, and a table's tags separate words (a table has no rows there)."""
        if tag == "table":
            self.pre_tables += 1
        if tag == "br":
            self.emit("\n")  # each <br> ends a line, a blank one too
        elif tag == "img":
            self.emit(attributes.get("alt") or "")
        elif tag == "a":
            self.links.append(None)  # for its end tag
        elif tag in ("td", "th"):
            self.emit(" ")
        elif tag in _PRE_LINE_ENDS:
            self.newlines(1)

    def _table_ends_pre(self, tag: str, end: bool) -> bool:
        """Whether ``tag`` (an end tag if ``end``), met inside an open pre, ends it: in a table,
        HTML's parsing closes a cell, and every element open in it, at the cell's end tag, the
        next cell's or row's start tag, and the end tag of its row, row group or table (a pre
        among a table's rows is closed by them too); but a table opened inside the pre has those
        tags for its own cells (``pre_tables``)."""
        if not self.tables or self.pre_tables:
            return False
        return tag in ("td", "th", "tr") or tag in _ROW_GROUPS or end and tag == "table"

    def _end_pres(self) -> None:
        """End every open pre, as HTML's closing of the cell around them does, and the block's line
        as the pre's end tag would."""
        self.pre = 0
        self._end_pre()
        self.newlines(2)

    def _end_pre(self) -> None:
        """Write the pre that closed, or, in a table's cell, hold it there for its row."""
        content = "".join(self.pre_text)
        self.pre_text = []
        self.pre_tables = 0  # a table left open in it ends with it
        cell = self._open_cell(self.tables)
        if cell is not None:
            cell.append(_Block(content))
        else:
            self._write_block(content)

    def _write_block(self, content: str) -> None:
        """Write a pre's text as it is (``_Verbatim``: no whitespace normalisation), in Markdown
        between fences and, in a block quote, each line after the quote's prefix."""
        if not self.markdown:
            # Plain text has no fence: a blank line the pre starts with is also the one that separates it
            # from what comes before, which ``newlines`` wrote.
            self._put(_Verbatim(content[1:] if content.startswith("\n") else content))
            return
        prefix = self._prefix(self.quote)
        # Longer than any run of backticks in it, so that no line of it closes the block (CommonMark).
        fence = "`" * max(3, 1 + max((len(run) for run in _BACKTICKS.findall(content)), default=0))
        end = "" if not content or content.endswith("\n") else "\n" + prefix
        self._put(_Verbatim(fence + "\n"))
        for piece in _quoted(content, prefix) if prefix else (content,):
            if self.full:
                return  # the rest is not built
            self._put(_Verbatim(piece))
        self._put(_Verbatim(end + fence))

    # -- tables: these act on the innermost open one
    def end_cell(self) -> None:
        """Add the open cell, if any, to its row."""
        table = self.tables[-1]
        if table.cell is not None and table.row is not None:
            table.row.append(_cell_text(table.cell))
        table.cell = None

    def end_row(self) -> None:
        """Put the open row, if any: as a line of its own, or as text in the cell around its table."""
        self.end_cell()
        table = self.tables[-1]
        row, table.row = table.row, None
        if not row:
            return
        # A table nested in a cell becomes text in that cell: Markdown has no
        # nested tables, and a row of the outer one is a single line (but for its pres' blocks).
        outer = self._open_cell(self.tables[:-1])
        if outer is not None:
            for cell in row:
                outer.append(" ")
                if isinstance(cell, str):
                    outer.append(cell)
                else:
                    outer.extend(cell)
            outer.append(" ")
        elif all(isinstance(cell, str) for cell in row):
            self._row(row, first=table.rows == 0)  # type: ignore[arg-type]
        else:
            self._block_row(row)
            table.rows = 0  # a row written after it starts a table again
            return
        table.rows += 1

    def _block_row(self, row: list[_Cell]) -> None:
        """Put a row of a table that is not inside another, one of whose cells holds a pre: as
        blocks, cell by cell, each pre a code block (a table's row is one line, and the code's
        lines are the code; Pygments puts its line numbers and its code in two such cells)."""
        for cell in row:
            for part in [cell] if isinstance(cell, str) else cell:
                if isinstance(part, _Block):
                    self.newlines(2)
                    self._write_block(part)
                elif part:
                    self.newlines(2)
                    self._put(part)
        self.newlines(2)

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
        """Finish the document: a pre left open keeps its text, tables left open the rows they have."""
        super().close()
        if self.pre:
            self.pre = 0
            self._end_pre()
        while self.tables:
            self.end_table()

    def handle_data(self, data: str) -> None:
        pre_opened, self.pre_opened = self.pre_opened, False
        if data.strip(_HTML_SPACE):
            if self.drops:
                self._end_implied_drops(None, [], end=False)
            if not self.drops:
                self.in_body = True
        if self.dropping:
            return
        if self.pre:
            # HTML's input preprocessing reads a CR LF and a lone CR as LF: a page served with CRLF
            # line ends (or CRs alone) has the same lines as one with LFs, and no '\r' ends a code line.
            data = data.replace("\r\n", "\n").replace("\r", "\n")
            if pre_opened and data.startswith("\n"):
                data = data[1:]
            self.pre_text.append(data)
            return
        text = _SPACE.sub(" ", data)
        if not text.strip():
            # Whitespace between inline elements is one space; at a line start, none.
            last = self._ending_here(1)
            if last and last not in (" ", "\n"):
                self.emit(" ")
            return
        if self._ending_here(1) in ("", "\n", " "):  # a line's start (a quote's prefix ends in a space), or a space
            text = text.lstrip()
        self.emit(text)


def _cell_text(pieces: list[str]) -> _Cell:
    """A cell's pieces as its row holds them: its text on one line (each run of white space one
    space); or, when it holds pres (a ``_Block`` each), its parts, each run of text between them so."""
    if not any(isinstance(piece, _Block) for piece in pieces):
        return _SPACE.sub(" ", "".join(pieces)).strip()
    parts: list[str] = []
    for is_block, run in itertools.groupby(pieces, key=lambda piece: isinstance(piece, _Block)):
        if is_block:
            parts.extend(run)
        else:
            text = _SPACE.sub(" ", "".join(run)).strip()
            if text:
                parts.append(text)
    return parts


def convert_page(html: str, markdown: bool, limit: Optional[int] = None) -> tuple[str, bool]:
    """``html`` as Markdown (or, ``markdown`` false, plain text), and whether that is all of it.

    With a ``limit``, the conversion stops building its output once that is past ``limit``
    characters (before the final normalisation, which only removes white space), and the text
    is its start, not all of it: a page can convert to 40 times its size (each line of a pre
    deep in block quotes gets every quote's prefix), and a caller that keeps at most ``limit``
    characters need not hold the rest.
    """
    converter = _Converter(markdown, limit=limit)
    converter.feed(html)
    converter.close()
    unclosed = converter.unclosed()
    if unclosed:
        # Dropped elements never closed swallowed the rest of the page: convert
        # again with their content kept.
        converter = _Converter(markdown, frozenset(unclosed), limit)
        converter.feed(html)
        converter.close()
    return _normalised(converter.out), not converter.full


def _normalised(pieces: list[str]) -> str:
    """The output's pieces joined, each line's trailing spaces and every blank line past one removed,
    but not in a pre's block (a ``_Verbatim`` piece): a listing keeps its blank lines and its spaces."""
    runs = [(verbatim, "".join(run))
            for verbatim, run in itertools.groupby(pieces, key=lambda piece: isinstance(piece, _Verbatim))]
    parts: list[str] = []
    for index, (verbatim, text) in enumerate(runs):
        if not verbatim:
            # The line a block starts on is the block's: what comes before it there (a quote's
            # prefix) is kept, its space too.
            head, newline, start = text.rpartition("\n") if index + 1 < len(runs) else (text, "", "")
            text = re.sub(r"\n{3,}", "\n\n", "\n".join(line.rstrip() for line in head.split("\n")) + newline) + start
        parts.append(text)
    # Blank lines go from both ends, but not the spaces that indent the first line: a page that
    # starts with a <pre> keeps its listing's indentation.
    return "".join(parts).lstrip("\n").rstrip() + "\n"


def html_to_markdown(html: str) -> str:
    """Markdown for the content of an HTML page."""
    return convert_page(html, True)[0]


def html_to_text(html: str) -> str:
    """Plain text for the content of an HTML page."""
    return convert_page(html, False)[0]
