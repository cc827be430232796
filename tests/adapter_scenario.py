"""The scenario every framework adapter is driven through, by that framework's own scripted model.

``Script`` is the model's mind, free of any framework: given what the last tool
call returned it chooses the next call.  A test's scripted model (the
framework's own test model) asks it for each turn and translates.  The path:
call ``big`` (200,000 lines), take the URI and offset from the marker, ``read``
page after page to the end, then ``grep`` the stored output, then answer.
"""

from __future__ import annotations

import importlib
import os
import re
from typing import Any, Optional

import pytest

LINES = 200_000
#: What the big tool returns: 200,000 numbered lines (about 1.3 MB, 26 pages of read).
BIG = "".join(f"{n}\n" for n in range(LINES))
SMALL = "a small result\nof two lines"
NEEDLE = "123456"
#: Enough turns for the whole scenario.
MAX_TURNS = 100

MARKER = re.compile(r'read\(resource="(tool-output://[0-9A-Za-z]+)", offset=(\d+)\)')
# The read tool's closing hint when more follows: "[N more bytes of URI: read again with offset=K to continue]".
HINT = re.compile(r"\n\n\[(\d+) more bytes of (tool-output://[0-9A-Za-z]+): read again with offset=(\d+) to continue\]$")

# CI sets OVERSPILL_REQUIRE_ADAPTERS=1: a framework that cannot be imported is a failure there, not a skip.
_REQUIRED = os.environ.get("OVERSPILL_REQUIRE_ADAPTERS", "") not in ("", "0")


# The scenario's tools as plain functions: each test makes them its framework's tools.
def big() -> str:
    """Return a large output."""
    return BIG


def small() -> str:
    """Return a small output."""
    return SMALL


def broken() -> str:
    """Fail."""
    raise RuntimeError("the disk is on fire")


def table() -> dict:
    """Return a large JSON value."""
    return {"rows": [[n, f"row {n}"] for n in range(20_000)]}


TOOLS = (big, small, broken, table)


def expected_paging(store: Any) -> dict[str, dict[str, Any]]:
    """``read`` and ``grep`` as ``overspill.tools.schemas`` defines them for ``store``, narrowed to stored
    outputs (no ``path``): name -> function spec."""
    from overspill.tools import schemas
    from overspill.tools.schemas import stored_only

    found = {spec["function"]["name"]: stored_only(spec["function"]) for spec in schemas(limits=store.limits())
             if spec["function"]["name"] in ("read", "grep")}
    for function in found.values():
        assert "path" not in function["parameters"]["properties"] and "resource" in function["parameters"]["required"]
    return found


#: A file in the working folder the paging tools must never show (``write_secret``), and its content.
SECRET_FILE = "secret.txt"
SECRET = "the launch code is 0451-ZEBRA"


def write_secret(folder: Any) -> None:
    """Put ``SECRET_FILE`` in ``folder`` (the test makes it the working folder)."""
    (folder / SECRET_FILE).write_text(SECRET + "\n")


def file_probes() -> list[tuple[str, dict[str, Any]]]:
    """Calls of read and grep that would show ``SECRET_FILE`` if the paging tools read files."""
    return [("read", {"path": SECRET_FILE}), ("grep", {"pattern": "launch", "path": SECRET_FILE}),
            ("grep", {"pattern": "launch"})]


def check_files_refused(script: "Script", refusal: str = "takes no path here: set resource to the "
                                                           "tool-output:// URI") -> None:
    """Each file probe was answered, refused, and no byte of ``SECRET_FILE`` reached the model.

    :param refusal: what the answer to a call passing ``path`` says: the
        adapter's line, or the framework's own where it checks arguments first.
    """
    assert len(script.probe_answers) == len(script.probes)
    for answer in script.probe_answers:
        assert "0451-ZEBRA" not in answer and "launch code" not in answer, answer
    read_path, grep_path, grep_nothing = script.probe_answers
    assert refusal in read_path and refusal in grep_path, (read_path, grep_path)
    assert "resource" in grep_nothing, grep_nothing


def framework(module: str) -> Any:
    """Import a framework's module, or skip (fail under OVERSPILL_REQUIRE_ADAPTERS) when it is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        if _REQUIRED:
            pytest.fail(f"OVERSPILL_REQUIRE_ADAPTERS is set, but {module} cannot be imported: {error}")
        pytest.skip(f"{module} is not installed: {error}")


class Rendezvous:
    """Two concurrent runs meet after each got its preview, and each learns the other's URI."""

    def __init__(self) -> None:
        import asyncio

        self.uris: dict[int, str] = {}
        self.both = asyncio.Event()

    async def before(self, script: "Script", received: Optional[str]) -> None:
        """Call before ``script.next(received)`` in an async scripted model."""
        import asyncio

        if script.uri is None and received is not None and "tool-output://" in received:
            self.uris[id(script)] = marker(received)[0]
            if len(self.uris) == 2:
                self.both.set()
            await asyncio.wait_for(self.both.wait(), 30)
            script.foreign = next(uri for key, uri in self.uris.items() if key != id(script))


def marker(preview: str) -> tuple[str, int]:
    """The URI and the continue offset a preview's marker names."""
    found = MARKER.search(preview)
    assert found, f"no marker in {preview[:200]!r}..."
    return found.group(1), int(found.group(2))


#: A framework's or a model's id longer than the store takes for a caller string (1024 UTF-8 bytes):
#: a thread id, a group id or a tool call id may be any length.
LONG_ID = "x" * 1100


class Script:
    """The model's side of the scenario; ``steps`` records what it received and chose.

    ``next(received)`` takes the text of the last tool result (None on the
    first turn) and returns ``(tool name, arguments)`` or None to finish.
    """

    def __init__(self, tool: str = "big", *, pattern: str = "^" + NEEDLE + "$",
                 probes: Optional[list[tuple[str, dict[str, Any]]]] = None) -> None:
        self.tool = tool
        self.pattern = pattern
        self.received: list[str] = []
        self.preview: Optional[str] = None
        self.uri: Optional[str] = None
        self.offset: Optional[int] = None
        self.pages: list[str] = []
        self.starts: list[int] = []  # the offset each page was asked for
        self.grep: Optional[str] = None
        #: Another run's URI to try first, once the preview came (set by a concurrent test), and the answer.
        self.foreign: Optional[str] = None
        self.foreign_answer: Optional[str] = None
        #: Calls to make right after the preview (after ``foreign``), before paging, and what each got back.
        self.probes = list(probes or ())
        self.probe_answers: list[str] = []
        self._state = "start"
        self._calls = 0

    def call_id(self) -> str:
        self._calls += 1
        return f"call-{id(self):x}-{self._calls}"

    def next(self, received: Optional[str]) -> Optional[tuple[str, dict[str, Any]]]:
        if received is not None:
            self.received.append(received)
        if self._state == "start":
            self._state = "called"
            return self.tool, {}
        if self._state == "called":
            assert received is not None
            self.preview = received
            self.uri, self.offset = marker(received)
            if self.foreign is not None:
                self._state = "peeking"
                return "read", {"resource": self.foreign}
            return self._after_preview()
        if self._state == "peeking":
            self.foreign_answer = received
            return self._after_preview()
        if self._state == "probing":
            assert received is not None
            self.probe_answers.append(received)
            return self._after_preview()
        if self._state == "paging":
            assert received is not None
            hint = HINT.search(received)
            if hint is not None:
                assert hint.group(2) == self.uri
                self.pages.append(received[:hint.start()])
                return self._read(int(hint.group(3)))
            self.pages.append(received)
            self._state = "grepping"
            return "grep", {"resource": self.uri, "pattern": self.pattern}
        if self._state == "grepping":
            self.grep = received
            self._state = "done"
            return None
        raise AssertionError(f"the script is over, but the model was called again with {received!r}")

    def _after_preview(self) -> tuple[str, dict[str, Any]]:
        if len(self.probe_answers) < len(self.probes):
            self._state = "probing"
            return self.probes[len(self.probe_answers)]
        return self._read(self.offset)

    def _read(self, offset: int) -> tuple[str, dict[str, Any]]:
        self._state = "paging"
        self.starts.append(offset)
        return "read", {"resource": self.uri, "offset": offset}

    def check(self, text: str = BIG) -> None:
        """Assert what the model received at each step of a run over ``text``."""
        assert self._state == "done", self._state
        assert self.preview is not None and self.offset is not None
        data = text.encode()
        head = data[:self.offset].decode()
        # The preview starts with the output's first lines, then the marker names the size and the lines.
        assert self.preview.startswith(head.rstrip("\n").split("\n")[0])
        lines = text.count("\n") + (not text.endswith("\n"))  # a last line without its newline counts
        assert f"({len(data)} bytes, {lines} lines in all)" in self.preview
        assert len(self.preview.encode()) < 60_000
        # The pages, from the marker's offset on, are the output's exact bytes.
        assert len(self.pages) == len(self.starts) > 1 and self.starts[0] == self.offset
        assert "".join(self.pages) == data[self.offset:].decode()
        # grep names the matching line with its byte offset in the stored output.
        assert self.grep is not None
        expected = data.index(NEEDLE.encode())
        assert f"{expected}:{NEEDLE}" in self.grep, self.grep


class LongIdScript(Script):
    """A ``Script`` whose tool call ids are over the store's bound for an id (``LONG_ID``), differing only
    at their end."""

    def call_id(self) -> str:
        return LONG_ID + super().call_id()
