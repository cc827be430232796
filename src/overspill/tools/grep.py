"""The grep tool: search files (ripgrep when present) or a stored output."""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Optional, Union

from ..errors import OverspillError
from ..store import ToolOutputStore
from ._result import MAX_LINE_LENGTH, ToolResult, bounded, failure

__all__ = ["grep"]

_SKIPPED_FOLDERS = {".git", ".hg", ".svn"}
_SNIFF_BYTES = 8192
# How far around a match in a stored output its line is looked for.
_LINE_WINDOW = 8 * MAX_LINE_LENGTH
PathArg = Union[str, "os.PathLike[str]", None]


def _ripgrep() -> Optional[str]:
    return shutil.which("rg")


def _cut(line: str) -> str:
    return line if len(line) <= MAX_LINE_LENGTH else line[:MAX_LINE_LENGTH] + "… [line cut]"


def grep(store: ToolOutputStore, session_id: str, tool_call_id: str, pattern: str, *, path: str = ".",
         resource: Optional[str] = None, glob: Optional[str] = None, ignore_case: bool = False,
         max_matches: int = 100, cwd: PathArg = None) -> ToolResult:
    """Search files under ``path``, or the stored output ``resource``, for a regex.

    File results are ``file:line:text``; resource results are
    ``offset:text``, the byte offset of the line to give ``read``.  Each line
    is cut at ``MAX_LINE_LENGTH``; at most ``max_matches`` are listed, with a
    count of the rest.  Files are searched with ``rg`` when it is on PATH,
    else in Python, skipping ``.git`` and binary files.

    :param glob: only files whose path or name matches this pattern.
    :param cwd: the folder a relative ``path`` is searched from (the host's choice).
    """
    if not isinstance(pattern, str) or not pattern:
        return failure("pattern must be a non-empty string")
    if isinstance(max_matches, bool) or not isinstance(max_matches, int) or max_matches < 1:
        return failure("max_matches must be a positive integer")
    if glob is not None and not isinstance(glob, str):
        return failure("glob must be a string")
    flags = re.IGNORECASE if ignore_case else 0
    try:
        regex = re.compile(pattern, flags)
    except re.error as error:
        return failure(f"invalid pattern {pattern!r}: {error}")
    found = _Matches(max_matches)
    if resource is not None:
        problem = _search_resource(store, session_id, resource, pattern, flags, found)
    else:
        if not isinstance(path, str) or not path:
            return failure("path must be a non-empty string")
        root = Path(cwd or ".") / path
        if not root.exists():
            return failure(f"no such file or folder: {path}")
        problem = _search_files(root, path, regex, pattern, glob, ignore_case, cwd, found)
    if problem is not None:
        return problem
    if not found.total:
        return ToolResult(f"no matches for {pattern!r}", False, False, None, {"matches": 0})
    rest = found.total - len(found.lines)
    text = "\n".join(found.lines)
    if rest:
        text += f"\n[{rest} more matches not shown; narrow the pattern, path or glob]"
    return bounded(store.truncate(session_id, tool_call_id, text), matches=found.total)


class _Matches:
    """The first ``limit`` result lines (cut to MAX_LINE_LENGTH) and a count of all."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.lines: list[str] = []
        self.total = 0

    def add(self, line: str) -> None:
        self.total += 1
        if len(self.lines) < self.limit:
            self.lines.append(_cut(line))


def _search_resource(store: ToolOutputStore, session_id: str, uri: object, pattern: str,
                     flags: int, found: _Matches) -> Optional[ToolResult]:
    try:
        # MULTILINE: ^ and $ anchor at the lines of the output, as they do in a file search.
        regex = re.compile(pattern.encode("utf-8", "surrogateescape"), flags | re.MULTILINE)
    except re.error as error:
        return failure(f"invalid pattern {pattern!r}: {error}")
    try:
        with store.view(session_id, uri) as (_, data):  # type: ignore[arg-type]
            line_end = -1
            for match in regex.finditer(data):
                if match.start() < line_end:
                    continue  # one result per line
                window_start = max(match.start() - _LINE_WINDOW, 0)
                before = bytes(data[window_start : match.start()])
                newline = before.rfind(b"\n")
                start = window_start + newline + 1 if newline >= 0 else window_start
                if newline < 0 and window_start > 0:
                    start = match.start()  # a very long line: read from the match
                after = bytes(data[match.start() : match.start() + _LINE_WINDOW])
                ends = after.find(b"\n")
                line_end = match.start() + (ends if ends >= 0 else len(after))
                line = bytes(data[start:line_end]).decode("utf-8", "replace")
                found.add(f"{start}:{line}")
                if match.end() > line_end:
                    line_end = match.end()
    except OverspillError as error:
        return failure(str(error))
    return None


def _walk(root: Path) -> Iterator[tuple[Path, bool]]:
    """Regular files under ``root``, each with whether it was given by name.

    FIFOs, devices and sockets are never yielded (opening one can block for
    ever: a FIFO without a writer, ``/proc/self/fd/0``); symlinks inside the
    tree are not followed, as ``rg`` does not follow them.
    """
    try:
        info = os.stat(root)  # the path the caller named is followed
    except OSError:
        return
    if stat.S_ISREG(info.st_mode):
        yield root, True
        return
    if not stat.S_ISDIR(info.st_mode):
        return
    for folder, folders, files in os.walk(root):
        folders[:] = sorted(name for name in folders if name not in _SKIPPED_FOLDERS)
        for name in sorted(files):
            file = Path(folder) / name
            try:
                if stat.S_ISREG(os.lstat(file).st_mode):
                    yield file, False
            except OSError:
                continue  # vanished: not a match


def _open_regular(file: Path, named: bool) -> BinaryIO:
    """``file`` opened for reading if it is still a regular file (it may have been
    replaced since it was listed): O_NONBLOCK so that a FIFO put in its place
    cannot block the open, and fstat decides.

    :raises OSError: not a regular file, or it cannot be opened.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
    if not named:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(file, flags)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise OSError(f"{file} is not a regular file")
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def _search_files(root: Path, shown_root: str, regex: re.Pattern[str], pattern: str, glob: Optional[str],
                  ignore_case: bool, cwd: PathArg, found: _Matches) -> Optional[ToolResult]:
    ripgrep = _ripgrep()
    if ripgrep is not None:
        return _ripgrep_search(ripgrep, shown_root, pattern, glob, ignore_case, cwd, found)
    base = Path(cwd or ".")
    for file, named in _walk(root):
        shown = os.path.relpath(file, base) if not os.path.isabs(shown_root) else str(file)
        if glob and not (fnmatch.fnmatch(file.name, glob) or fnmatch.fnmatch(Path(shown).as_posix(), glob)):
            continue
        try:
            with _open_regular(file, named) as handle:
                if b"\0" in handle.read(_SNIFF_BYTES):
                    continue
                handle.seek(0)
                for number, raw in enumerate(handle, 1):
                    line = raw.decode("utf-8", "replace").rstrip("\r\n")
                    if regex.search(line):
                        found.add(f"{Path(shown).as_posix()}:{number}:{line}")
        except OSError:
            continue  # unreadable or vanished: not a match
    return None


def _ripgrep_search(ripgrep: str, shown_root: str, pattern: str, glob: Optional[str], ignore_case: bool,
                    cwd: PathArg, found: _Matches) -> Optional[ToolResult]:
    # Search what the Python fallback searches: hidden and ignored files too, never .git.
    command = [ripgrep, "--line-number", "--with-filename", "--no-heading", "--color=never", "--sort=path",
               "--hidden", "--no-ignore", "--no-messages", "--glob=!.git", "--glob=!.hg", "--glob=!.svn"]
    if ignore_case:
        command.append("--ignore-case")
    if glob:
        command.append(f"--glob={glob}")
    command += ["--regexp", pattern, "--", shown_root]
    completed = subprocess.run(command, cwd=cwd, capture_output=True, timeout=300)
    if completed.returncode not in (0, 1):
        reason = completed.stderr.decode("utf-8", "replace").strip().splitlines()
        return failure(f"rg failed: {reason[-1] if reason else completed.returncode}")
    for line in completed.stdout.decode("utf-8", "replace").splitlines():
        found.add(line.removeprefix("./"))
    return None
