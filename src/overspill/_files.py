"""The file operations the store is allowed: exclusive creation, no symlink
followed, regular files only, and atomic publication by rename.

Every function here raises ``OSError``; the store turns those into its own
errors, so that this module stays a thin, testable layer over ``os``.
"""

from __future__ import annotations

import errno
import os
import stat
from _thread import allocate_lock  # threading's Lock, without importing threading (start-up)

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up; annotations are never evaluated
    from pathlib import Path
    from typing import Optional, Union

    PathText = Union[str, "os.PathLike[str]"]

__all__ = [
    "CAN_LOCK",
    "FILE_MODE",
    "DIRECTORY_MODE",
    "create_exclusive",
    "check_owned_directory",
    "close_lock_file",
    "ensure_directory",
    "folder_text",
    "fsync_directory",
    "lock_exclusive",
    "open_lock_file",
    "open_regular",
    "remove_quietly",
    "write_all",
]

FILE_MODE = 0o600
# Whether there is an ``flock`` (fcntl is imported only where a lock is taken: start-up).
CAN_LOCK = os.name == "posix"
DIRECTORY_MODE = 0o700
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
# A FIFO planted under a resource's name must not block the reader's open().
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def folder_text(path: PathText) -> str:
    """``str(pathlib.Path(path))`` without importing pathlib (and with it ``re``
    and ``urllib``, most of a cold start): empty and ``.`` parts and trailing
    slashes dropped, ``..`` kept, a leading ``//`` kept as POSIX says."""
    text = os.fspath(path)
    if (type(text) is str and text and "//" not in text and "/./" not in text and not text.startswith("./")
            and text[-1] != "/" and not text.endswith("/.") and text != "." and os.sep == "/" and not os.altsep):
        return text  # already in that form (every path the store builds): no split and join
    if os.sep != "/" or os.altsep:  # pragma: no cover - not POSIX
        from pathlib import Path

        return str(Path(text))
    root = "//" if text.startswith("//") and not text.startswith("///") else "/" if text.startswith("/") else ""
    return root + "/".join(part for part in text.split("/") if part and part != ".") or "."


def _parents(path: PathText, count: int) -> list[str]:
    """The first ``count`` of ``pathlib.Path(path).parents``, as text."""
    found: list[str] = []
    current = folder_text(path)
    while len(found) < count:
        parent = os.path.dirname(current) or "."
        if parent == current:
            break
        found.append(parent)
        current = parent
    return found


def ensure_directory(path: PathText, owned: int = 2) -> None:
    """Create ``path`` (and parents) as ``0700`` if missing; it must be a directory.

    The last ``owned`` components are the store's own folders: each must be a
    real directory (never a symlink, which would send payloads elsewhere and
    let cleanup delete there) owned by this user, and is tightened to ``0700``.
    Each is checked before anything is made inside it, so a symlink there is
    refused before it is followed (the folders above them are the caller's:
    made as ``os.makedirs`` makes them).

    :raises OSError: not a directory, a symlink (``ELOOP``), or owned by
        another user (``EPERM``).
    """
    try:
        # The usual case, an existing folder of ours, without makedirs' mkdir and
        # the EEXIST it raises and catches (most of a store's construction).
        check_owned_directory(path, owned)
        return
    except OSError:
        pass  # missing, or refused: made and checked as below, which raises as it always did
    ours = list(reversed([path, *_parents(path, max(owned - 1, 0))]))
    above = os.path.dirname(folder_text(ours[0])) or "."
    if above != folder_text(ours[0]):  # (a root has nothing above it)
        os.makedirs(above, mode=DIRECTORY_MODE, exist_ok=True)
    if os.mkdir in os.supports_dir_fd and os.stat in os.supports_dir_fd and _NOFOLLOW:
        _make_owned_at(above, ours, path)
    else:  # pragma: no cover - no *at() calls: by path, each checked before the next is made in it
        for component in ours:
            try:
                os.mkdir(component, DIRECTORY_MODE)  # never follows a symlink in the last place
            except FileExistsError:
                pass
            if _check_component(component, os.lstat(component), component is path):
                os.chmod(component, DIRECTORY_MODE)
    check_owned_directory(path, owned)


def _make_owned_at(above: str, ours: list[PathText], path: PathText) -> None:
    """Make the store's own folders ``ours`` (outermost first) one inside the other from the
    folder ``above`` them, through directory descriptors: each component is made (``mkdirat``,
    which never follows a symlink), looked at (``fstatat`` without following), checked as
    :func:`check_owned_directory` checks it, and only then opened (``O_NOFOLLOW``, the same
    inode) to make the next one in.  No symlink put in their place, before or during, is
    followed."""
    fd = os.open(above, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        for component in ours:
            name = os.path.basename(folder_text(component))
            try:
                os.mkdir(name, DIRECTORY_MODE, dir_fd=fd)
            except FileExistsError:
                pass
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            loose = _check_component(component, info, component is path)
            inner = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = inner
            opened = os.fstat(fd)
            if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
                raise OSError(errno.EAGAIN, "replaced while it was made, refused as the store's folder",
                              str(component))
            if loose:
                os.fchmod(fd, DIRECTORY_MODE)
    finally:
        os.close(fd)


def _check_component(component: PathText, info: os.stat_result, last: bool) -> bool:
    """Refuse one of the store's own folders (``info``: its ``lstat``; ``last``: the
    innermost) that is a symlink, not a directory or another user's; return whether
    it is to be tightened to ``0700`` (it is ours and open to others)."""
    if stat.S_ISLNK(info.st_mode):
        raise OSError(errno.ELOOP, "a symlink, refused as the store's folder", str(component))
    if not stat.S_ISDIR(info.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "not a directory", str(component))
    if not last and info.st_mode & stat.S_ISVTX and info.st_uid in (0, os.geteuid()):
        # A sticky shared folder above the store's own (/tmp, for a folder made
        # by mkdtemp): nobody else can rename or remove what is in it, and it
        # is not ours to tighten (as root, 0700 would lock every other user out).
        return False
    if info.st_uid != os.geteuid():
        raise PermissionError(errno.EPERM, "owned by another user, refused as the store's folder",
                              str(component))
    return bool(stat.S_IMODE(info.st_mode) & 0o077)


def check_owned_directory(path: PathText, owned: int = 2) -> None:
    """Check (and tighten) the last ``owned`` components of an existing ``path``.

    :raises OSError: as for :func:`ensure_directory`; ``FileNotFoundError``
        when a component is missing.
    """
    parents = _parents(path, max(owned - 1, 0))
    for component in reversed([path, *parents]):
        if _check_component(component, os.lstat(component), component is path):
            os.chmod(component, DIRECTORY_MODE)


def create_exclusive(path: PathText) -> int:
    """A new ``0600`` file opened for writing; ``FileExistsError`` if the name is taken."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, FILE_MODE)


def open_regular(path: PathText) -> tuple[int, os.stat_result]:
    """Open an existing regular file for reading, never through a symlink.

    :raises OSError: missing, a symlink (``ELOOP``), or not a regular file.
    """
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(0, "not a regular file", str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def write_all(fd: int, data: memoryview) -> None:
    """Write every byte of ``data``, across short writes."""
    while data:
        written = os.write(fd, data)
        data = data[written:]


def fsync_directory(path: PathText) -> None:
    """Make renames and unlinks in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | _CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_quietly(path: PathText) -> int:
    """Unlink ``path`` if it exists; return the bytes freed (0 when already gone)."""
    try:
        size = os.lstat(path).st_size
        os.unlink(path)
    except FileNotFoundError:
        return 0
    return size


# Descriptors of lock files (``flock``) this process has open.  A fork copies
# them into the child, and a flock belongs to the open file, not to a thread
# or a process: the copy of a lock another thread held at the fork would stay
# held for the child's whole life (every cleanup busy, every listing catch-up,
# usage update or eviction waiting on it for ever).  The child closes its
# copies.  Opening and closing happen under a guard that a fork waits for, so
# no fork falls between an open and its registration, or a removal and its close.
_LOCK_FDS: set[int] = set()
_LOCK_GUARD = allocate_lock()


# What opening a lock file's name gives when something other than a regular
# file was planted there: a symlink (``O_NOFOLLOW``), a socket, a directory.
_NOT_A_FILE = (errno.ELOOP, errno.ENXIO, errno.EISDIR)
# Replacements of a damaged lock file tried before giving up (another process
# may be replacing it at the same time: each then opens what is there).
_REPLACE_TRIES = 4


def open_lock_file(path: PathText) -> int:
    """Open (creating it ``0600``) the lock file at ``path``, never through a
    symlink, for an ``flock``; a forked child closes its copy.  Close it with
    :func:`close_lock_file`.

    Only a regular file is kept open (``index/usage`` is also read and written
    in place).  A FIFO, socket or symlink planted at ``path`` is damage, as in
    the listing index's files: it is opened without blocking, refused, and
    replaced by an empty regular file by a rename (the usage total is then
    recounted from the folder); a directory there is removed when empty, else
    renamed aside with what it holds (``_move_folder_aside``), and the file made.

    :raises OSError: the file cannot be opened or replaced.
    """
    for _ in range(_REPLACE_TRIES):
        with _LOCK_GUARD:
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC | _NONBLOCK, FILE_MODE)
            except OSError as error:
                if error.errno not in _NOT_A_FILE:
                    raise
            else:
                try:
                    regular = stat.S_ISREG(os.fstat(fd).st_mode)
                except BaseException:
                    os.close(fd)
                    raise
                if regular:
                    _LOCK_FDS.add(fd)
                    return fd
                os.close(fd)
        _replace_damaged(path)
    raise OSError(errno.EIO, "a non-regular file keeps replacing the lock file", os.fspath(path))


def lock_exclusive(path: PathText, *, wait: bool = True, within: Optional[float] = None) -> Optional[int]:
    """The lock file at ``path`` (:func:`open_lock_file`), open and exclusively
    ``flock``-ed; None when ``wait`` is false and another holder has it.  Where
    there is no ``flock`` (not POSIX) the file is only opened.  Close it with
    :func:`close_lock_file`.

    With ``within`` (seconds), a wait that lasts longer raises ``OSError``
    (``EBUSY``) saying so: ``flock`` has no timeout, so the lock is then asked
    for without blocking, again and again, a little less often each time
    (from 1 ms to 50 ms).

    The lock is on the file at ``path`` when this returns: a repair of a
    damaged lock file (:func:`open_lock_file`) renames a new file into place,
    and a lock taken on the one it replaced would exclude nobody.

    :raises OSError: the file cannot be opened, locked or replaced.
    """
    if not CAN_LOCK:  # pragma: no cover - not POSIX
        return open_lock_file(path)
    import fcntl  # here, not at import: a read takes no lock (start-up)

    for _ in range(_REPLACE_TRIES):
        fd = open_lock_file(path)
        try:
            if wait and within is not None:
                _flock_within(fd, within, path)
            else:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except OSError as error:
            close_lock_file(fd)
            if not wait and error.errno in _HELD:
                return None
            raise
        except BaseException:
            close_lock_file(fd)
            raise
        try:
            held, there = os.fstat(fd), os.lstat(path)
        except FileNotFoundError:
            there = None
        except BaseException:
            close_lock_file(fd)
            raise
        if there is not None and (held.st_dev, held.st_ino) == (there.st_dev, there.st_ino):
            return fd
        close_lock_file(fd)  # replaced while it was being locked: lock the one there now
    raise OSError(errno.EIO, "the lock file keeps being replaced", os.fspath(path))


# What a non-blocking ``flock`` gives when another holder has the lock.
_HELD = (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)


def _flock_within(fd: int, seconds: float, path: PathText) -> None:
    """``flock(fd, LOCK_EX)``, waiting at most ``seconds`` for another holder.

    :raises OSError: ``EBUSY`` when it was held all that time.
    """
    import fcntl
    import time

    deadline = time.monotonic() + seconds
    pause = 0.001
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as error:
            if error.errno not in _HELD:
                raise
        if time.monotonic() >= deadline:
            raise OSError(errno.EBUSY, f"the lock {os.fspath(path)} stayed held by another process for "
                                       f"{seconds:g} s")
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _replace_damaged(path: PathText) -> None:
    """Put an empty regular file in place of the non-regular one at ``path``,
    by a rename (never following a symlink there, never truncating a regular
    file another process just put in its place); a directory there is cleared
    from the name (``_move_folder_aside``) for the next open to create the file.

    :raises OSError: the folder cannot be written.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return  # gone: the next open creates it
    if stat.S_ISREG(info.st_mode):
        return  # another process replaced it first
    folder, name = os.path.split(os.fspath(path))
    if stat.S_ISDIR(info.st_mode):
        _move_folder_aside(path, folder, name)
        return  # the next open creates the file
    temporary = os.path.join(folder, f".{name}.{os.urandom(4).hex()}.tmp")
    os.close(create_exclusive(temporary))
    try:
        os.rename(temporary, path)
    except FileNotFoundError:
        # A listing index catch-up (which holds the index's lock, not this file's) removed the
        # temporary file as a killed write's; the caller looks at ``path`` again.
        remove_quietly(temporary)
    except BaseException:
        remove_quietly(temporary)
        raise


def _move_folder_aside(path: PathText, folder: str, name: str) -> None:
    """Clear a lock file's name taken by a directory: removed when empty, else renamed to
    ``.{name}.{8 hex}.damaged`` beside it, with what it holds (nothing is deleted; no
    sweep or catch-up matches that name, so it is left alone as any stranger's file is).

    :raises OSError: it can be neither removed nor renamed.
    """
    try:
        os.rmdir(path)
        return
    except FileNotFoundError:
        return  # another process cleared it first
    except OSError as error:
        if error.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
    try:
        os.rename(path, os.path.join(folder, f".{name}.{os.urandom(4).hex()}.damaged"))
    except FileNotFoundError:
        pass  # another process moved it first


def close_lock_file(fd: int) -> None:
    """Close a descriptor of :func:`open_lock_file` (releasing its lock)."""
    with _LOCK_GUARD:
        _LOCK_FDS.discard(fd)
        os.close(fd)


def _close_inherited_locks() -> None:
    global _LOCK_GUARD
    for fd in _LOCK_FDS:
        try:
            os.close(fd)
        except OSError:
            pass
    _LOCK_FDS.clear()
    _LOCK_GUARD = allocate_lock()  # the parent's was held (by the fork) when it was copied


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=lambda: _LOCK_GUARD.acquire(), after_in_parent=lambda: _LOCK_GUARD.release(),
                        after_in_child=_close_inherited_locks)
