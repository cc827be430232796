"""The tools' JSON definitions for the model, and one-line dispatch of its calls."""

from __future__ import annotations

# collections.abc's Mapping without importing the collections package; json
# and copy are imported where used (``overspill run`` imports every tool).
from _collections_abc import Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up; annotations are never evaluated
    from collections.abc import Callable
    from typing import Any

from .._arguments import positive_seconds
from .._json_load import loads_text
from .._frontend import DEFAULT_TIMEOUT, MAX_TIMEOUT
from ..config import MAX_BYTES, MAX_LINES, MAX_READ_BYTES, Limits
from ..store import ToolOutputStore
from ._result import MAX_MATCHES, MAX_READ_LINES, ToolResult, failure
from .bash import bash
from .grep import grep
from .jobs import jobs, kill, wait
from .read import read
from .skill import skill
from .webfetch import FORMATS, webfetch
from .websearch import websearch

__all__ = ["STYLES", "call", "schemas"]

STYLES = ("openai", "anthropic")



def _paging(max_lines: int, max_bytes: int) -> str:
    """The two sentences that teach the paging protocol, naming the limits in force."""
    size = f"{max_bytes // 1024} KB" if max_bytes % 1024 == 0 else f"{max_bytes} bytes"
    return (f"Output over {max_lines} lines or {size} is truncated: you see its head and tail "
            "around a marker naming tool-output://ID, its size, and the byte offset where the omitted part "
            "starts. To see more, call read with resource set to that URI and offset set to that byte offset "
            "(each page names the next offset), or grep with resource set to the URI to find the lines you need.")


_PAGING = _paging(MAX_LINES, MAX_BYTES)


# The wording of read and grep that speaks of files, each piece once, so that
# ``stored_only`` can take it out for hosts whose read and grep serve stored
# outputs only (the framework adapters).
_READ_FILE = (" or lines of a file (path; offset is the first line, from 1; limit the number of lines, "
              f"default {MAX_READ_LINES})")
_READ_ONE = " Give exactly one of resource or path."
_READ_FILE_OFFSET = ", or first line (from 1; 0 also means the first line) of the file"
_READ_FILE_LIMIT = ", or lines of the file,"
_GREP_FILES = ", or files under path (default: the current folder; results as file:line:text)"
_GREP_FILES_RESOURCE = " instead of files"
# Per tool: the arguments that name files, and the pieces of wording (in the
# description, "", or in an argument's) that go with them.
_FILE_ARGUMENTS = {"read": ("path",), "grep": ("path", "glob")}
_FILE_WORDING = {
    "read": {"": (_READ_FILE, _READ_ONE), "offset": (_READ_FILE_OFFSET,), "limit": (_READ_FILE_LIMIT,)},
    "grep": {"": (_GREP_FILES,), "resource": (_GREP_FILES_RESOURCE,)},
}


def _timeout_description(seconds: float) -> str:
    return f"Seconds before the command is stopped (default {seconds:g})."


_TOOLS: dict[str, dict[str, Any]] = {
    "bash": {
        "description": "Run a shell command (stdin is empty) and return its output, stdout and stderr "
                       "together in the order written, then a status line for a non-zero exit code or a "
                       "timeout. " + _PAGING,
        "properties": {
            "command": {"type": "string", "description": "The command line, run by /bin/sh."},
            "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": int(MAX_TIMEOUT),
                        "description": _timeout_description(DEFAULT_TIMEOUT)},
            "background": {"type": "boolean",
                           "description": "Run on in the background (dev servers, watchers, long builds): the "
                                          "answer comes within yield_after seconds with a tool-output://ID handle "
                                          "whose output you read while it runs (read, grep, wait) and stop with "
                                          "kill. timeout does not apply."},
            "yield_after": {"type": "number", "minimum": 0, "maximum": 600,
                            "description": "With background: seconds to wait for the command before answering "
                                           "with its handle (default 10); one that ends sooner is an ordinary "
                                           "result."},
        },
        "required": ["command"],
    },
    "read": {
        "description": "Read a page of a stored output (resource: a tool-output:// URI; offset and limit in "
                       f"bytes, at most {MAX_READ_BYTES // 1024} KB a page)" + _READ_FILE + "." + _READ_ONE
                       + " Follow the offset the answer names to continue.",
        "properties": {
            "resource": {"type": "string", "description": "A tool-output://ID URI from a truncated output."},
            "path": {"type": "string", "description": "A file to read."},
            "offset": {"type": "integer", "minimum": 0,
                       "description": "Byte offset into the resource" + _READ_FILE_OFFSET + "."},
            "limit": {"type": "integer", "minimum": 1,
                      "description": "Bytes of the resource" + _READ_FILE_LIMIT + " to read."},
        },
        "required": [],
    },
    "webfetch": {
        "description": "Fetch an http or https URL (at most 5 MB of text) and return it as Markdown, text "
                       "or HTML. " + _PAGING,
        "properties": {
            "url": {"type": "string", "description": "The http(s) URL."},
            "format": {"type": "string", "enum": list(FORMATS), "description": "How to return HTML pages."},
            "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": 120, "description": "Seconds."},
        },
        "required": ["url"],
    },
    "websearch": {
        "description": "Search the web and return the results. " + _PAGING,
        "properties": {"query": {"type": "string", "description": "What to search for."}},
        "required": ["query"],
    },
    "skill": {
        "description": "Load the instructions of a named skill (its SKILL.md). An unknown name lists the "
                       "available skills. " + _PAGING,
        "properties": {"name": {"type": "string", "description": "The skill's name."}},
        "required": ["name"],
    },
    "grep": {
        "description": "Search a stored output with resource=tool-output://ID for a regular expression, as "
                       "text, line by line (results as offset:text, the byte offset to pass to read; context "
                       "lines as offset-text; then the count of matching lines)" + _GREP_FILES + ". " + _PAGING,
        "properties": {
            "pattern": {"type": "string", "description": "A regular expression (Python's re syntax)."},
            "path": {"type": "string", "description": "File or folder to search (default: the current one)."},
            "resource": {"type": "string", "description": "A tool-output:// URI to search" + _GREP_FILES_RESOURCE + "."},
            "glob": {"type": "string", "description": "Only files matching this glob, e.g. *.py."},
            "ignore_case": {"type": "boolean", "description": "Match regardless of case."},
            "max_matches": {"type": "integer", "minimum": 1, "maximum": MAX_MATCHES,
                            "description": "Most results listed (default 100)."},
            "context": {"type": "integer", "minimum": 0, "maximum": 20,
                        "description": "With resource: lines shown before and after each match (default 0)."},
        },
        "required": ["pattern"],
    },
    "wait": {
        "description": "Wait for a background command (resource: its tool-output:// handle) until it exits, "
                       "until pattern (a regular expression, matched line by line) appears in its new output, or "
                       "timeout seconds pass; returns the new output's preview, the state and the offset to read "
                       "on from. Pass offset (from an earlier answer) so that nothing written since is missed.",
        "properties": {
            "resource": {"type": "string", "description": "The background command's tool-output:// handle."},
            "timeout": {"type": "number", "minimum": 0, "maximum": 3600,
                        "description": "Seconds to wait at most (cut to the host's tool-call budget)."},
            "pattern": {"type": "string",
                        "description": "Return as soon as the new output (its last line even unfinished) matches "
                                       "this regex."},
            "offset": {"type": "integer", "minimum": 0,
                       "description": "Byte offset where the new output starts (default: the end so far)."},
        },
        "required": ["resource", "timeout"],
    },
    "kill": {
        "description": "Stop a background command (resource: its tool-output:// handle): its whole process "
                       "group gets SIGTERM, then SIGKILL after a grace; returns how it ended. Its output stays "
                       "readable.",
        "properties": {
            "resource": {"type": "string", "description": "The background command's tool-output:// handle."},
        },
        "required": ["resource"],
    },
    "jobs": {
        "description": "List this session's background commands: handle, state (running, exited, lost), bytes "
                       "of output, age and exit code.",
        "properties": {},
        "required": [],
    },
}

# read and grep as a front end that serves only stored outputs offers them (the MCP wrapper): the
# same arguments, less path, glob and the file-reading half of their descriptions.
_RESOURCE_ONLY: dict[str, dict[str, Any]] = {
    "read": {
        "description": "Read a page of a stored output (resource: a tool-output:// URI; offset and limit in "
                       f"bytes, at most {MAX_READ_BYTES // 1024} KB a page). Follow the offset the answer names "
                       "to continue.",
        "properties": ("resource", "offset", "limit"),
    },
    "grep": {
        "description": "Search a stored output (resource: a tool-output://ID URI) as text, line by line, for a "
                       "regular expression (results as offset:text, the byte offset to pass to read; context "
                       "lines as offset-text; then the count of matching lines).",
        "properties": ("pattern", "resource", "ignore_case", "max_matches", "context"),
    },
}


def _resource_schema(name: str, exposed: str | None = None) -> dict[str, Any]:
    """``read`` or ``grep`` over stored outputs only, in the ``anthropic`` style, named ``exposed``."""
    import copy

    spec = _RESOURCE_ONLY[name]
    properties = {key: copy.deepcopy(_TOOLS[name]["properties"][key]) for key in spec["properties"]}
    return {"name": exposed or name, "description": spec["description"],
            "input_schema": {"type": "object", "properties": properties,
                             "required": [key for key in ("pattern", "resource") if key in properties],
                             "additionalProperties": False}}


def _takes(properties: Mapping[str, Any]) -> str:
    """The arguments a tool takes, for an error naming one it does not."""
    return f"it takes {', '.join(properties)}" if properties else "it takes no arguments"


def _resource_problem(name: str, arguments: Mapping[str, Any], exposed: str | None = None) -> str | None:
    """Why ``arguments`` do not fit ``_resource_schema(name)``: None when they do, else one line."""
    allowed = _RESOURCE_ONLY[name]["properties"]
    shown = exposed or name
    for key in arguments:
        if key not in allowed:
            return f"{shown} has no argument {key!r} ({_takes(allowed)})"
    if "resource" not in arguments:
        return f"{shown} needs the argument 'resource' (a tool-output:// URI)"
    problem = _invalid_argument(name, arguments)
    return None if problem is None else problem.replace(f"{name}'s", f"{shown}'s", 1).replace(
        f"{name} needs", f"{shown} needs", 1)


# What the host decides, per tool: passed through ``call``'s options, never seen by the model.
_HOST_OPTIONS = {
    "bash": ("cwd", "env", "spill", "abort", "progress"),
    "wait": ("budget", "progress", "abort"),
    "kill": (),
    "jobs": (),
    "read": ("cwd", "limits", "page", "framed"),
    "webfetch": (),
    "websearch": ("provider",),
    "skill": ("roots",),
    "grep": ("cwd", "abort"),
}
_FUNCTIONS: dict[str, Callable[..., ToolResult]] = {
    "bash": bash, "read": read, "webfetch": webfetch, "websearch": websearch, "skill": skill, "grep": grep,
    "wait": wait, "kill": kill, "jobs": jobs}
_REQUIRED_OPTIONS = {"websearch": {"provider": None}, "skill": {"roots": None}}


def _parameters(name: str, timeout: float | None) -> dict[str, Any]:
    spec = _TOOLS[name]
    import copy

    properties = copy.deepcopy(spec["properties"])
    if name == "bash" and timeout is not None:
        properties["timeout"]["description"] = _timeout_description(timeout)
    return {"type": "object", "properties": properties, "required": list(spec["required"]),
            "additionalProperties": False}


def schemas(style: str = "openai", *, limits: Limits | None = None,
            timeout: float | None = None) -> list[dict[str, Any]]:
    """The JSON definitions of bash, read, webfetch, websearch, skill, grep, wait, kill and jobs.

    :param style: ``"openai"`` (function calling) or ``"anthropic"`` (tools).
    :param limits: the limits the host's store applies (``store.limits()``),
        which the descriptions then name; the defaults when None.
    :param timeout: the seconds a command runs when the model names none, as
        the host applies it, which bash's ``timeout`` description then names;
        ``DEFAULT_TIMEOUT`` (120) when None.
    :raises ValueError: an unknown style, or ``timeout`` not positive.
    :raises TypeError: ``limits`` is not a ``Limits``, or ``timeout`` not a number.
    """
    if limits is not None and not isinstance(limits, Limits):
        raise TypeError(f"limits must be a Limits (store.limits()), not {type(limits).__name__}")
    if timeout is not None:
        timeout = positive_seconds(timeout, "timeout")
    paging = _PAGING if limits is None else _paging(limits.max_lines, limits.max_bytes)

    def describe(name: str) -> str:
        return _TOOLS[name]["description"].replace(_PAGING, paging)

    if style == "openai":
        return [{"type": "function", "function": {"name": name, "description": describe(name),
                                                  "parameters": _parameters(name, timeout)}}
                for name in _TOOLS]
    if style == "anthropic":
        return [{"name": name, "description": describe(name), "input_schema": _parameters(name, timeout)}
                for name in _TOOLS]
    raise ValueError(f"style must be one of {', '.join(STYLES)}, not {style!r}")


def stored_only(function: Mapping[str, Any]) -> dict[str, Any]:
    """read's or grep's definition for a host whose read and grep serve stored outputs only.

    :param function: the tool's ``function`` entry of ``schemas("openai", ...)``
        (its name, description and parameters).
    :returns: the same definition without the arguments that name files
        (read's ``path``, grep's ``path`` and ``glob``) and without the wording
        about files, ``resource`` required.
    :raises KeyError: ``function`` is not read's or grep's.
    """
    name = function["name"]
    wording = _FILE_WORDING[name]
    description = function["description"]
    for piece in wording[""]:
        description = description.replace(piece, "")
    import copy

    parameters = copy.deepcopy(function["parameters"])
    properties = parameters["properties"]
    for key in _FILE_ARGUMENTS[name]:
        del properties[key]
    for key, pieces in wording.items():
        if key:
            for piece in pieces:
                properties[key]["description"] = properties[key]["description"].replace(piece, "")
    parameters["required"] = [*parameters["required"], "resource"]
    return {"name": name, "description": description, "parameters": parameters}


def stored_only_problem(name: str, arguments: Mapping[str, Any]) -> str | None:
    """Why a model's ``arguments`` do not fit read's or grep's ``stored_only`` definition, or None when they do.

    An argument naming files gets a line saying what to pass instead.

    :raises KeyError: ``name`` is neither read nor grep.
    """
    for key in _FILE_ARGUMENTS[name]:
        if key in arguments:
            return (f"{name} works on stored outputs only and takes no {key} here: set resource to the "
                    "tool-output:// URI a truncated output names")
    return _invalid_argument(name, arguments, stored_only({"name": name, "description": "",
                                                           "parameters": _parameters(name, None)})["parameters"])


_INFINITY = float("inf")  # (math would cost an import at start-up for one comparison)


def _is_integer(value: object) -> bool:
    """JSON Schema's integer (draft 6 on): any number with a zero fraction, so 3890.0 as well
    as 3890 (a model may write either); never a bool, NaN or an infinity."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _is_number(value: object) -> bool:
    """JSON's number: finite (Python's json reads NaN and Infinity, which no bound would refuse)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and -_INFINITY < value < _INFINITY)


_JSON_TYPES: dict[str, Callable[[object], bool]] = {
    "string": lambda value: isinstance(value, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda value: isinstance(value, bool),
}


def _as_declared(name: str, arguments: Mapping[str, Any]) -> Mapping[str, Any]:
    """Valid ``arguments`` with each integer argument an ``int``: the tools take 3890.0,
    which the schema allows, as no integer."""
    properties = _TOOLS[name]["properties"]
    floats = {key: int(value) for key, value in arguments.items()
              if isinstance(value, float) and properties[key]["type"] == "integer"}
    return {**arguments, **floats} if floats else arguments


_ARTICLES = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "a boolean"}


def _invalid_argument(name: str, arguments: Mapping[str, Any],
                      spec: Mapping[str, Any] | None = None) -> str | None:
    """Why ``arguments`` do not fit the tool's schema (``spec``'s properties and required, when given), or None."""
    if spec is None:
        spec = _TOOLS[name]
    properties = spec["properties"]
    for key in spec["required"]:
        if key not in arguments:
            return f"{name} needs the argument {key!r}"
    for key, value in arguments.items():
        if key not in properties:
            return f"{name} has no argument {key!r} ({_takes(properties)})"
        rule = properties[key]
        if not _JSON_TYPES[rule["type"]](value):
            # A float is named by its value: "not float" would not say what is wrong with 3890.5.
            shown = repr(value) if isinstance(value, float) else type(value).__name__
            return f"{name}'s argument {key!r} must be {_ARTICLES[rule['type']]}, not {shown}"
        if "enum" in rule and value not in rule["enum"]:
            return f"{name}'s argument {key!r} must be one of {', '.join(rule['enum'])}"
        if "minimum" in rule and value < rule["minimum"]:
            return f"{name}'s argument {key!r} must be at least {rule['minimum']}"
        if "exclusiveMinimum" in rule and value <= rule["exclusiveMinimum"]:
            return f"{name}'s argument {key!r} must be more than {rule['exclusiveMinimum']}"
        if "maximum" in rule and value > rule["maximum"]:
            return f"{name}'s argument {key!r} must be at most {rule['maximum']}"
    return None


def call(store: ToolOutputStore, session_id: str, tool_call_id: str, name: str,
         arguments: Mapping[str, Any] | str | None, **options: Any) -> ToolResult:
    """Validate a model's tool call against the schemas and run it.

    :param name: the tool the model called.
    :param arguments: what the model chose: a mapping, or its JSON text.
    :param options: what the host decides (``cwd``, ``env``, ``spill``,
        ``abort``, ``progress``, ``provider``, ``roots``, read's ``limits``,
        ``page`` and ``framed``); each tool takes the ones it uses and ignores the rest,
        so one set can be passed for every call.
    :returns: the tool's result; an unknown tool or arguments that do not fit
        its schema come back as ``is_error`` results the model can act on.
    """
    if name not in _FUNCTIONS:
        return failure(f"unknown tool {name!r}; the tools are {', '.join(_FUNCTIONS)}")
    if arguments is None:
        arguments = {}
    if isinstance(arguments, (str, bytes)):
        try:
            arguments = loads_text(arguments or "{}")
        except ValueError as error:
            return failure(f"the arguments of {name} are not valid JSON: {error}")
    if not isinstance(arguments, Mapping):
        return failure(f"the arguments of {name} must be a JSON object")
    problem = _invalid_argument(name, arguments)
    if problem:
        return failure(problem)
    arguments = _as_declared(name, arguments)
    host = {key: options[key] for key in _HOST_OPTIONS[name] if key in options}
    for key, default in _REQUIRED_OPTIONS.get(name, {}).items():
        host.setdefault(key, default)
    return _FUNCTIONS[name](store, session_id, tool_call_id, **arguments, **host)
