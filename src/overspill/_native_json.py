"""Twin kernel ``JsonOutline``, the streaming JSON / JSON Lines structure scan
(see ``overspill._native``)."""

from __future__ import annotations


from ._buffers import LazyPattern
from ._buffers import JSON_KEY_MAX, JSON_LABEL_KEYS, BytesLike, byte_view as _byte_view, check_int as _check_int
from ._native_outline import OUTLINE_DEPTH_MAX

TYPE_CHECKING = False
if TYPE_CHECKING:  # re and typing cost start-up; the annotations are never evaluated
    import re
    from typing import Optional

__all__ = ["JSON_KEYS_MAX", "JSON_KEY_MAX", "JSON_NESTING_MAX", "JsonOutline"]

# Bytes of a JSON key or label kept: one more than are shown, so that a longer one is known
# to be cut (the outline then marks it with "…"; red team T9 f02).
_KEY_KEPT = JSON_KEY_MAX + 1
#: Keys listed per JSON entry.
JSON_KEYS_MAX = 12
#: Containers open at once beyond which a document is not outlined.
JSON_NESTING_MAX = 4096
_JSON_SIGNIFICANT = LazyPattern(rb"[^ \t\r\n]")
_JSON_STRING_STOP = LazyPattern(rb'["\\]')
_JSON_LITERAL_STOP = LazyPattern(rb'[ \t\r\n,\]}:\[{"]')
_JSON_LITERAL_START = frozenset(b"-0123456789tfn")
# The tokens one regex match takes, after any blank: an optional comma
# (group 1), then a string (2) with, if they follow, its colon (3) and a
# string (4) or literal (5) value after that (an object's member whole), or a
# literal (6), or a structural byte (7).  A literal is taken only with its
# stop byte in the same data.  The scan takes one match at a time, so the
# bytes of strings and literals are never visited one by one in Python; a
# token the data ends inside, or a byte that cannot be JSON, does not match
# and is read by the byte-wise path (``_token`` and the states of ``_scan``).
_STRING = rb'"[^"\\]*(?:\\[\s\S][^"\\]*)*"'
_LITERAL = rb'[-0-9tfn][^ \t\r\n,\]}:\[{"]*(?=[ \t\r\n,\]}:\[{"])'
_JSON_TOKEN = LazyPattern(
    rb'[ \t\r\n]*(,[ \t\r\n]*)?(?:(' + _STRING + rb')(?:[ \t\r\n]*(:)(?:[ \t\r\n]*(?:(' + _STRING + rb')|('
    + _LITERAL + rb')))?)?|(' + _LITERAL + rb')|([{}\[\],:]))'
)
# Runs the scan need not read token by token: the items of an array that is
# not reported (they are only counted, and the count is never read), and the
# members of an object that is neither reported nor lends keys or a label
# (their keys are never read), when they are scalars or containers of scalars
# two levels deep (no container in them is reported or labelled either).
# One match takes the whole run, each pattern starting where the run may: at
# a member or after a comma.  Anything else (a deeper container, a stray
# comma) ends the run and is read as usual.
_B = rb"[ \t\r\n]*"


def _containers_of(value: bytes) -> bytes:
    """An array or object whose items or member values match ``value``."""
    return (rb"(?:\[" + _B + rb"(?:" + value + rb"(?:" + _B + rb"," + _B + value + rb")*)?" + _B + rb"\]"
            rb"|\{" + _B + rb"(?:" + _STRING + _B + rb":" + _B + value + rb"(?:" + _B + rb"," + _B + _STRING + _B
            + rb":" + _B + value + rb")*)?" + _B + rb"\})")


_SCALAR = rb"(?:" + _STRING + rb"|" + _LITERAL + rb")"
_VALUE = rb"(?:" + _SCALAR + rb"|" + _containers_of(rb"(?:" + _SCALAR + rb"|" + _containers_of(_SCALAR) + rb")") + rb")"
_MEMBER = _STRING + _B + rb":" + _B + _VALUE
_JSON_ITEMS_RUN = LazyPattern(rb"(?:[ \t\r\n,]*" + _VALUE + rb")+")
_JSON_MEMBERS_RUN = LazyPattern(_B + _MEMBER + rb"(?:" + _B + rb"," + _B + _MEMBER + rb")*")
_JSON_MORE_MEMBERS_RUN = LazyPattern(rb"(?:" + _B + rb"," + _B + _MEMBER + rb")+")
_ROOT, _OBJECT, _ARRAY = 0, 1, 2


class _Frame:
    """One open container of ``JsonOutline`` (the root holds the top-level values)."""

    __slots__ = ("kind", "path", "index", "reportable", "expect_key", "key", "first_index", "last_index",
                 "count", "first_offset", "keys", "labels", "label_depth", "item", "item_index", "key_is_label",
                 "item_offset", "labelled", "collect_into", "member_in_range")

    def __init__(self, kind: int, path: tuple, reportable: bool) -> None:
        self.kind = kind
        self.path = path
        self.index = 0
        self.reportable = reportable
        self.expect_key = kind == _OBJECT
        self.key = b""
        self.key_is_label = False  # the key is one of JSON_LABEL_KEYS, in any ASCII case (within an item)
        self.first_index = -1
        self.last_index = -1
        self.count = 0
        self.first_offset = -1
        self.keys: list = []
        self.labels: list = []
        self.label_depth = 0  # 1: an array's object item; 2: an object member of one
        self.item: Optional[_Frame] = None  # the item whose label this frame may hold
        self.item_index = -1
        self.item_offset = -1
        self.labelled = False
        self.collect_into: Optional[_Frame] = None  # the array whose item keys this object lists
        self.member_in_range = False


class JsonOutline:
    """A streaming scan of a JSON document (or JSON Lines) for the structure of one part of it.

    ``feed`` takes the output's bytes in order from its start; bytes at or
    past ``omit_end`` are not read.  An item of an array (or a top-level
    value) is *omitted* when it starts in ``[omit_start, omit_end)``; so is a
    member of an object when its key does.  Containers are *reported* down
    to ``max_depth`` levels (the top-level value is level 1) along object
    members, and the top-level values themselves (the root, a sequence of
    values as in JSON Lines) with the first value's members; the items of an
    array are summed up in the array's entry, not reported one by one.  A
    container that opens before ``omit_start`` (one the omitted part may start
    in) under a reported one is reported down to ``OUTLINE_DEPTH_MAX`` levels,
    an array's item too: the list holding the omitted part may lie in an
    array's item or deeper than ``max_depth``.

    ``result()`` returns ``(valid, records, entries, dropped)``: ``valid`` is
    false once a byte could not be JSON (then nothing more is read);
    ``records`` counts the top-level values begun; ``entries`` lists, for each
    reported container with omitted items, ``(path, kind, first_index,
    last_index, count, first_offset, end_offset, keys, labels)`` -- ``path``
    the tuple of keys (and ``int`` indexes of items) from the top-level
    value (``None`` for the root),
    ``kind`` ``"object"``, ``"array"`` or ``"root"``, the first and last
    omitted index, how many, where the first starts, where the container ends
    (or ``omit_end``, if later), ``keys`` (an object's omitted keys, or the
    keys of an array's (or the root's) first omitted object item; at most ``JSON_KEYS_MAX``,
    each its raw bytes between the quotes, escapes undecoded, at most
    ``JSON_KEY_MAX + 1``: one longer than ``JSON_KEY_MAX`` was cut) and ``labels`` (for each of the
    first ``max_labels`` omitted object items that has one, ``(index,
    offset, label)``: the first string or literal, in document order, whose
    key is one of ``JSON_LABEL_KEYS``, in the item or an object member of
    it, kept as keys are; the root's are its omitted top-level values, JSON Lines records).
    Keys in ``path`` are kept as ``keys`` are.
    Entries come in the order their containers close, then the open
    ones innermost first; at most ``max_entries``, ``dropped`` counts the rest.
    When more than ``max_entries`` containers have omitted items, the
    shallower ones are kept (the first to close among equals): a container
    takes the place of the deepest entry kept (the last of those) when it is
    shallower, so a map whose members are objects keeps its own entry even
    though its members close first and would fill the list.

    :raises TypeError: wrong argument types.
    :raises ValueError: ``omit_start > omit_end``, ``max_depth`` outside 1 to
        ``OUTLINE_DEPTH_MAX``, ``max_entries`` below 1, ``max_labels`` negative.
    """

    __slots__ = ("_omit_start", "_omit_end", "_max_depth", "_max_entries", "_max_labels", "_position",
                 "_stack", "_valid", "_entries", "_depths", "_deepest", "_dropped", "_state", "_capture",
                 "_capture_frame", "_is_key")

    def __init__(self, omit_start: int, omit_end: int, max_depth: int, max_entries: int, max_labels: int) -> None:
        self._omit_start = _check_int(omit_start, "omit_start", 0)
        self._omit_end = _check_int(omit_end, "omit_end", 0)
        self._max_depth = _check_int(max_depth, "max_depth", 1)
        self._max_entries = _check_int(max_entries, "max_entries", 1)
        self._max_labels = _check_int(max_labels, "max_labels", 0)
        if self._omit_start > self._omit_end:
            raise ValueError("omit_start must not be after omit_end")
        if self._max_depth > OUTLINE_DEPTH_MAX:
            raise ValueError(f"max_depth must be at most {OUTLINE_DEPTH_MAX}, not {self._max_depth}")
        self._position = 0
        self._stack = [_Frame(_ROOT, (), True)]
        self._valid = True
        self._entries: list = []
        self._depths: list = []  # each entry's nesting depth (the root 0, the top-level value 1)
        self._deepest = 0  # the largest of _depths
        self._dropped = 0
        self._state = 0  # 0: between tokens, 1: in a string, 2: after a backslash in one, 3: in a literal
        self._capture = bytearray()
        self._capture_frame: Optional[_Frame] = None
        self._is_key = False

    def feed(self, buffer: BytesLike, /) -> None:
        """Scan the next bytes of the document.

        :raises TypeError: ``buffer`` is not a contiguous bytes-like object.
        """
        if isinstance(buffer, str):
            raise TypeError("buffer must be a bytes-like object, not str")
        with _byte_view(buffer) as view:
            base = self._position
            size = len(view)
            data = view[: max(0, min(size, self._omit_end - base))].tobytes()
        self._position = base + size
        if self._valid and data:
            self._scan(data, base)

    def _in_range(self, offset: int) -> bool:
        return self._omit_start <= offset < self._omit_end

    def _item(self, frame: _Frame, offset: int) -> bool:
        """Count an item (or member) of ``frame`` starting at ``offset``; whether it is omitted."""
        index = frame.index
        frame.index += 1
        if not (frame.reportable and self._in_range(offset)):
            return False
        if frame.count == 0:
            frame.first_index = index
            frame.first_offset = offset
        frame.last_index = index
        frame.count += 1
        return True

    def _open(self, kind: int, offset: int) -> None:
        parent = self._stack[-1]
        index = parent.index
        omitted = self._item(parent, offset) if parent.kind != _OBJECT else parent.member_in_range
        depth = len(self._stack)
        if depth > JSON_NESTING_MAX:
            self._valid = False
            return
        # A container opened before the omitted part (one that part may start
        # in) is reported deeper, and an array's item too: the list that holds
        # the omitted part may lie in an item (aws' Reservations[0].Instances)
        # or below max_depth.  The head bounds how many there are.
        spine = offset < self._omit_start and depth <= OUTLINE_DEPTH_MAX
        if parent.kind == _OBJECT:
            path = parent.path + (parent.key,)
            reportable = parent.reportable and (depth <= self._max_depth or spine)
        elif parent.kind == _ROOT:
            path = ()
            reportable = index == 0 and depth <= self._max_depth
        else:
            reportable = parent.reportable and spine
            path = parent.path + (index,) if reportable else parent.path
        frame = _Frame(kind, path, reportable)
        if kind == _OBJECT:
            # An omitted object item of an array, or an omitted top-level value
            # (a JSON Lines record), is labelled and lends the list its keys.
            if parent.kind != _OBJECT and parent.reportable and omitted:
                frame.label_depth = 1
                frame.item = frame
                frame.item_index = index
                frame.item_offset = offset
                frame.collect_into = parent if parent.count == 1 else None
            elif parent.kind == _OBJECT and parent.label_depth == 1:
                frame.label_depth = 2
                frame.item = parent
        self._stack.append(frame)

    def _close(self, kind: int, offset: int) -> None:
        frame = self._stack[-1]
        if frame.kind != kind:
            self._valid = False
            return
        self._stack.pop()
        self._emit(frame, offset + 1)

    def _emit(self, frame: _Frame, end: int) -> None:
        if not frame.reportable or frame.count == 0:
            return
        depth = 0 if frame.kind == _ROOT else len(frame.path) + 1
        if len(self._entries) >= self._max_entries:
            # Full: the deepest entries give way.  A container's members close
            # before it does, so without this a map of objects would be
            # described by its first members only and never by a line of its own.
            self._dropped += 1
            if depth >= self._deepest:
                return
            at = len(self._depths) - 1 - self._depths[::-1].index(self._deepest)
            del self._entries[at], self._depths[at]
            self._deepest = max(self._depths, default=0)
        kind = ("root", "object", "array")[frame.kind]
        self._entries.append((None if frame.kind == _ROOT else frame.path, kind, frame.first_index,
                              frame.last_index, frame.count, frame.first_offset, min(end, self._omit_end),
                              tuple(frame.keys), tuple(frame.labels)))
        self._depths.append(depth)
        self._deepest = max(self._deepest, depth)

    def _owner(self, frame: _Frame) -> Optional[_Frame]:
        """The array whose item ``frame`` (the item or its member) belongs to."""
        item = frame.item
        if item is None:
            return None
        index = len(self._stack) - (1 if frame is item else 2) - 1
        return self._stack[index] if index >= 0 else None

    def _scalar_done(self, text: bytes) -> None:
        """A string or literal value just ended in the top frame: maybe an item's label."""
        frame = self._stack[-1]
        if frame.kind != _OBJECT or not frame.key_is_label:
            return
        item = frame.item
        if item is None or item.labelled:
            return
        item.labelled = True
        owner = self._owner(frame)
        if owner is not None and len(owner.labels) < self._max_labels:
            owner.labels.append((item.item_index, item.item_offset, text))

    def _key_done(self, text: bytes) -> None:
        frame = self._stack[-1]
        frame.key = text
        # "Name" labels an item as "name" does (AWS, docker inspect): ASCII case is folded.
        frame.key_is_label = frame.label_depth != 0 and text.lower() in JSON_LABEL_KEYS
        if frame.member_in_range and len(frame.keys) < JSON_KEYS_MAX:
            frame.keys.append(text)
        into = frame.collect_into
        if into is not None and len(into.keys) < JSON_KEYS_MAX:
            into.keys.append(text)

    def _scan(self, data: bytes, base: int) -> None:
        """Read ``data`` (at ``base`` in the document) until its end or the
        first byte that cannot be JSON: strings and literals here, what lies
        between them in ``_token``."""
        size = len(data)
        i = 0
        while i < size:
            state = self._state
            if state == 0:
                i = self._tokens(data, i, base)
                if i >= size:
                    return
                i = self._token(data, i, base)  # a token cut by the end of data, or not JSON
                if i < 0:
                    return
                continue
            if state == 2:  # just after a backslash in a string: this byte is escaped
                if len(self._capture) < _KEY_KEPT:
                    self._capture.append(data[i])
                i += 1
                self._state = 1
                continue
            # In a string (1) or a literal (3): keep up to _KEY_KEPT bytes of it.
            found = (_JSON_STRING_STOP if state == 1 else _JSON_LITERAL_STOP).search(data, i)
            stop = size if found is None else found.start()
            room = _KEY_KEPT - len(self._capture)
            if room > 0:
                self._capture += data[i : min(stop, i + room)]
            if found is None:
                return
            if state == 3:  # the literal ends before its stop byte
                self._state = 0
                i = stop
                self._scalar_done(bytes(self._capture))
            elif data[stop] == 92:  # a backslash: the next byte is escaped
                if len(self._capture) < _KEY_KEPT:
                    self._capture.append(92)
                self._state = 2
                i = stop + 1
            else:
                self._state = 0
                i = stop + 1
                text = bytes(self._capture)
                if self._is_key:
                    self._key_done(text)
                else:
                    self._scalar_done(text)

    def _tokens(self, data: bytes, i: int, base: int) -> int:
        """Between tokens (state 0): take whole tokens, a few per regex match
        (``_JSON_TOKEN``), as ``_token`` and the string and literal states
        would take them byte by byte; the index of the first token not taken
        (the end of ``data`` once it is read or the scan became invalid).  A
        string's or literal's bytes are sliced only when a key or a label
        needs them."""
        match = _JSON_TOKEN.match  # bound once: a LazyPattern forwards every attribute lookup
        stack = self._stack
        omit_start, omit_end = self._omit_start, self._omit_end
        items_run = _JSON_ITEMS_RUN.match
        members_run = _JSON_MEMBERS_RUN.match
        more_members_run = _JSON_MORE_MEMBERS_RUN.match
        size = len(data)
        while True:
            top = stack[-1]
            # A run's containers (two levels below the top) are opened below the nesting limit.
            if not top.reportable and len(stack) < JSON_NESTING_MAX:
                kind = top.kind
                if kind == _ARRAY:
                    run = items_run(data, i)
                elif top.collect_into is None and (top.label_depth == 0 or top.item.labelled):
                    run = (members_run if top.expect_key else more_members_run)(data, i)
                    if run is not None:
                        top.expect_key = False
                else:
                    run = None
                if run is not None:
                    i = run.end()
            found = match(data, i)
            if found is None:
                return i
            i = found.end()
            kind = top.kind
            if kind == _OBJECT and found.start(1) >= 0:  # a comma (a no-op in an array)
                top.expect_key = True
            last = found.lastindex
            if last <= 5:  # a string, maybe a member's colon and value
                start, end = found.span(2)
                offset = base + start
                if kind == _OBJECT and top.expect_key:
                    top.expect_key = False
                    if top.reportable and omit_start <= offset < omit_end:
                        top.member_in_range = self._item(top, offset)
                    else:
                        top.index += 1
                        top.member_in_range = False
                    self._key_done(data[start + 1 : min(end - 1, start + 1 + _KEY_KEPT)])
                elif kind != _OBJECT:  # an object's member was counted at its key
                    if top.reportable and omit_start <= offset < omit_end:
                        self._item(top, offset)
                    else:
                        top.index += 1
                elif top.key_is_label:
                    self._scalar_done(data[start + 1 : min(end - 1, start + 1 + _KEY_KEPT)])
                if last == 2:
                    continue
                if kind != _OBJECT:  # a colon after an item (expect_key is False after a key or value)
                    self._invalid()
                    return size
                if last == 4:  # a string value
                    if top.key_is_label:
                        start, end = found.span(4)
                        self._scalar_done(data[start + 1 : min(end - 1, start + 1 + _KEY_KEPT)])
                elif last == 5:  # a literal value
                    if top.key_is_label:
                        start, end = found.span(5)
                        self._scalar_done(data[start : min(end, start + _KEY_KEPT)])
                continue
            start = found.start(last)
            if last == 6:  # a literal
                if kind == _OBJECT:
                    if top.expect_key:
                        self._invalid()
                        return size
                    if top.key_is_label:
                        self._scalar_done(data[start : min(found.end(6), start + _KEY_KEPT)])
                    continue
                offset = base + start
                if top.reportable and omit_start <= offset < omit_end:
                    self._item(top, offset)
                else:
                    top.index += 1
                continue
            byte = data[start]
            if byte == 44:  # ,
                if kind == _OBJECT:
                    top.expect_key = True
                continue
            if byte == 58:  # :
                if kind != _OBJECT or top.expect_key:
                    self._invalid()
                    return size
                continue
            if byte == 123 or byte == 91:  # { [
                if kind == _OBJECT and top.expect_key:
                    self._invalid()
                    return size
                self._open(_OBJECT if byte == 123 else _ARRAY, base + start)
            else:  # } ]
                if kind == _ROOT:
                    self._invalid()
                    return size
                self._close(_OBJECT if byte == 125 else _ARRAY, base + start)
            if not self._valid:
                return size

    def _invalid(self) -> int:
        self._valid = False
        return -1

    def _token(self, data: bytes, i: int, base: int) -> int:
        """Between strings and literals (state 0): take the tokens up to the
        next string or literal; the index to go on from, -1 at the end of
        ``data`` or at a byte that cannot be JSON here."""
        while True:
            found = _JSON_SIGNIFICANT.search(data, i)
            if found is None:
                return -1
            i = found.start()
            byte = data[i]
            top = self._stack[-1]
            if byte == 34:  # "
                if top.kind == _OBJECT and top.expect_key:
                    top.member_in_range = self._item(top, base + i)
                    top.expect_key = False
                    self._is_key = True
                else:
                    if top.kind != _OBJECT:  # an object's member was counted at its key
                        self._item(top, base + i)
                    self._is_key = False
                self._capture = bytearray()
                self._state = 1
                return i + 1
            if byte in _JSON_LITERAL_START:
                if top.kind == _OBJECT and top.expect_key:
                    return self._invalid()
                if top.kind != _OBJECT:  # an object's member was counted at its key
                    self._item(top, base + i)
                self._capture = bytearray()
                self._state = 3
                return i  # the literal's first byte is read as part of it
            if byte == 123 or byte == 91:  # { [
                if top.kind == _OBJECT and top.expect_key:
                    return self._invalid()
                self._open(_OBJECT if byte == 123 else _ARRAY, base + i)
            elif byte == 125 or byte == 93:  # } ]
                if top.kind == _ROOT:
                    return self._invalid()
                self._close(_OBJECT if byte == 125 else _ARRAY, base + i)
            elif byte == 44:  # ,
                if top.kind == _OBJECT:
                    top.expect_key = True
            elif byte == 58:  # :
                if top.kind != _OBJECT or top.expect_key:
                    return self._invalid()
            else:
                return self._invalid()
            if not self._valid:
                return -1
            i += 1

    def result(self) -> tuple[bool, int, list, int]:
        """``(valid, records, entries, dropped)``; see the class."""
        saved = list(self._entries), list(self._depths), self._deepest, self._dropped
        for frame in reversed(self._stack):
            self._emit(frame, self._omit_end)
        entries, dropped = self._entries, self._dropped
        self._entries, self._depths, self._deepest, self._dropped = saved
        return self._valid, self._stack[0].index, entries, dropped
