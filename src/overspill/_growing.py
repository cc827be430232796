"""A background command's output as the store writes it: append, seal, finish.

``GrowingOutput`` wraps a backend's growing writer with the store's policy:
the stored copy stops at ``max_stored_bytes`` (the rest is counted, and its
true end kept in memory for the preview), the quota is made room for as the
payload grows (for the bytes up to its next check, ``Reservations``), and progress is sealed every ``SEAL_BYTES`` (256 KiB) or once
the oldest unsealed byte is ``SEAL_INTERVAL`` old (about a second of quiet),
whichever comes first.  ``write`` is called by the thread that drains the
command, ``seal_if_due`` by a timer thread; a lock keeps them apart.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Optional

from . import _kernels
from ._binary import BINARY_MIME, SNIFF_BYTES, output_is_binary
from ._store_types import TRUE_TAIL_BYTES
from .backends._seals import ENTRY_SIZE, SEAL_BYTES
from .records import Record
from .text import counted_lines

__all__ = ["SEAL_BYTES", "SEAL_INTERVAL", "GrowingOutput", "Reservations", "reservations_for"]

#: Seconds the oldest unsealed byte waits at most (plus the sealer's tick) before it is sealed.
SEAL_INTERVAL = 1.0
# Seal entries made room for at one look at the quota: a seal's entry is stored bytes too, and a
# command that writes a line now and then is sealed after each quiet second, its payload hardly
# growing (an hour of it: 3,600 entries, 86 KB, that no look of the payload's would have counted).
_SEALS_A_LOOK = 16


class Reservations:
    """The room the running outputs of one location (in this process) have
    made under the quota and not yet filled.

    A growing payload looks at the quota only when it passes another quota
    step; the bytes it writes until the next look are made room for at the
    look, and stay reserved (``GrowingOutput.reserved``) until written or the
    output ends, so that another output's look counts them: the running
    outputs together stay within ``max_total_bytes``.  A look costs one pass
    over this process's running outputs (no count of the folder per write).
    """

    def __init__(self) -> None:
        import weakref  # (only a background command pays for it)

        self._lock = threading.Lock()
        self._outputs: weakref.WeakSet[GrowingOutput] = weakref.WeakSet()

    def add(self, output: GrowingOutput) -> None:
        """Count ``output``'s reservation from now on (until it ends or is gone)."""
        with self._lock:
            self._outputs.add(output)

    def held_by_others(self, output: GrowingOutput) -> int:
        """Bytes reserved and not yet written by the running outputs other than ``output``, their
        finished records' room (``record_room``) included."""
        with self._lock:
            outputs = list(self._outputs)
        return sum(other.reserved + other.record_room for other in outputs if other is not output)


_RESERVATIONS: dict[str, Reservations] = {}
_RESERVATIONS_LOCK = threading.Lock()


def reservations_for(where: str) -> Reservations:
    """The reservations of the location ``where`` (a folder, a URL), shared by this process's stores of it."""
    with _RESERVATIONS_LOCK:
        found = _RESERVATIONS.get(where)
        if found is None:
            found = _RESERVATIONS[where] = Reservations()
        return found


class GrowingOutput:
    """One growing resource being written (see the module docstring).

    :param writer: the backend's growing writer (``write``, ``seal``,
        ``sealed``, ``size``, ``finish``, ``abort``, ``record``).
    :param cap: the most bytes stored; the rest is counted.
    :param make_room: ``make_room(size, write)``, before the payload passes
        another ``quota_step`` bytes: makes room under the store's quota for
        the ``size`` bytes about to be written (evicting what it may) and runs
        ``write(room)`` under the quota's lock with the bytes that fit (all
        ``size`` of them, or fewer when other running outputs hold the rest;
        not run when none fit); ``room``.  When fewer fit, the stored copy
        takes them and ends there, and the rest is only counted.
        ``size`` covers the bytes up to the next quota step (within ``cap``):
        those written before the next look are made room for at this one.
    :param record_bytes: the most bytes its finished record takes (the quota
        counts them besides ``cap``; see ``record_room``).
    """

    def __init__(self, writer: Any, cap: int, make_room: Callable[[int, Callable[[int], None]], int],
                 quota_step: int, record_bytes: int = 0) -> None:
        self._writer = writer
        self._cap = cap
        self._record_bytes = record_bytes
        self._make_room = make_room
        self._quota_step = quota_step
        self._lock = threading.Lock()
        self._total = 0
        self._newlines = 0
        self._last_newline = False
        self._tail = bytearray()  # the true end, once the stored copy is capped
        self._start = bytearray()  # the first SNIFF_BYTES written: whether the output is binary
        self._unsealed_since: Optional[float] = None
        self._finished: Optional[Record] = None
        self.failure: Optional[BaseException] = None  # the write error that stopped storing, if any
        # The stored size the last look at the quota made room for; 0 once the output stops storing.
        self._reserved_to = 0
        # Bytes of seal entries made room for and not yet written (``_seal``); 0 once storing stopped.
        self._seal_room = 0
        # A seal's entry write failed (``_seal``): it may be torn, so no entry may follow it.
        self._seal_torn = False

    @property
    def record(self) -> Record:
        """The running record as published (the final one once finished)."""
        return self._finished if self._finished is not None else self._writer.record

    @property
    def reserved(self) -> int:
        """Bytes made room for under the quota and not yet written, seal entries' included (0
        once storing stopped)."""
        return max(self._reserved_to - self._writer.size, 0) + self._seal_room

    @property
    def record_room(self) -> int:
        """Bytes its finished record may take beyond what its running record and seals take now
        (``writer.overhead``, which a count of the location holds): the room the quota keeps for
        it until it is finished (0 from then on, or once the resource is given up or removed)."""
        if self._finished is not None:
            return 0
        return max(self._record_bytes - self._writer.overhead, 0)

    @property
    def total(self) -> int:
        """Bytes the command wrote so far (stored or not)."""
        return self._total

    def write(self, chunk: bytes) -> None:
        """Append ``chunk`` (what fits under the cap), sealing every ``SEAL_BYTES``.

        A storage failure stops the storing, not the command: it is kept in
        ``failure``, the stored copy ends where the failed write left it (those
        bytes sealed: readable while the command runs on), and the rest is only
        counted, its true end kept (``kept_end``).
        """
        if not chunk:
            return
        with self._lock:
            if len(self._start) < SNIFF_BYTES:
                self._start += chunk[: SNIFF_BYTES - len(self._start)]
            self._total += len(chunk)
            self._newlines += _kernels.count_lines(chunk) - 1
            self._last_newline = chunk[-1] == 10
            writer = self._writer
            room = self._cap - writer.size
            tailed = room < len(chunk)  # (the chunk is in the true end: never added twice)
            if tailed:
                self._tail += chunk
                del self._tail[:-TRUE_TAIL_BYTES]
            if room <= 0:  # (also once a storage failure stopped the storing: the cap is then the size)
                return
            before = writer.size
            piece = chunk if len(chunk) <= room else chunk[:room]
            try:
                step = self._quota_step
                if before == 0 or before // step != (before + len(piece)) // step:
                    # Written under the quota's lock, once the room for it is there: two outputs
                    # never both take the same room.  The room is for the bytes up to the next
                    # step (the next look), reserved before the look so that another output's
                    # look counts them too (a look racing this one may find too little room:
                    # never too much), and for the entries that seal them (one a SEAL_BYTES, one
                    # after a quiet second): the payload never takes its own seals' room.
                    ahead = min(((before + len(piece)) // step + 1) * step, self._cap) - before
                    seals = max(ENTRY_SIZE * (ahead // SEAL_BYTES + 2) - self._seal_room, 0)
                    held_to = self._reserved_to  # what the last look made room for
                    self._reserved_to = before + ahead
                    payload = [-1]  # (until the look runs write_within)

                    def write_within(fits: int) -> None:
                        # (When fewer than asked fit, the seals' room comes first, the stored copy
                        # takes the rest and ends.)
                        payload[0] = ahead if fits >= ahead + seals else max(fits - seals, 0)
                        self._seal_room += fits - payload[0]
                        self._reserved_to = before + payload[0]
                        writer.write(memoryview(piece if payload[0] >= len(piece) else piece[:payload[0]]))

                    try:
                        self._make_room(ahead + seals, write_within)
                    except BaseException:
                        if payload[0] < 0:
                            # The look failed and made no room: this output holds only what the last
                            # one made (``_stop_storing``'s seal may take that, never this look's ask).
                            self._reserved_to = held_to
                        raise
                    granted = max(payload[0], 0)
                    if granted < ahead:
                        # The quota has no more room that can be made (other running outputs hold it):
                        # the stored copy ends with what fitted (none of this chunk, when nothing did),
                        # and from there the output is only counted and its true end kept, as past
                        # max_stored_bytes.
                        self._cap = before + granted
                        self._reserved_to = self._cap
                        if granted < len(piece) and not tailed:
                            self._tail += chunk
                            del self._tail[:-TRUE_TAIL_BYTES]
                            tailed = True
                        if granted == 0:
                            return
                else:
                    writer.write(memoryview(piece))
                if writer.size - writer.sealed >= SEAL_BYTES:
                    self._seal()
                    self._unsealed_since = None
                elif self._unsealed_since is None:
                    self._unsealed_since = time.monotonic()
            except Exception as error:  # noqa: BLE001 - kept and reported; the command goes on
                self._stop_storing(error)
                if not tailed:
                    # Part of it may not be stored: the true end starts no later than this chunk
                    # (a part that is stored overlaps the stored copy's end, which the preview allows).
                    self._tail += chunk
                    del self._tail[:-TRUE_TAIL_BYTES]

    def _stop_storing(self, error: BaseException) -> None:
        """A write or a seal failed: the stored copy ends at what the writer holds (the bytes that
        reached the payload, a failed write's first part too), and from here the output is only
        counted and its true end kept, as past ``max_stored_bytes``; under ``_lock``.

        Those bytes are sealed now (after a failed write, or a failed look at the quota, a seal's
        own included): nothing seals them later (``seal_now`` and the timer stop here), and a
        command may run on for ever, so left unsealed they would never be served while it runs.
        The writer counts, and its seal's CRC covers, exactly the bytes the file holds
        (``LocalWriter.write``).  Not after a failed entry write (``_seal_torn``): that entry may
        be torn, and one written after it would be out of step with the entries' size (never
        served: ``SealChain.feed``).
        """
        self.failure = error
        if not self._seal_torn:
            try:
                self._seal(stopping=True)
            except Exception:  # noqa: BLE001 - the first failure is the one reported; the sealed prefix stays
                pass
        self._unsealed_since = None  # (nothing is sealed from here: the finished record covers the rest)
        self._reserved_to = self._seal_room = 0
        self._cap = self._writer.size

    def _seal(self, *, stopping: bool = False) -> None:
        """Seal the unsealed bytes once the quota has room for the seal's entry (made room for
        ``_SEALS_A_LOOK`` entries at a time, as payload is); under ``_lock``.  With no room for
        it, the stored copy ends at what it holds: the bytes past the last seal are served once
        the output finishes (its record's checksums cover them), and the rest is only counted.

        :param stopping: the stored copy ends here (``_stop_storing``): the room its payload made
            and will not fill is the entry's first, so that a look at the quota (perhaps what
            failed) is needed only when that room is too small.
        :raises OSError: as the writer's ``seal`` (``_seal_torn`` is then set), or the quota's look
            (no entry written: sealing again is safe).
        """
        writer = self._writer
        if writer.size == writer.sealed:
            return
        if stopping:
            # Room this output already holds under the quota (``reserved``): moved, not taken again.
            self._seal_room += max(self._reserved_to - writer.size, 0)
            self._reserved_to = writer.size
        if self._seal_room < ENTRY_SIZE:
            # The room this output's payload took at its last look and has not written yet is not
            # in the location's count: asked for again with the entries', only the rest is theirs.
            unwritten = max(self._reserved_to - writer.size, 0)

            def take(fits: int) -> None:
                self._seal_room += max(fits - unwritten, 0)

            self._make_room(unwritten + ENTRY_SIZE * _SEALS_A_LOOK, take)
            if self._seal_room < ENTRY_SIZE:
                self._cap = self._reserved_to = writer.size
                return
        before = writer.overhead
        try:
            writer.seal()
        except BaseException:
            self._seal_torn = True
            raise
        self._seal_room = max(self._seal_room - (writer.overhead - before), 0)

    def seal_if_due(self, now: float) -> None:
        """Seal the unsealed bytes when the oldest of them is ``SEAL_INTERVAL`` old."""
        since = self._unsealed_since
        if since is None or now - since < SEAL_INTERVAL:
            return
        self.seal_now()

    def seal_now(self) -> None:
        """Seal the unsealed bytes now (an answer about to show the output so far); never raises
        (a failure is kept in ``failure``, as ``write``'s)."""
        # Under the lock: a write under way (its bytes already counted in ``total``) ends first, so
        # what the caller saw counted is sealed too.
        with self._lock:
            if self._unsealed_since is None or self._finished is not None or self.failure is not None:
                return
            try:
                self._seal()
            except Exception as error:  # noqa: BLE001 - kept and reported; the command goes on
                self._stop_storing(error)
            self._unsealed_since = None

    def lines(self) -> int:
        """Lines written as ``wc -l`` counts them, plus one for a final line without a newline."""
        return counted_lines(self._newlines, self._total, self._last_newline)

    def kept_end(self) -> Optional[bytes]:
        """The output's true end (at most 1 MiB) when the stored copy holds only its start."""
        return bytes(self._tail) if self._total > self._writer.size else None

    def finish(self, exit_code: int) -> Record:
        """Seal the rest and republish the record with the exit code: an ordinary resource from now on.

        :raises OSError: the record could not be republished.
        """
        with self._lock:
            if self._finished is None:
                size = self._writer.size
                capture = (self._total, size) if self._total > size else None
                # Binary output is said to be so, as a foreground command's (read shows it in hex,
                # and MCP serves its exact bytes) once its first bytes are all known.
                mime = BINARY_MIME if output_is_binary(bytes(self._start)) else None
                self._reserved_to = self._seal_room = 0  # (its size is final: what was not written is no longer held)
                self._finished = self._writer.finish(exit_code, capture=capture, lines=self.lines(), mime=mime)
            return self._finished

    def give_up(self) -> None:
        """Never finish the resource (its record could not be republished): this process lets go of
        its files and reads it as lost from now on, its sealed prefix readable; never raises."""
        from ._owner import give_up

        with self._lock:
            self._reserved_to = self._seal_room = 0
            self._record_bytes = 0  # (its running record stays as it is)
            self._writer.release()
            give_up(self._writer.id)

    def abort(self) -> None:
        """Remove the resource; never raises."""
        with self._lock:
            self._reserved_to = self._seal_room = 0
            self._record_bytes = 0
            self._writer.abort()
