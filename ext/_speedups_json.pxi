# Included by _speedups.pyx: the streaming JSON outline (the twin's overspill/_native_json.py).

cdef enum:
    J_ROOT = 0
    J_OBJECT = 1
    J_ARRAY = 2

ctypedef struct _JFrame:
    int kind
    bint reportable
    bint expect_key
    bint member_in_range
    bint labelled
    bint key_is_label
    bint collect
    int label_depth
    Py_ssize_t index
    Py_ssize_t first_index
    Py_ssize_t last_index
    Py_ssize_t count
    Py_ssize_t first_offset
    Py_ssize_t item_index
    Py_ssize_t item_offset
    Py_ssize_t key_length
    uint8_t key[KEY_CAP]


# JSON_LABEL_KEYS as C strings (kept alive by _LABEL_KEYS), for a check per key without Python objects.
_LABEL_KEYS = tuple(sorted(JSON_LABEL_KEYS))
cdef const uint8_t *_LABEL_KEY_BYTES[16]
cdef Py_ssize_t _LABEL_KEY_LENGTHS[16]
cdef Py_ssize_t _LABEL_KEY_COUNT = len(_LABEL_KEYS)
assert _LABEL_KEY_COUNT <= 16
for _index, _key in enumerate(_LABEL_KEYS):
    _LABEL_KEY_BYTES[_index] = <const uint8_t *>PyBytes_AS_STRING(_key)
    _LABEL_KEY_LENGTHS[_index] = len(_key)


cdef inline bint _is_label_key(const uint8_t *key, Py_ssize_t length) noexcept:
    """Whether ``key`` is one of JSON_LABEL_KEYS (all lower case) in any ASCII case, as
    ``bytes.lower()`` folds it in the twin: "Name" labels an item as "name" does."""
    cdef Py_ssize_t k, i
    cdef uint8_t byte
    cdef const uint8_t *label
    for k in range(_LABEL_KEY_COUNT):
        if _LABEL_KEY_LENGTHS[k] != length:
            continue
        label = _LABEL_KEY_BYTES[k]
        for i in range(length):
            byte = key[i]
            if 65 <= byte <= 90:  # A-Z
                byte += 32
            if byte != label[i]:
                break
        else:
            return True
    return False


cdef extern from *:
    int __builtin_ctz(unsigned int x) nogil


# '"' and '\\' as nibble tables for osp_set_mask32 (high nibbles 2 and 5: one bit each, exact).
cdef uint8_t _QUOTE_LOW[16]
cdef uint8_t _QUOTE_HIGH[16]
for _index in range(16):
    _QUOTE_LOW[_index] = (1 if _index == 0x2 else 0) | (2 if _index == 0xC else 0)
    _QUOTE_HIGH[_index] = 1 if _index == 0x2 else (2 if _index == 0x5 else 0)


cdef class JsonOutline:
    """A streaming scan of a JSON document for the structure of one part of it; see _native.JsonOutline.

    Frames are C structs (one per open container); the Python objects of a
    reported frame (its path, keys, labels) live in lists indexed by depth.
    The scan's states are the module-level _json_* functions below, which
    take the scanner: cdef inline functions are direct calls, where methods
    would go through the vtable.
    """

    cdef Py_ssize_t _omit_start, _omit_end, _max_depth, _max_entries, _max_labels, _position
    cdef _JFrame *_frames
    cdef Py_ssize_t _depth, _allocated, _dropped, _deepest
    cdef bint _valid, _is_key, _capturing
    cdef int _state  # 0: between values, 1: in a string, 2: after its backslash, 3: in a literal
    cdef uint8_t _capture[KEY_CAP]
    cdef Py_ssize_t _capture_length
    cdef list _entries, _depths, _paths, _keys, _labels

    def __cinit__(self, *args, **kwargs):
        self._frames = NULL

    def __init__(self, omit_start, omit_end, max_depth, max_entries, max_labels):
        self._omit_start = _check_int(omit_start, "omit_start", 0)
        self._omit_end = _check_int(omit_end, "omit_end", 0)
        self._max_depth = _check_int(max_depth, "max_depth", 1)
        self._max_entries = _check_int(max_entries, "max_entries", 1)
        self._max_labels = _check_int(max_labels, "max_labels", 0)
        if self._omit_start > self._omit_end:
            raise ValueError("omit_start must not be after omit_end")
        if self._max_depth > DEPTH_CAP:
            raise ValueError(f"max_depth must be at most {DEPTH_CAP}, not {self._max_depth}")
        free(self._frames)
        self._allocated = 16
        self._frames = <_JFrame *>malloc(self._allocated * sizeof(_JFrame))
        if self._frames == NULL:
            raise MemoryError()
        self._depth = 0
        self._position = 0
        self._valid = True
        self._state = 0
        self._dropped = 0
        self._capture_length = 0
        self._is_key = False
        self._capturing = False
        self._entries = []
        self._depths = []  # each entry's frame depth (the root 0); _deepest is their largest
        self._deepest = 0
        self._paths = [()]
        self._keys = [[]]
        self._labels = [[]]
        _json_init_frame(&self._frames[0], J_ROOT, True)

    def __dealloc__(self):
        free(self._frames)

    cdef int _open(self, int kind, Py_ssize_t offset) except -1:
        cdef _JFrame *parent = &self._frames[self._depth]
        cdef Py_ssize_t index = parent.index, depth = self._depth + 1
        cdef bint omitted, reportable, spine
        cdef _JFrame *grown
        cdef _JFrame *frame
        omitted = _json_item(self, parent, offset) if parent.kind != J_OBJECT else parent.member_in_range
        if depth > NESTING_CAP:
            self._valid = False
            return 0
        # A container opened before the omitted part is reported deeper, an array's item too (its
        # index in the path): the list holding the omitted part may lie in one; see _native.JsonOutline.
        spine = offset < self._omit_start and depth <= DEPTH_CAP
        if parent.kind == J_OBJECT:
            reportable = parent.reportable and (depth <= self._max_depth or spine)
            path = self._paths[self._depth] + ((<const uint8_t *>parent.key)[:parent.key_length],) if reportable else None
        elif parent.kind == J_ROOT:
            reportable = index == 0 and depth <= self._max_depth
            path = ()
        else:
            reportable = parent.reportable and spine
            path = self._paths[self._depth] + (index,) if reportable else None
        if depth >= self._allocated:
            grown = <_JFrame *>realloc(self._frames, 2 * self._allocated * sizeof(_JFrame))
            if grown == NULL:
                raise MemoryError()
            self._frames = grown
            self._allocated *= 2
            parent = &self._frames[self._depth]
        frame = &self._frames[depth]
        _json_init_frame(frame, kind, reportable)
        if kind == J_OBJECT:
            # An omitted object item of an array, or an omitted top-level value (a JSON Lines
            # record), is labelled and lends the list its keys; see _native.JsonOutline.
            if parent.kind != J_OBJECT and parent.reportable and omitted:
                frame.label_depth = 1
                frame.item_index = index
                frame.item_offset = offset
                frame.collect = parent.count == 1
            elif parent.kind == J_OBJECT and parent.label_depth == 1:
                frame.label_depth = 2
        self._depth = depth
        while len(self._paths) <= depth:
            self._paths.append(None)
            self._keys.append(None)
            self._labels.append(None)
        self._paths[depth] = path
        self._keys[depth] = [] if reportable or frame.collect else None
        self._labels[depth] = [] if reportable else None
        return 0

    cdef int _scan(self, const uint8_t *data, Py_ssize_t size, Py_ssize_t base) except -1:
        # Each state's function returns where the scan goes on (size: at the next feed, or never
        # once the document is invalid).
        cdef Py_ssize_t i = 0
        while i < size:
            if self._state == 2:
                _json_take(self, &data[i], 1)
                i += 1
                self._state = 1
            elif self._state == 1:
                i = _json_string(self, data, i, size)
            elif self._state == 3:
                i = _json_literal(self, data, i, size)
            else:
                while i < size and (data[i] == 32 or data[i] == 10 or data[i] == 13 or data[i] == 9):
                    i += 1
                if i < size:
                    i = _json_structural(self, data, i, size, base)
        return 0

    def feed(self, buffer, /):
        """Scan the next bytes of the document.

        :raises TypeError: ``buffer`` is not a contiguous bytes-like object.
        """
        cdef Py_buffer buf
        cdef Py_ssize_t size, take, base
        if isinstance(buffer, str):
            raise TypeError("buffer must be a bytes-like object, not str")
        _bytes_of(buffer, &buf)
        try:
            size = buf.len
            base = self._position
            take = max(0, min(size, self._omit_end - base))
            self._position = base + size
            if self._valid and take:
                self._scan(<const unsigned char *>buf.buf, take, base)
        finally:
            PyBuffer_Release(&buf)

    def result(self):
        """``(valid, records, entries, dropped)``; see _native.JsonOutline."""
        cdef Py_ssize_t depth
        saved = list(self._entries), list(self._depths), self._deepest, self._dropped
        for depth in range(self._depth, -1, -1):
            _json_emit(self, depth, self._omit_end)
        entries, dropped = self._entries, self._dropped
        self._entries, self._depths, self._deepest, self._dropped = saved
        return self._valid, self._frames[0].index, entries, dropped


cdef inline void _json_init_frame(_JFrame *frame, int kind, bint reportable) noexcept:
    frame.kind = kind
    frame.reportable = reportable
    frame.expect_key = kind == J_OBJECT
    frame.member_in_range = False
    frame.labelled = False
    frame.collect = False
    frame.label_depth = 0
    frame.index = 0
    frame.first_index = -1
    frame.last_index = -1
    frame.count = 0
    frame.first_offset = -1
    frame.item_index = -1
    frame.item_offset = -1
    frame.key_length = 0
    frame.key_is_label = False


cdef inline bint _json_item(JsonOutline self, _JFrame *frame, Py_ssize_t offset) noexcept:
    """Counts the frame's next item; True if it is reported (it begins inside the omitted range)."""
    cdef Py_ssize_t index = frame.index
    frame.index += 1
    if not (frame.reportable and self._omit_start <= offset < self._omit_end):
        return False
    if frame.count == 0:
        frame.first_index = index
        frame.first_offset = offset
    frame.last_index = index
    frame.count += 1
    return True


cdef int _json_emit(JsonOutline self, Py_ssize_t depth, Py_ssize_t end) except -1:
    """The entry of a closed (or, at the end, still open) reported frame, if it has items in range."""
    cdef _JFrame *frame = &self._frames[depth]
    cdef Py_ssize_t at
    if not frame.reportable or frame.count == 0:
        return 0
    if len(self._entries) >= self._max_entries:
        # Full: the deepest entries give way (the last of them), so a map whose members
        # (closing first) fill the list still gets its own entry; see _native.JsonOutline.
        self._dropped += 1
        if depth >= self._deepest:
            return 0
        at = len(self._depths) - 1
        while self._depths[at] != self._deepest:
            at -= 1
        del self._entries[at]
        del self._depths[at]
        self._deepest = max(self._depths) if self._depths else 0
    kind = ("root", "object", "array")[frame.kind]
    self._entries.append((None if frame.kind == J_ROOT else self._paths[depth], kind, frame.first_index,
                          frame.last_index, frame.count, frame.first_offset, min(end, self._omit_end),
                          tuple(self._keys[depth]), tuple(self._labels[depth])))
    self._depths.append(depth)
    if depth > self._deepest:
        self._deepest = depth
    return 0


cdef int _json_scalar_done(JsonOutline self) except -1:
    """A scalar value ended: the value of a label key labels its array item (once)."""
    cdef _JFrame *frame = &self._frames[self._depth]
    cdef Py_ssize_t item, owner
    if frame.kind != J_OBJECT or frame.label_depth == 0 or not frame.key_is_label:
        return 0
    item = self._depth if frame.label_depth == 1 else self._depth - 1
    if self._frames[item].labelled:
        return 0
    self._frames[item].labelled = True
    owner = item - 1
    labels = self._labels[owner]
    if len(labels) < self._max_labels:
        labels.append((self._frames[item].item_index, self._frames[item].item_offset,
                       (<const uint8_t *>self._capture)[:self._capture_length]))
    return 0


cdef int _json_key_done(JsonOutline self) except -1:
    """A key ended: it becomes the frame's current key, and is listed if its member is reported."""
    cdef _JFrame *frame = &self._frames[self._depth]
    memcpy(frame.key, self._capture, self._capture_length)
    frame.key_length = self._capture_length
    # Decided once per key, in C: a scalar's check is then a flag.
    frame.key_is_label = frame.label_depth != 0 and _is_label_key(frame.key, frame.key_length)
    if frame.member_in_range or frame.collect:
        text = (<const uint8_t *>self._capture)[:self._capture_length]
        if frame.member_in_range and len(self._keys[self._depth]) < KEYS_CAP:
            self._keys[self._depth].append(text)
        if frame.collect and len(self._keys[self._depth - 1]) < KEYS_CAP:
            self._keys[self._depth - 1].append(text)
    return 0


cdef inline void _json_take(JsonOutline self, const uint8_t *data, Py_ssize_t count) noexcept:
    cdef Py_ssize_t room = KEY_CAP - self._capture_length
    if not self._capturing:  # only keys and the values of label keys are ever looked at
        return
    if count > room:
        count = room
    if count > 0:
        memcpy(self._capture + self._capture_length, data, count)
        self._capture_length += count


cdef inline Py_ssize_t _json_string(JsonOutline self, const uint8_t *data, Py_ssize_t i, Py_ssize_t size) except -1:
    """Inside a string from data[i]: up to its end or its next escape."""
    cdef Py_ssize_t stop = i, near = min(size, i + 16)
    cdef uint32_t mask
    # A short string (most keys) byte by byte, a longer one 32 bytes at a time.
    while stop < near and data[stop] != 34 and data[stop] != 92:
        stop += 1
    if stop == near:
        while stop + 32 <= size:
            mask = osp_set_mask32(&data[stop], _QUOTE_LOW, _QUOTE_HIGH)
            if mask:
                stop += __builtin_ctz(mask)
                break
            stop += 32
        else:
            while stop < size and data[stop] != 34 and data[stop] != 92:
                stop += 1
    _json_take(self, &data[i], stop - i)
    if stop == size:
        return size
    if data[stop] == 92:
        _json_take(self, &data[stop], 1)
        self._state = 2
        return stop + 1
    self._state = 0
    if self._is_key:
        _json_key_done(self)
    else:
        _json_scalar_done(self)
    return stop + 1


cdef inline Py_ssize_t _json_literal(JsonOutline self, const uint8_t *data, Py_ssize_t i, Py_ssize_t size) except -1:
    """Inside a number, true, false or null from data[i]: up to the byte after it."""
    cdef Py_ssize_t stop = i
    while stop < size and not _JSON_LITERAL_STOPS[data[stop]]:
        stop += 1
    _json_take(self, &data[i], stop - i)
    if stop == size:
        return size
    self._state = 0
    _json_scalar_done(self)
    return stop


cdef inline Py_ssize_t _json_invalid(JsonOutline self, Py_ssize_t size) noexcept:
    self._valid = False
    return size


cdef inline Py_ssize_t _json_structural(JsonOutline self, const uint8_t *data, Py_ssize_t i, Py_ssize_t size,
                                        Py_ssize_t base) except -1:
    """The byte data[i] between values (not whitespace): a string, a container, a separator or a literal."""
    cdef uint8_t byte = data[i]
    cdef _JFrame *top = &self._frames[self._depth]
    if byte == 34:
        if top.kind == J_OBJECT and top.expect_key:
            top.member_in_range = _json_item(self, top, base + i)
            top.expect_key = False
            self._is_key = True
        else:
            if top.kind != J_OBJECT:
                _json_item(self, top, base + i)
            self._is_key = False
        self._capturing = self._is_key or (top.kind == J_OBJECT and top.key_is_label)
        self._capture_length = 0
        self._state = 1
    elif byte == 123 or byte == 91:
        if top.kind == J_OBJECT and top.expect_key:
            return _json_invalid(self, size)
        self._open(J_OBJECT if byte == 123 else J_ARRAY, base + i)
        if not self._valid:
            return size
    elif byte == 125 or byte == 93:
        if top.kind == J_ROOT or top.kind != (J_OBJECT if byte == 125 else J_ARRAY):
            return _json_invalid(self, size)
        self._depth -= 1
        _json_emit(self, self._depth + 1, base + i + 1)
    elif byte == 44:
        if top.kind == J_OBJECT:
            top.expect_key = True
    elif byte == 58:
        if top.kind != J_OBJECT or top.expect_key:
            return _json_invalid(self, size)
    elif _JSON_LITERAL_STARTS[byte]:
        if top.kind == J_OBJECT:
            if top.expect_key:
                return _json_invalid(self, size)
        else:
            _json_item(self, top, base + i)
        self._capturing = top.kind == J_OBJECT and top.key_is_label
        self._capture_length = 0
        self._state = 3
        return i
    else:
        return _json_invalid(self, size)
    return i + 1


cdef uint8_t _JSON_LITERAL_STOPS[256]
cdef uint8_t _JSON_LITERAL_STARTS[256]
for _byte in range(256):
    _JSON_LITERAL_STOPS[_byte] = _byte in b" \t\r\n,]}:[{\""
    _JSON_LITERAL_STARTS[_byte] = _byte in b"-0123456789tfn"
