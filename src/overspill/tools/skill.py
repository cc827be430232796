"""The skill tool: load a skill's SKILL.md from the host's skill folders."""

from __future__ import annotations

import codecs
import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and pathlib cost start-up (``overspill run`` imports every tool); never evaluated
    from collections.abc import Iterator, Sequence
    from pathlib import Path
    from typing import BinaryIO, Optional, Union

    PathArg = Union[str, "os.PathLike[str]"]

from .._arguments import metadata_string
from .._frontend import one_line, printable, whole_characters
from ..store import ToolOutputStore
from ._front_matter import front_matter
from ._result import ToolResult, bounded, failure

__all__ = ["available_skills", "skill"]

SKILL_FILE = "SKILL.md"
_FRONT_MATTER_BYTES = 64 * 1024
# What the skill reads of its SKILL.md at a time: a large file streams into the store in these.
_READ_BYTES = 256 * 1024


def _front_matter(path: Path) -> dict[str, str]:
    """The scalars of the SKILL.md's front matter (``_front_matter.front_matter``)."""
    with open(path, "rb") as file:
        # utf-8-sig: editors on Windows save a byte-order mark, which would hide the opening "---".
        return front_matter(file.read(_FRONT_MATTER_BYTES).decode("utf-8-sig", "replace"))


def _skill_name(text: str) -> str:
    """A skill's name as the model is shown it and calls it: one line (``one_line``: each run of
    whitespace, line breaks included, one space) with each byte that is not UTF-8 as U+FFFD
    (``whole_characters``) and each character that is not printable escaped (``printable``:
    ``\\x1b`` for ESC, as every tool's error line shows it).  The names found and the name asked for
    both go through it, so a listed name loads the skill as shown, and so does the name as its
    front matter writes it."""
    return printable(whole_characters(one_line(text)))


def available_skills(roots: Sequence[PathArg]) -> dict[str, tuple[Path, str]]:
    """Skills found in ``roots`` (one folder per skill, each with a SKILL.md):
    name (``_skill_name`` of its front matter's, else of its folder's) -> (SKILL.md
    path, description).  The first root to define a name wins; within a root, the
    folder named as the skill, else the first by folder name."""
    from pathlib import Path

    found: dict[str, tuple[Path, str]] = {}
    for root in roots:
        try:
            entries = list(os.scandir(root))
        except OSError:
            continue
        skills = []
        for entry in entries:
            path = Path(entry.path) / SKILL_FILE
            if not entry.is_dir() or not path.is_file():
                continue
            try:
                fields = _front_matter(path)
            except OSError:
                continue
            folder = _skill_name(entry.name)
            name = _skill_name(fields.get("name", "")) or folder
            if not name:
                continue  # a folder named by whitespace alone, and no name: nothing a model could call
            skills.append((name != folder, entry.name, name, path, fields.get("description", "")))
        # Within a root, a skill's own folder (named as the skill) wins over another folder whose
        # front matter claims its name; then folders in name order.
        for _, _, name, path, description in sorted(skills):
            found.setdefault(name, (path, description))
    return found


def skill(store: ToolOutputStore, session_id: str, tool_call_id: str, name: str, *,
          roots: Optional[Sequence[PathArg]]) -> ToolResult:
    """Load the SKILL.md of skill ``name``; an unknown name lists the available ones.

    :param roots: the skill folders (the host's choice); each holds a folder
        per skill with a SKILL.md whose front matter gives ``name`` and
        ``description``.
    """
    if not isinstance(name, str) or not name.strip():
        return failure("name must be a non-empty string")
    if not roots:
        return failure("no skills are available: no skill folders are configured")
    if isinstance(roots, (str, os.PathLike)):
        roots = [roots]
    skills = available_skills(roots)
    asked, name = name, _skill_name(name)
    if name not in skills:
        listing = ", ".join(sorted(skills)) or "none"
        return failure(f"unknown skill {asked!r}; available skills: {listing}")
    path, description = skills[name]
    # The folder (and a name taken from it) may be a name that is not UTF-8: shown with U+FFFD,
    # as no answer can carry surrogateescape's lone surrogates; and one with control characters is
    # shown escaped, as the name is.
    folder = printable(whole_characters(str(path.parent)))
    header = f"[skill {name}, from {folder}; files it mentions are relative to that folder]\n\n"
    try:
        file = open(path, "rb")
    except OSError as error:
        return failure(f"cannot read skill {name!r}: {error.strerror}")
    with file:
        try:
            # Streamed, as any large output is: a SKILL.md of any size is never held whole.  The
            # record's name is metadata: a skill's name too long for a record is shortened, not a failure.
            result = store.truncate_stream(session_id, tool_call_id, _stored_text(header, file),
                                           mime="text/markdown", name=metadata_string(f"{name}/{SKILL_FILE}"))
        except _Unreadable as unreadable:
            return failure(f"cannot read skill {name!r}: {unreadable.error.strerror}")
    return bounded(result, skill=name, path=str(path), description=description)


class _Unreadable(Exception):
    """The SKILL.md's own read error, told apart from the store's (a ``StorageError`` is an
    ``OSError`` too) while the file is streamed into the store."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


def _stored_text(header: str, file: BinaryIO) -> Iterator[bytes]:
    """``header`` then ``file``'s text, as UTF-8 chunks of about ``_READ_BYTES``: the bytes a whole
    read gave, decoded from UTF-8 (a byte-order mark is no text for the model; each invalid sequence
    as U+FFFD, wherever a read cuts it) and encoded again.

    :raises _Unreadable: reading the file failed.
    """
    yield header.encode("utf-8")  # (whole_characters: nothing it cannot encode)
    decoder = codecs.getincrementaldecoder("utf-8-sig")("replace")
    while True:
        try:
            data = file.read(_READ_BYTES)
        except OSError as error:
            raise _Unreadable(error) from None
        text = decoder.decode(data, final=not data)
        if text:
            yield text.encode("utf-8")
        if not data:
            return
