"""Ready tools for agent loops, each a plain function of a ``ToolOutputStore``.

Every tool takes ``(store, session_id, tool_call_id, ...)`` and returns a
``ToolResult``; failures the model should see come back with ``is_error``
and a one-line reason, not as exceptions.  ``schemas()`` gives their JSON
definitions and ``call()`` validates and dispatches a model's tool call.
"""

from ._result import MAX_LINE_LENGTH, MAX_READ_LINES, MAX_RESPONSE_BYTES, MAX_SEARCH_BYTES, ToolResult
from .bash import bash
from .grep import grep
from .jobs import jobs, kill, wait
from .read import read
from .schemas import call, schemas
from .skill import skill
from .webfetch import webfetch
from .websearch import websearch

__all__ = [
    "MAX_LINE_LENGTH",
    "MAX_READ_LINES",
    "MAX_RESPONSE_BYTES",
    "MAX_SEARCH_BYTES",
    "ToolResult",
    "bash",
    "call",
    "grep",
    "jobs",
    "kill",
    "read",
    "schemas",
    "skill",
    "wait",
    "webfetch",
    "websearch",
]
