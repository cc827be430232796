"""Ready tools for agent loops, each a plain function of a ``ToolOutputStore``.

Every tool takes ``(store, session_id, tool_call_id, ...)`` and returns a
``ToolResult``; failures the model should see come back with ``is_error``
and a one-line reason, not as exceptions.  ``schemas()`` gives their JSON
definitions and ``call()`` validates and dispatches a model's tool call.
"""

import sys

from ._result import MAX_LINE_LENGTH, MAX_READ_LINES, MAX_RESPONSE_BYTES, MAX_SEARCH_BYTES, ToolResult

# Each tool's module is imported when the tool is first asked for (PEP 562):
# ``overspill run`` needs the bash tool alone, not grep's regex machinery,
# webfetch's urllib or the schemas.  ``from overspill.tools import grep`` works
# as for any other name.
_LAZY = {"bash": "bash", "call": "schemas", "grep": "grep", "jobs": "jobs", "kill": "jobs", "read": "read",
         "schemas": "schemas", "skill": "skill", "wait": "jobs", "webfetch": "webfetch", "websearch": "websearch"}


class _Tools(type(sys)):  # type: ignore[misc]
    """The package's module type: importing a tool's submodule (which Python
    records as an attribute of the package) leaves the package's attribute of
    that name the tool function, as ``from .bash import bash`` always did."""

    def __setattr__(self, name: str, value: object) -> None:
        if isinstance(value, type(sys)) and _LAZY.get(name) == name:
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Tools


def __getattr__(name: str) -> object:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    __import__(f"{__name__}.{module_name}")  # not importlib.import_module: importlib imports warnings
    value = getattr(sys.modules[f"{__name__}.{module_name}"], name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


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
