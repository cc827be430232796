"""A page's charset label read as browsers read it: the WHATWG Encoding Standard's table.

A label (``charset=latin1`` in a header, ``<meta charset="us-ascii">``) names
one of the standard's encodings, or none: ``iso-8859-1``, ``latin1`` and
``us-ascii`` are windows-1252 (its curly quotes and dashes, not C1 controls),
and a name only Python's codec registry knows (``utf-7``, ``unicode_escape``,
``rot13``, ``hex``) is no label, so a page cannot have its text rewritten by
a codec no browser would apply.  Each encoding decodes by its Python codec;
the single-byte ones by a byte table made from it, in which a byte the codec
leaves undefined between 0x80 and 0x9F is the C1 control of its value, as the
standard's indexes say (windows-1252's 0x81, 0x8D, 0x8F, 0x90, 0x9D).
A ``<meta>``'s label is found as HTML's prescan finds it (``sniff_charset``).
(Not part of ``_html``: the conversion worker loads that file alone.)
"""

from __future__ import annotations

import codecs
import re
from typing import Optional

__all__ = ["decode", "encoding_of", "sniff_charset"]

# The standard's encodings (its encodings.json) by name: the Python codec, then the labels.
# The single-byte ones, decoded by a byte table (``_byte_table``) made from the codec, which then equals
# the standard's index but for the bytes in ``_INDEX_NOT_CODEC``.
_SINGLE_BYTE = {
    "IBM866": ("cp866", "866 cp866 csibm866 ibm866"),
    "ISO-8859-2": ("iso8859_2", "csisolatin2 iso-8859-2 iso-ir-101 iso8859-2 iso88592 iso_8859-2 iso_8859-2:1987 "
                                "l2 latin2"),
    "ISO-8859-3": ("iso8859_3", "csisolatin3 iso-8859-3 iso-ir-109 iso8859-3 iso88593 iso_8859-3 iso_8859-3:1988 "
                                "l3 latin3"),
    "ISO-8859-4": ("iso8859_4", "csisolatin4 iso-8859-4 iso-ir-110 iso8859-4 iso88594 iso_8859-4 iso_8859-4:1988 "
                                "l4 latin4"),
    "ISO-8859-5": ("iso8859_5", "csisolatincyrillic cyrillic iso-8859-5 iso-ir-144 iso8859-5 iso88595 iso_8859-5 "
                                "iso_8859-5:1988"),
    "ISO-8859-6": ("iso8859_6", "arabic asmo-708 csiso88596e csiso88596i csisolatinarabic ecma-114 iso-8859-6 "
                                "iso-8859-6-e iso-8859-6-i iso-ir-127 iso8859-6 iso88596 iso_8859-6 iso_8859-6:1987"),
    "ISO-8859-7": ("iso8859_7", "csisolatingreek ecma-118 elot_928 greek greek8 iso-8859-7 iso-ir-126 iso8859-7 "
                                "iso88597 iso_8859-7 iso_8859-7:1987 sun_eu_greek"),
    "ISO-8859-8": ("iso8859_8", "csiso88598e csisolatinhebrew hebrew iso-8859-8 iso-8859-8-e iso-ir-138 iso8859-8 "
                                "iso88598 iso_8859-8 iso_8859-8:1988 visual"),
    "ISO-8859-8-I": ("iso8859_8", "csiso88598i iso-8859-8-i logical"),
    "ISO-8859-10": ("iso8859_10", "csisolatin6 iso-8859-10 iso-ir-157 iso8859-10 iso885910 l6 latin6"),
    "ISO-8859-13": ("iso8859_13", "iso-8859-13 iso8859-13 iso885913"),
    "ISO-8859-14": ("iso8859_14", "iso-8859-14 iso8859-14 iso885914"),
    "ISO-8859-15": ("iso8859_15", "csisolatin9 iso-8859-15 iso8859-15 iso885915 iso_8859-15 l9"),
    "ISO-8859-16": ("iso8859_16", "iso-8859-16"),
    "KOI8-R": ("koi8_r", "cskoi8r koi koi8 koi8-r koi8_r"),
    "KOI8-U": ("koi8_u", "koi8-ru koi8-u"),
    "macintosh": ("mac_roman", "csmacintosh mac macintosh x-mac-roman"),
    "windows-874": ("cp874", "dos-874 iso-8859-11 iso8859-11 iso885911 tis-620 windows-874"),
    "windows-1250": ("cp1250", "cp1250 windows-1250 x-cp1250"),
    "windows-1251": ("cp1251", "cp1251 windows-1251 x-cp1251"),
    "windows-1252": ("cp1252", "ansi_x3.4-1968 ascii cp1252 cp819 csisolatin1 ibm819 iso-8859-1 iso-ir-100 "
                               "iso8859-1 iso88591 iso_8859-1 iso_8859-1:1987 l1 latin1 us-ascii windows-1252 "
                               "x-cp1252"),
    "windows-1253": ("cp1253", "cp1253 windows-1253 x-cp1253"),
    "windows-1254": ("cp1254", "cp1254 csisolatin5 iso-8859-9 iso-ir-148 iso8859-9 iso88599 iso_8859-9 "
                               "iso_8859-9:1989 l5 latin5 windows-1254 x-cp1254"),
    "windows-1255": ("cp1255", "cp1255 windows-1255 x-cp1255"),
    "windows-1256": ("cp1256", "cp1256 windows-1256 x-cp1256"),
    "windows-1257": ("cp1257", "cp1257 windows-1257 x-cp1257"),
    "windows-1258": ("cp1258", "cp1258 windows-1258 x-cp1258"),
    "x-mac-cyrillic": ("mac_cyrillic", "x-mac-cyrillic x-mac-ukrainian"),
}
# The others, decoded by their codec; "replacement" and "x-user-defined" have none (``decode``).
_OTHERS = {
    "UTF-8": ("utf-8", "unicode-1-1-utf-8 unicode11utf8 unicode20utf8 utf-8 utf8 x-unicode20utf8"),
    "GBK": ("gb18030", "chinese csgb2312 csiso58gb231280 gb2312 gb_2312 gb_2312-80 gbk iso-ir-58 x-gbk"),
    "gb18030": ("gb18030", "gb18030"),
    "Big5": ("big5hkscs", "big5 big5-hkscs cn-big5 csbig5 x-x-big5"),
    "EUC-JP": ("euc_jp", "cseucpkdfmtjapanese euc-jp x-euc-jp"),
    "ISO-2022-JP": ("iso2022_jp", "csiso2022jp iso-2022-jp"),
    "Shift_JIS": ("cp932", "csshiftjis ms932 ms_kanji shift-jis shift_jis sjis windows-31j x-sjis"),
    "EUC-KR": ("cp949", "cseuckr csksc56011987 euc-kr iso-ir-149 korean ks_c_5601-1987 ks_c_5601-1989 ksc5601 "
                        "ksc_5601 windows-949"),
    "replacement": ("", "csiso2022kr hz-gb-2312 iso-2022-cn iso-2022-cn-ext iso-2022-kr replacement"),
    "UTF-16BE": ("utf-16-be", "unicodefffe utf-16be"),
    "UTF-16LE": ("utf-16-le", "csunicode iso-10646-ucs-2 ucs-2 unicode unicodefeff utf-16 utf-16le"),
    "x-user-defined": ("", "x-user-defined"),
}
_LABELS = {label: name for table in (_SINGLE_BYTE, _OTHERS) for name, (_, labels) in table.items()
           for label in labels.split()}

_byte_tables: dict[str, str] = {}


def encoding_of(label: Optional[str]) -> Optional[str]:
    """The name of the encoding ``label`` stands for (the standard's "get an encoding": ASCII white
    space around it ignored, ASCII letters in either case), or None for no label of the standard's."""
    if not label or not label.isascii():  # only ASCII letters fold: a "K" (Kelvin) is no "k" here
        return None
    return _LABELS.get(label.strip("\t\n\f\r ").lower())


#: Where the standard's index and Python's codec differ: its KOI8-U maps 0xAE and 0xBE to Cyrillic
#: letters, as KOI8-RU does (Python's koi8_u has box drawings there), and its windows-1255 0xCA to
#: U+05BA (cp1255 leaves it undefined).
_INDEX_NOT_CODEC = {"KOI8-U": {0xAE: "\u045e", 0xBE: "\u040e"}, "windows-1255": {0xCA: "\u05ba"}}


def _byte_table(name: str) -> str:
    """The 256 characters the bytes of single-byte encoding ``name`` decode to (``codecs.charmap_decode``'s
    table: U+FFFE for a byte the encoding leaves undefined)."""
    table = _byte_tables.get(name)
    if table is None:
        if name == "x-user-defined":  # ASCII, then the bytes 0x80 to 0xFF at U+F780 to U+F7FF
            table = "".join(chr(byte if byte < 0x80 else 0xF700 + byte) for byte in range(256))
        else:
            codec = _SINGLE_BYTE[name][0]
            differing = _INDEX_NOT_CODEC.get(name, {})
            table = "".join(differing.get(byte) or bytes((byte,)).decode(codec, "ignore")
                            or (chr(byte) if 0x80 <= byte <= 0x9F else "\ufffe") for byte in range(256))
        _byte_tables[name] = table
    return table


def decode(body: bytes, name: str) -> str:
    """``body`` as text in the encoding ``name`` (one ``encoding_of`` gave); a byte the encoding
    does not define becomes U+FFFD.  The replacement encoding (ISO-2022-KR, HZ: a page browsers
    refuse to read, as text in them can pass for ASCII markup) is one U+FFFD."""
    if name == "replacement":
        return "\ufffd" if body else ""
    if name in _SINGLE_BYTE or name == "x-user-defined":
        return codecs.charmap_decode(body, "replace", _byte_table(name))[0]
    return body.decode(_OTHERS[name][0], "replace")


# HTML's prescan (the HTML Standard's "prescan a byte stream to determine its encoding"), on
# the page's bytes read as Latin-1, one character a byte.
_SPACE = "\t\n\f\r "
_TAG_START = re.compile(r"<(/?)([A-Za-z])")
_CONTENT_CHARSET = re.compile(r"charset[\t\n\f\r ]*=[\t\n\f\r ]*", re.IGNORECASE)


def _attribute(text: str, at: int) -> tuple[Optional[tuple[str, str]], int]:
    """The attribute of a tag that starts at ``at`` (its name in lower case, its value) and where
    the text after it starts, or None and the position of the tag's end (the prescan's "get an
    attribute")."""
    size = len(text)
    while at < size and (text[at] in _SPACE or text[at] == "/"):
        at += 1
    if at >= size or text[at] == ">":
        return None, at
    name_start = at
    while at < size and (text[at] not in _SPACE and text[at] not in "/>" and not (text[at] == "=" and at > name_start)):
        at += 1
    name = text[name_start:at].lower()
    while at < size and text[at] in _SPACE:
        at += 1
    if at >= size or text[at] != "=":
        return (name, ""), at
    at += 1
    while at < size and text[at] in _SPACE:
        at += 1
    if at < size and text[at] in "\"'":
        end = text.find(text[at], at + 1)
        if end < 0:
            return None, size
        return (name, text[at + 1:end]), end + 1
    value_start = at
    while at < size and text[at] not in _SPACE and text[at] != ">":
        at += 1
    return (name, text[value_start:at]), at


def _content_charset(content: str) -> Optional[str]:
    """The charset label a ``<meta content>`` names ("text/html; charset=koi8-r"), as the HTML
    Standard extracts one ("extracting a character encoding from a meta element"), or None."""
    match = _CONTENT_CHARSET.search(content)
    if match is None:
        return None
    rest = content[match.end():]
    if rest[:1] in ("'", '"'):
        end = rest.find(rest[0], 1)
        return rest[1:end] if end > 0 else None  # an unmatched quote: none
    return re.split(r"[\t\n\f\r ;]", rest, maxsplit=1)[0] or None


def _meta_encoding(text: str, at: int) -> tuple[Optional[str], int]:
    """The encoding the ``<meta`` tag whose attributes start at ``at`` declares (None: none, or a
    label the standard does not know), and where its tag ends, by the prescan's rules: a ``charset``
    counts wherever it stands, else a ``content`` naming a known charset; a ``content``'s only with
    ``http-equiv="content-type"`` (a description's or a title's declares nothing); each name's
    first occurrence only."""
    seen: set[str] = set()
    label: Optional[str] = None
    need_pragma: Optional[bool] = None
    got_pragma = False
    while True:
        attribute, at = _attribute(text, at)
        if attribute is None:
            break
        name, value = attribute
        if name in seen:
            continue
        seen.add(name)
        if name == "http-equiv":
            got_pragma = got_pragma or value.lower() == "content-type"
        elif name == "content" and need_pragma is None:
            # A content counts only when its charset is a label the standard knows: a bogus one
            # leaves a later charset attribute to decide.
            content_label = _content_charset(value)
            if content_label is not None and encoding_of(content_label) is not None:
                label, need_pragma = content_label, True
        elif name == "charset":
            # The standard's charset step has no "if charset is still null": it overrides a content's.
            label, need_pragma = value, False
    if need_pragma is None or need_pragma and not got_pragma:
        return None, at
    return encoding_of(label), at


def sniff_charset(head: bytes) -> Optional[str]:
    """The encoding (its WHATWG name, ``encoding_of``) a ``<meta>`` tag declares in the
    first bytes of a page, if any, as HTML's prescan takes it: comments are skipped, and so is
    every other tag, its attributes read whole (a quoted ``>`` ends none); a ``<meta>`` declares
    its ``charset``, or the charset of its ``content`` with ``http-equiv="content-type"``; a label
    the Encoding Standard does not know is none (the scan goes on); UTF-16 is UTF-8 (a page whose
    <meta> could be read as ASCII is no UTF-16), x-user-defined windows-1252."""
    text = head[:4096].decode("latin-1")
    size = len(text)
    at = text.find("<")
    while 0 <= at < size:
        if text.startswith("<!--", at):
            # (Its "-->" may reuse the "--" of "<!--": "<!-->" is a whole comment.)
            end = text.find("-->", at + 2)
            at = size if end < 0 else end + 3
        elif text[at:at + 5].lower() == "<meta" and at + 5 < size and (text[at + 5] in _SPACE or text[at + 5] == "/"):
            encoding, at = _meta_encoding(text, at + 5)
            if encoding is not None:
                if encoding in ("UTF-16LE", "UTF-16BE"):
                    return "UTF-8"
                return "windows-1252" if encoding == "x-user-defined" else encoding
        elif _TAG_START.match(text, at):
            # Any other tag: its name, then its attributes, read to its end.
            at += 1
            while at < size and text[at] not in _SPACE and text[at] != ">":
                at += 1
            while True:
                attribute, at = _attribute(text, at)
                if attribute is None:
                    break
        elif text.startswith(("<!", "</", "<?"), at):
            end = text.find(">", at + 2)
            at = size if end < 0 else end + 1
        else:
            at += 1
        at = text.find("<", at)
    return None
