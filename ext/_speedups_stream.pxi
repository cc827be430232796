# Included by _speedups.pyx: the streaming byte cap (the twin's overspill/_native_stream.py).

cdef class StreamCap:
    """A streaming byte cap: retains at most ``max_bytes`` and counts everything.

    See _native.StreamCap for the contract.  Both buffers grow with what is
    fed, up to their share of ``max_bytes``; the tail is a ring once full.
    """

    cdef Py_ssize_t _max_bytes, _head_cap, _ring_cap
    cdef Py_ssize_t _head_len, _head_alloc, _ring_len, _ring_alloc, _ring_pos
    cdef Py_ssize_t _total_bytes, _newline_count
    cdef unsigned char *_head
    cdef unsigned char *_ring
    cdef str _keep

    def __cinit__(self, *args, **kwargs):
        self._head = NULL
        self._ring = NULL

    def __init__(self, max_bytes, *, keep="head"):
        self._max_bytes = _check_int(max_bytes, "max_bytes", 1)
        if not isinstance(keep, str):
            raise TypeError(f"keep must be a str, not {type(keep).__name__}")
        if keep not in _KEEP_MODES:
            raise ValueError(f"keep must be 'head' or 'head_tail', not {keep!r}")
        # The mode's own constant: a Cython str attribute refuses subclasses of str.
        self._keep = "head" if keep == "head" else "head_tail"
        self._head_cap = self._max_bytes if keep == "head" else self._max_bytes - self._max_bytes // 2
        self._ring_cap = self._max_bytes - self._head_cap

    def __dealloc__(self):
        free(self._head)
        free(self._ring)

    cdef int _reserve(self, unsigned char **buffer, Py_ssize_t *allocated, Py_ssize_t needed,
                      Py_ssize_t cap) except -1:
        """Grow a buffer geometrically to hold `needed` bytes, never past `cap`."""
        cdef Py_ssize_t size = allocated[0]
        cdef unsigned char *grown
        if needed <= size:
            return 0
        size = max(needed, min(max(size * 2, 4096), cap))
        grown = <unsigned char *>realloc(buffer[0], size)
        if grown == NULL:
            raise MemoryError()
        buffer[0] = grown
        allocated[0] = size
        return 0

    cdef int _feed(self, const unsigned char *data, Py_ssize_t size) except -1:
        cdef Py_ssize_t room, take, first
        # Counted first: _newlines releases the GIL for a large chunk, and another thread may feed
        # this cap meanwhile.  Everything below reads and updates the state with the GIL held and
        # no call that could release it, so each feed's update is whole and the caps hold.
        cdef Py_ssize_t newlines = _newlines(data, size, 1, -1)
        self._total_bytes += size
        self._newline_count += newlines
        room = self._head_cap - self._head_len
        if room > 0:
            take = min(room, size)
            self._reserve(&self._head, &self._head_alloc, self._head_len + take, self._head_cap)
            memcpy(self._head + self._head_len, data, take)
            self._head_len += take
            data += take
            size -= take
        if size == 0 or self._ring_cap == 0:
            return 0
        if size > self._ring_cap:
            data += size - self._ring_cap
            size = self._ring_cap
        if self._ring_len < self._ring_cap:
            # Still filling: append until full; only then does it wrap.
            take = min(size, self._ring_cap - self._ring_len)
            self._reserve(&self._ring, &self._ring_alloc, self._ring_len + take, self._ring_cap)
            memcpy(self._ring + self._ring_len, data, take)
            self._ring_len += take
            self._ring_pos = self._ring_len % self._ring_cap
            data += take
            size -= take
        if size:
            first = min(size, self._ring_cap - self._ring_pos)
            memcpy(self._ring + self._ring_pos, data, first)
            memcpy(self._ring, data + first, size - first)
            self._ring_pos = (self._ring_pos + size) % self._ring_cap
        return 0

    def feed(self, chunk, /):
        """Count ``chunk`` and retain what the cap allows.

        :raises TypeError: ``chunk`` is not a contiguous bytes-like object.
        """
        cdef Py_buffer buf
        if isinstance(chunk, str):
            raise TypeError("chunk must be a bytes-like object, not str")
        if isinstance(chunk, bytes):
            self._feed(<const unsigned char *>PyBytes_AS_STRING(chunk), PyBytes_GET_SIZE(chunk))
            return
        _bytes_of(chunk, &buf)
        try:
            if buf.len:
                self._feed(<const unsigned char *>buf.buf, buf.len)
        finally:
            PyBuffer_Release(&buf)

    @property
    def max_bytes(self):
        return self._max_bytes

    @property
    def keep(self):
        return self._keep

    @property
    def head(self):
        """The retained start of the stream."""
        return self._head[:self._head_len] if self._head_len else b""

    @property
    def tail(self):
        """The retained end of the stream (always empty for ``keep="head"``)."""
        if self._ring_len == 0:
            return b""
        if self._ring_len < self._ring_cap:
            return self._ring[:self._ring_len]
        return self._ring[self._ring_pos:self._ring_cap] + self._ring[:self._ring_pos]

    @property
    def total_bytes(self):
        return self._total_bytes

    @property
    def total_lines(self):
        """Lines in everything fed, counted as ``count_lines`` would."""
        return self._newline_count + 1

    @property
    def truncated(self):
        return self._total_bytes > self._head_len + self._ring_len

    def value(self):
        """The retained bytes: the head, then the tail."""
        return self.head + self.tail

    def __repr__(self):
        return (f"StreamCap(max_bytes={self._max_bytes}, keep={self._keep!r}, "
                f"total_bytes={self._total_bytes}, truncated={self.truncated})")
