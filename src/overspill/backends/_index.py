"""The local backend's listing index: which ids each session has, kept beside the managed folder.

Listing one session by reading every record costs about 30 µs per resource
of *any* session, and a busy host keeps 100,000 of them for the retention.
This index lets a listing read only its own session's records.

The pairs stay the truth; the index only proposes candidates:

* A listing loads each candidate's record from the pair and keeps it only if
  it is valid and of the session asked for, so a stale or extra entry costs
  one failed look-up and is never shown.
* A missing entry is the only way the index could mislead, so it is trusted
  only while it is known to be complete: ``state`` holds the managed folder's
  identity and ``st_mtime_ns`` as of the last complete catch-up.  Every pair
  written, renamed or removed — by this package, by another process, or by
  the peer that shares the layout — changes that time, and the next listing
  catches up: one ``scandir``, the names compared with the ids the index
  holds, only the new ids' records read, and those of known ids whose file
  was replaced since it was read.  A record edited by hand (``jq ... > tmp
  && mv tmp``, an editor's save) is a new file renamed over the old one:
  the index keeps each record's inode, which ``scandir`` gives without a
  ``stat``, and a different one means the record is read again (its session
  may have changed).
* File times tick coarsely (a jiffy, or seconds on some file systems): a
  change in the same tick as the catch-up's ``stat`` would leave the time as
  it was.  A catch-up therefore marks the index complete only when the
  folder's time is more than ``RACY_NS`` in the past (git's "racily clean"
  rule), or is older than the file system's own clock read just before the
  ``stat`` (the index lock's time, set to "now" by the same file system):
  a change after the ``stat`` then gets a later time.  Otherwise the next
  listing catches up again.
* A record that cannot be read yet (a peer still writing it) keeps the index
  incomplete, so it is looked at again by the next listing.
* A missing session list means "nothing stored" only while ``sessions/`` is
  as the last catch-up left it: ``state`` and ``ids`` also hold that folder's
  identity and time, so a list deleted, renamed or swapped by hand makes the
  next listing catch up, and that catch-up rewrites every list from ``ids``.
  The line recorded is checked, not assumed: after its own writes a catch-up
  takes ``sessions/``'s line, lets the file system's clock pass its time, and
  lists the folder; a list deleted by someone else meanwhile is written again
  (``_check_lists``).  A deletion after the check moves the time.
* Every index file is written whole to a temporary file and renamed into
  place (fsynced first when the backend is durable), under an ``flock`` that
  serialises catch-ups across processes; readers take no lock.  Each file
  ends with its line count and a CRC-32 of its own name and lines: a torn,
  truncated or foreign file, or one copied over another (``cp s-b s-a``
  changes neither the folder's time nor its inode), is detected and the
  index is rebuilt from the records.  If the index cannot
  be written (a read-only folder), listings stay correct and just catch up
  every time.

Layout, in ``location`` (``data_dir/tool-output/index``)::

    state                 folder identity + mtime at the last complete catch-up,
                          then those of ``sessions/`` as the catch-up left it
    ids                   every indexed id, its session key and its record's inode,
                          then ``sessions/`` as the catch-up that wrote it left it
    sessions/s-{session}  one session's ids (ids that are safe file names)
    sessions/h-{hash}     one session's ids (any other session id)
    lock                  serialises catch-ups
"""

from __future__ import annotations

import os
import time
from _thread import allocate_lock  # threading's Lock, without importing threading (start-up)

from .. import _files
from ..records import ID_LENGTH, Record, is_resource_id

__all__ = ["MAX_FILE_BYTES", "RACY_NS", "ListingIndex", "session_key"]

#: A folder time this close to the catch-up's clock may hide a change made in
#: the same tick; such a catch-up does not mark the index complete (unless the
#: file system's own clock has already moved past it: ``_file_system_now``).
RACY_NS = 2_000_000_000


def _file_system_now(fd: int) -> Optional[int]:
    """The file system's current time in its own granularity: ``fd``'s file
    (the index lock, beside the managed folder) touched to "now" and read back;
    None when it cannot be."""
    try:
        os.utime(fd)
        return os.fstat(fd).st_mtime_ns
    except OSError:
        return None
_VERSION = "overspill-index 3"  # 3: ``ids`` holds each record's inode
_SAFE = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_")
_JSON_NAME_LENGTH = ID_LENGTH + len(".json")

#: The largest index file read: ``ids`` takes about 100 bytes per resource,
#: so this is millions of resources; anything larger is damage, not an index.
MAX_FILE_BYTES = 256 * 1024 * 1024

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and pathlib cost start-up; annotations are never evaluated
    from collections.abc import Callable, Iterable
    from pathlib import Path
    from typing import Optional, Union

    Loader = Callable[[str], Optional[Record]]


def _read_at_most(fd: int, limit: int) -> bytes:
    """Up to ``limit`` bytes from ``fd``, across short reads."""
    pieces = []
    while limit > 0:
        piece = os.read(fd, min(limit, 1 << 20))
        if not piece:
            break
        pieces.append(piece)
        limit -= len(piece)
    return b"".join(pieces)


class _Corrupt:
    """The type of ``_CORRUPT``: an index file that exists but is not intact."""


_CORRUPT = _Corrupt()


def session_key(session_id: str) -> str:
    """The file name of a session's id list: readable when the id is a safe
    name, else a hash.  Two sessions sharing a key is harmless (listings
    check each record's session), so a short non-cryptographic hash will do."""
    if 0 < len(session_id) <= 64 and _SAFE.issuperset(session_id):
        return "s-" + session_id
    import zlib  # here, not at import: a read needs no index (start-up)

    data = session_id.encode("utf-8", "surrogatepass")
    return f"h-{zlib.crc32(data):08x}{zlib.adler32(data):08x}{len(data) & 0xFFFF:04x}"


def _crc(name: str, body: bytes) -> str:
    # The file's own name is sealed with its lines: a list copied over another
    # (``cp s-b s-a``, which changes neither the folder's time nor its inode)
    # is not intact under its new name.
    import zlib  # here, not at import: a read needs no index (start-up)

    return f"{zlib.crc32(body, zlib.crc32(name.encode() + b'/')):08x}"


def _seal(lines: list[str], name: str) -> bytes:
    """The text of the index file ``name``: a version line, ``lines``, and a
    trailer with their count and a CRC-32 of the name and the lines."""
    body = ("\n".join(lines) + "\n" if lines else "").encode("utf-8", "surrogatepass")
    return f"{_VERSION}\n".encode() + body + f"end {len(lines)} {_crc(name, body)}\n".encode()


def _unseal(data: bytes, name: str) -> Optional[list[str]]:
    """The lines of the index file ``name``, or None when it is torn,
    truncated, not ours, or sealed under another name."""
    header = _VERSION.encode() + b"\n"
    if not data.startswith(header) or not data.endswith(b"\n"):
        return None
    trailer_start = data.rfind(b"\n", 0, len(data) - 1) + 1
    if trailer_start < len(header):
        return None
    body, trailer = data[len(header) : trailer_start], data[trailer_start:-1].split(b" ")
    if len(trailer) != 3 or trailer[0] != b"end" or not trailer[1].isdigit():
        return None
    if trailer[2] != _crc(name, body).encode():
        return None
    try:
        lines = body.decode("utf-8", "surrogatepass").split("\n")[:-1]
    except UnicodeDecodeError:
        return None
    return lines if len(lines) == int(trailer[1]) else None


def _by_session(names: Iterable[str], known: dict[str, str]) -> dict[str, list[str]]:
    """The ids of ``names`` (``{id}.json``, in the order given) by their session key in ``known``."""
    lists: dict[str, list[str]] = {}
    for name in names:
        lists.setdefault(known[name], []).append(name[:ID_LENGTH])
    return lists


class ListingIndex:
    """The index of one managed folder.  See the module docstring.

    :param folder: the managed folder (the pairs).
    :param location: where the index lives; created ``0700`` on first write.
        Must not be inside ``folder``.
    :param durable: fsync index files before they replace the old ones.
    """

    def __init__(self, folder: Union[str, Path], location: Union[str, Path], *, durable: bool) -> None:
        self._folder = os.fspath(folder)
        self._location = os.fspath(location)
        self._sessions = os.path.join(self._location, "sessions")
        self._state = os.path.join(self._location, "state")
        self._all = os.path.join(self._location, "ids")
        self._durable = durable
        self._lock = allocate_lock()  # one catch-up per process at a time

    def reset_after_fork(self) -> None:
        """In a forked child: a fresh lock (the parent's may have been held by a thread that is not here)."""
        self._lock = allocate_lock()

    @property
    def location(self) -> Path:
        from pathlib import Path  # only when asked for (start-up)

        return self._location

    # ------------------------------------------------------------------ reading
    def candidates(self, session_id: Optional[str], load: Loader) -> list[str]:
        """Sorted ids that include every published resource of ``session_id``
        (of every session when None); they may include others.

        ``load`` returns an id's valid record or None; a catch-up calls it for
        ids the index does not hold yet.

        :raises OSError: the managed folder cannot be listed.
        """
        key = None if session_id is None else session_key(session_id)
        found = self._read_if_complete(key)
        if isinstance(found, list):
            return found
        with self._lock:
            return self._catch_up(key, load)

    def _folder_stamp(self) -> tuple[int, int, int]:
        info = os.stat(self._folder)
        return info.st_dev, info.st_ino, info.st_mtime_ns

    def _sessions_line(self) -> Optional[str]:
        """``sessions/``'s identity and time as a line; None when it cannot be seen."""
        try:
            info = os.stat(self._sessions)
        except OSError:
            return None
        return f"{info.st_dev} {info.st_ino} {info.st_mtime_ns}"

    @staticmethod
    def _read(path: str) -> Union[list[str], None, _Corrupt]:
        """A sealed file's lines; None when missing; ``_CORRUPT`` when not intact.

        Only a regular file is read, never through a symlink, and never more
        than its size (at most ``MAX_FILE_BYTES``): a FIFO planted here must not
        block a listing, nor a link to ``/dev/zero`` fill the memory.  Such a
        file is damaged, and the catch-up replaces it by a rename.
        """
        try:
            fd, info = _files.open_regular(path)
        except FileNotFoundError:
            return None
        except OSError:
            return _CORRUPT
        try:
            if info.st_size > MAX_FILE_BYTES:
                return _CORRUPT
            # One byte more than the size: a file that grew meanwhile is not the one sealed.
            data = _read_at_most(fd, info.st_size + 1)
        except OSError:
            return _CORRUPT
        finally:
            os.close(fd)
        lines = _unseal(data, os.path.basename(path))
        return _CORRUPT if lines is None else lines

    def _read_if_complete(self, key: Optional[str]) -> Union[list[str], None, _Corrupt]:
        """The ids under ``key`` (all when None) if the index is complete for
        the folder as it is now; None when it is not; ``_CORRUPT`` when a file
        that should be intact is not (the catch-up then rebuilds)."""
        state = self._read(self._state)
        if not isinstance(state, list):
            return state
        try:
            stamp = self._folder_stamp()
        except OSError:
            return None  # the catch-up reports it
        sessions = self._sessions_line()
        if state != [" ".join(map(str, stamp)), sessions]:
            return None
        if key is None:
            known, _, lists_line = self._known(inodes=False)
            if known is not None and lists_line != sessions:
                return None  # not the list this index's catch-ups wrote (copied from another folder?)
            ids = None if known is None else sorted(name[:ID_LENGTH] for name in known)
        else:
            ids = self._read(os.path.join(self._sessions, key))
            if ids is None:
                return []  # a session with nothing stored: catch-ups delete empty lists
        # Ids become file names: never trust one that is not well-formed.
        if not isinstance(ids, list) or not all(map(is_resource_id, ids)):
            return _CORRUPT
        return ids

    # ------------------------------------------------------------------ catching up
    def _known(self, inodes: bool = True) -> tuple[Optional[dict[str, str]], Optional[dict[str, int]], Optional[str]]:
        """Every indexed record's file name (``{id}.json``) and its session key,
        the same names and the inodes of the records read (an empty dict unless
        ``inodes``: only a catch-up compares them), and ``sessions/`` as the
        catch-up that wrote them left it; (None, None, None) when the list is
        missing or not intact.

        The file holds the count, the names, the keys in the same order, the
        inodes in the same order, then the line of ``sessions/``, so that it is
        read (and compared with the folder) by C loops: a catch-up over 100,000
        names spends its time in ``scandir``.
        """
        lines = self._read(self._all)
        if not isinstance(lines, list) or not lines or not lines[0].isdigit():
            return None, None, None
        count = int(lines[0])
        if len(lines) != 2 + 3 * count:
            return None, None, None
        names, numbers = lines[1 : 1 + count], lines[1 + 2 * count : -1]
        if not all(map(str.isdigit, numbers)):
            return None, None, None
        read = dict(zip(names, map(int, numbers))) if inodes else {}
        return dict(zip(names, lines[1 + count : 1 + 2 * count])), read, lines[-1]

    def _records(self) -> dict[str, int]:
        """The folder's ``*.json`` names and their inodes (``DirEntry.inode``: no ``stat``)."""
        with os.scandir(self._folder) as entries:
            return {entry.name: entry.inode() for entry in entries if entry.name[-5:] == ".json"}

    def _catch_up(self, key: Optional[str], load: Loader) -> list[str]:
        """Bring the index up to the folder (rebuilding it from every record when
        its id list is missing or not intact) and return the ids under ``key``."""
        lock_fd = self._acquire()
        try:
            if lock_fd is not None:
                # Another process may have caught up while this one waited.
                found = self._read_if_complete(key)
                if isinstance(found, list):
                    return found
            clock = time.time_ns()
            # The file system's "now" before the stat: a folder time older than it
            # cannot be shared by a change made after the stat.
            file_system_now = None if lock_fd is None else _file_system_now(lock_fd)
            stamp = self._folder_stamp()  # before listing: a later change moves it
            # The folder's one Python loop (and one dict look-up per name below, about half the cost
            # of a set of (name, inode) pairs); the other comparisons are C set operations.
            records = self._records()
            previous, read_inodes, lists_line = (None, None, None) if lock_fd is None else self._known()
            known = {} if previous is None else dict(previous)
            inodes = {} if read_inodes is None else dict(read_inodes)
            # Lists changed by someone other than a catch-up (deleted, renamed
            # or swapped by hand) are not caught up from: all are rewritten.
            relist = previous is not None and lists_line != self._sessions_line()
            gone = list(known.keys() - records.keys())
            for name in gone:
                del known[name]
                del inodes[name]
            complete = True
            added = []
            # New names, and known ones whose file is not the one read (replaced by a rename).
            fresh = [(name, inode) for name, inode in records.items() if inodes.get(name) != inode]
            for name, inode in sorted(fresh):
                if len(name) != _JSON_NAME_LENGTH or not is_resource_id(name[:ID_LENGTH]):
                    continue
                if name in known:
                    # Replaced (edited by hand?): read again; its session's list is rewritten without it.
                    gone.append(name)
                    del known[name]
                    del inodes[name]
                record = load(name[:ID_LENGTH])
                if record is None:
                    complete = False  # unreadable for now (a peer still writing?): look again next time
                    continue
                known[name] = session_key(record.session_id)
                inodes[name] = inode
                added.append(name)
            lists = self._new_lists(key, known, None if relist else previous, gone, added)
            if lock_fd is not None:
                wrote = previous is None or relist or bool(lists)
                # Lists left half-written keep the old id list, whose line no longer matches: the next catch-up relists.
                stored = not wrote or self._store(known, lists, rebuild=previous is None or relist)
                line, trusted, repaired = self._check_lists(lock_fd, known)
                if not stored:
                    complete = False
                elif line is not None and (wrote or repaired):
                    complete &= self._store_ids(known, inodes, line)
                elif line != lists_line:
                    trusted = False  # changed by someone else since the check above: the next catch-up relists
                settled = clock - stamp[2] > RACY_NS or (file_system_now is not None
                                                         and file_system_now > stamp[2])
                self._write_state(stamp if settled and complete and trusted else None, line)
            if key is None:
                return sorted(name[:ID_LENGTH] for name in known)
            if key in lists:
                return lists[key]
            return self._session_list(key, known, [])
        finally:
            if lock_fd is not None:
                _files.close_lock_file(lock_fd)  # also releases the flock

    def _new_lists(self, key: Optional[str], known: dict[str, str], previous: Optional[dict[str, str]],
                   gone: list[str], added: list[str]) -> dict[str, list[str]]:
        """The session lists a catch-up writes: every one, from ``known``, when
        there is no ``previous`` id list to catch up from; else those that lost
        ``gone`` names or gained ``added`` ones, and ``key``'s if it is damaged."""
        if previous is None:
            return _by_session(sorted(known), known)
        additions = _by_session(added, known)
        changed = set(additions) | {previous[name] for name in gone}
        lists = {k: self._session_list(k, known, additions.get(k, [])) for k in changed}
        if key is not None and key not in lists and not self._intact(key, known):
            lists[key] = self._session_list(key, known, [])  # repaired: it was damaged
        return lists

    def _intact(self, key: str, known: dict[str, str]) -> bool:
        """Whether ``key``'s list is readable, well-formed, and present when ``known`` has ids under it."""
        found = self._read(os.path.join(self._sessions, key))
        if found is None:
            return key not in known.values()
        return isinstance(found, list) and all(map(is_resource_id, found))

    def _session_list(self, key: str, known: dict[str, str], added: list[str]) -> list[str]:
        """The ids under ``key`` after a catch-up: its file's ids that are still
        known there, and the ids just added; from ``known`` alone when the
        file is not intact."""
        found = self._read(os.path.join(self._sessions, key))
        if isinstance(found, list) and all(map(is_resource_id, found)):
            ids = {i for i in found if known.get(i + ".json") == key}
            ids.update(added)
        else:
            ids = {name[:ID_LENGTH] for name, k in known.items() if k == key}
        return sorted(ids)

    def _acquire(self) -> Optional[int]:
        """The index's lock, held; None when the index cannot be written (then
        the catch-up still answers, from the folder alone, and writes nothing)."""
        if not _files.CAN_LOCK:  # pragma: no cover - Windows: no index, listings scan the folder
            return None
        try:
            _files.ensure_directory(self._sessions)
            fd = _files.lock_exclusive(os.path.join(self._location, "lock"))  # closed by a forked child
        except OSError:
            return None
        assert fd is not None  # it waits
        # Temporary files of a catch-up killed mid-write: no writer can be live
        # while this process holds the lock.
        try:
            for name in os.listdir(self._location):
                if name.startswith(".") and name.endswith(".tmp"):
                    _files.remove_quietly(os.path.join(self._location, name))
        except OSError:
            pass
        return fd

    # ------------------------------------------------------------------ writing
    def _replace(self, path: str, data: bytes) -> None:
        """Write ``data`` to a temporary file and rename it over ``path``."""
        directory = os.path.dirname(path)
        temporary = os.path.join(directory, f".{os.path.basename(path)}.{os.urandom(4).hex()}.tmp")
        fd = _files.create_exclusive(temporary)
        try:
            try:
                _files.write_all(fd, memoryview(data))
                if self._durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temporary, path)
        except BaseException:
            _files.remove_quietly(temporary)
            raise

    def _store(self, known: dict[str, str], lists: dict[str, list[str]], *, rebuild: bool) -> bool:
        """Rewrite the session lists in ``lists`` (and, rebuilding, remove all
        others); True when all of it was written.  The id list is written
        after ``_check_lists``, with ``sessions/`` as that check saw it."""
        try:
            for key in sorted(lists):
                path = os.path.join(self._sessions, key)
                if lists[key]:
                    self._replace(path, _seal(lists[key], key))
                else:
                    _files.remove_quietly(path)  # emptied: a missing list is an empty one
            if rebuild:
                for name in set(os.listdir(self._sessions)).difference(lists):
                    _files.remove_quietly(os.path.join(self._sessions, name))
            if self._durable:
                _files.fsync_directory(self._sessions)
        except OSError:
            return False
        return True

    def _check_lists(self, lock_fd: int, known: dict[str, str]) -> tuple[Optional[str], bool, bool]:
        """``sessions/``'s line as this catch-up leaves it (None when it cannot be
        seen); whether that line may mark the index complete; whether a list
        had to be written again.

        The line is recorded as "``sessions/`` as the catch-up left it", so a
        deletion by someone else after the relist check must not hide in it.
        The line is taken, then the file system's clock is let past its time
        (a deletion after that moves the time), then the folder is listed
        (a deletion before that is seen): a list that ``known`` needs and that
        is missing is written again from ``known``, and the whole is looked at
        once more.  One ``listdir`` of the session lists, per catch-up only.
        """
        needed = set(known.values())
        repaired = False
        for _attempt in range(3):  # someone deleting again and again: give up, not complete
            line = self._sessions_line()
            if line is None:
                return None, False, repaired
            settled = self._past(lock_fd, int(line.rsplit(" ", 1)[1]))
            try:
                missing = needed.difference(os.listdir(self._sessions))
                if not missing:
                    return line, settled, repaired
                repaired = True
                for key in sorted(missing):
                    self._replace(os.path.join(self._sessions, key), _seal(self._session_list(key, known, []), key))
                if self._durable:
                    _files.fsync_directory(self._sessions)
            except OSError:
                return None, False, repaired
        return self._sessions_line(), False, repaired

    @staticmethod
    def _past(lock_fd: int, mtime: int) -> bool:
        """Whether the file system's clock is (or, within a few of its ticks,
        gets) past ``mtime``: then a change made from now on gets a later time.
        A coarse clock (seconds) is not waited for: the caller then does not
        mark the index complete, and the next catch-up looks again."""
        for _wait in range(20):
            now = _file_system_now(lock_fd)
            if now is None:
                return False
            if now > mtime:
                return True
            time.sleep(0.001)
        return False

    def _store_ids(self, known: dict[str, str], inodes: dict[str, int], sessions: str) -> bool:
        """Write the id list (``known``'s names, their keys, their ``inodes``), with ``sessions``
        (``sessions/``'s checked line); True when written."""
        names = list(known)
        try:
            self._replace(self._all, _seal([str(len(names)), *names, *known.values(),
                                            *map(str, map(inodes.__getitem__, names)), sessions], "ids"))
        except OSError:
            return False
        return True

    def _write_state(self, stamp: Optional[tuple[int, int, int]], sessions: Optional[str]) -> None:
        """Mark the index complete for the folder at ``stamp`` and ``sessions/``
        at the line ``sessions``, or (either None) not complete."""
        try:
            if stamp is None or sessions is None:
                _files.remove_quietly(self._state)
            else:
                self._replace(self._state, _seal([" ".join(map(str, stamp)), sessions], "state"))
                if self._durable:
                    _files.fsync_directory(self._location)
        except OSError:
            pass  # not marked complete: the next listing catches up again
