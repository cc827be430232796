"""The local folder's growing resource: a background command's output, readable while it runs.

Files, beside the ordinary pair: ``{id}.txt`` (the payload, append-only),
``{id}.json`` (published at once with ``"state": "running"``, the owner and
no size) and ``{id}.seal`` (the seal entries of ``_seals``).  ``finish`` seals
the rest, republishes the record with the size, line count, exit code and the
ordinary checksums (an ordinary resource from then on) and removes the seal
file.  The payload's writer lock is held from creation to ``finish``, as for
any writer.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Optional

from .. import _files, _kernels
from .._owner import Owner
from ..records import CHECKSUM_CHUNK, Record, Resource, uri_for
from ._seals import seal_entry
from .local import _LocalWriter

__all__ = ["GrowingLocalWriter"]


class GrowingLocalWriter(_LocalWriter):
    """Appends to a published running resource, seals its progress, and finishes it."""

    def __init__(self, directory: Path, resource_id: str, durable: bool, live: Any, usage: Any, *,
                 session_id: str, tool_call_id: str, mime: str, name: Optional[str], owner: Owner,
                 process: Optional[tuple[int, int]]) -> None:
        super().__init__(directory, resource_id, durable, live, usage)
        self._seal_fd = -1
        self._sealed = 0
        self._seal_crc = 0  # CRC-32 of the bytes after ``_sealed``, from memory as they were written
        try:
            self._seal_fd = _files.create_exclusive(self.seal_path)
            self._running = Record(Resource(uri_for(resource_id), mime, 0, name), session_id, tool_call_id,
                                   time.time_ns() // 1_000_000, None, CHECKSUM_CHUNK, None, None, "running",
                                   owner, process)
            self._put_record(self._running)
        except BaseException:
            self.abort()
            raise

    @property
    def seal_path(self) -> Path:
        return self._directory / f"{self._id}.seal"

    @property
    def sealed(self) -> int:
        """Bytes sealed so far (readable by everyone)."""
        return self._sealed

    @property
    def record(self) -> Record:
        """The running record, as published at the start."""
        return self._running

    def write(self, data: memoryview, /) -> None:
        super().write(data)
        self._seal_crc = _kernels.crc32(data, self._seal_crc)

    def seal(self) -> None:
        """Seal what was written since the last seal (nothing to do when nothing was)."""
        if self._size == self._sealed:
            return
        _files.write_all(self._seal_fd, memoryview(seal_entry(self._id, self._sealed, self._size, self._seal_crc)))
        self._sealed = self._size
        self._seal_crc = 0

    def finish(self, exit_code: int, *, capture: Optional[tuple[int, int]] = None,
               lines: Optional[int] = None) -> Record:
        """Seal the rest and republish the record as an ordinary resource that says how the command ended.

        :raises OSError: the record could not be republished (the running one stays).
        """
        self.seal()
        checksums = self._checksums.finish()
        if self._durable:
            os.fsync(self._fd)
        running = self._running
        record = Record(Resource(running.resource.uri, running.resource.mime, self._size, running.resource.name),
                        running.session_id, running.tool_call_id, running.created_ms, checksums,
                        CHECKSUM_CHUNK, capture, lines, "exited", running.owner, running.process, exit_code)
        written = self._put_record(record)
        self._close_seals()
        try:
            _files.remove_quietly(self.seal_path)
        except OSError:
            pass  # an orphan seal file beside an exited record is never read; cleanup removes it
        fd, self._fd = self._fd, -1
        os.close(fd)  # releases the writer lock: the resource is complete
        self._done()
        if self._usage is not None:
            self._usage.add(self._size + written)
        return record

    def _close_seals(self) -> None:
        if self._seal_fd >= 0:
            try:
                os.close(self._seal_fd)
            except OSError:
                pass
            self._seal_fd = -1

    def abort(self) -> None:
        """Remove the payload, the record and the seals; never raises."""
        self._close_seals()
        try:
            _files.remove_quietly(self.seal_path)
        except OSError:
            pass
        super().abort()
