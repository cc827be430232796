"""The skill tool: load a skill's SKILL.md from the host's skill folders."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and pathlib cost start-up (``overspill run`` imports every tool); never evaluated
    from collections.abc import Sequence
    from pathlib import Path
    from typing import Optional, Union

    PathArg = Union[str, "os.PathLike[str]"]

from ..store import ToolOutputStore
from ._result import ToolResult, bounded, failure

__all__ = ["available_skills", "skill"]

SKILL_FILE = "SKILL.md"
_FRONT_MATTER_BYTES = 64 * 1024


def _front_matter(path: Path) -> dict[str, str]:
    """``key: value`` pairs of a leading ``---`` block (the simple YAML skills use)."""
    with open(path, "rb") as file:
        # utf-8-sig: editors on Windows save a byte-order mark, which would hide the opening "---".
        head = file.read(_FRONT_MATTER_BYTES).decode("utf-8-sig", "replace")
    # YAML's line breaks (\n, \r\n, a lone \r), not str.splitlines(), which also breaks inside a value
    # at U+2028, \x85 or \x0c and so would cut a description short.
    lines = head.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if not lines or lines[0].strip() != "---":
        return {}
    fields: dict[str, str] = {}
    for line in lines[1:]:
        if line.strip() == "---":
            return fields
        key, separator, value = line.partition(":")
        if separator and key.strip() and not key.startswith((" ", "\t", "#")):
            fields[key.strip()] = value.strip().strip("\"'")
    return {}  # never closed: not front matter


def available_skills(roots: Sequence[PathArg]) -> dict[str, tuple[Path, str]]:
    """Skills found in ``roots`` (one folder per skill, each with a SKILL.md):
    name -> (SKILL.md path, description).  The first root to define a name wins."""
    from pathlib import Path

    found: dict[str, tuple[Path, str]] = {}
    for root in roots:
        try:
            entries = sorted(os.scandir(root), key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries:
            path = Path(entry.path) / SKILL_FILE
            if not entry.is_dir() or not path.is_file():
                continue
            try:
                fields = _front_matter(path)
            except OSError:
                continue
            name = fields.get("name") or entry.name
            found.setdefault(name, (path, fields.get("description", "")))
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
    if name not in skills:
        listing = ", ".join(sorted(skills)) or "none"
        return failure(f"unknown skill {name!r}; available skills: {listing}")
    path, description = skills[name]
    try:
        text = path.read_bytes().decode("utf-8-sig", "replace")  # a byte-order mark is no text for the model
    except OSError as error:
        return failure(f"cannot read skill {name!r}: {error.strerror}")
    header = f"[skill {name}, from {path.parent}; files it mentions are relative to that folder]\n\n"
    result = store.truncate(session_id, tool_call_id, header + text, mime="text/markdown", name=f"{name}/{SKILL_FILE}")
    return bounded(result, skill=name, path=str(path), description=description)
