"""Limits and where they come from: defaults, environment, configuration, call.

Precedence, highest first: per-call arguments > ``config`` (later sources win
key by key) > ``OVERSPILL_MAX_LINES`` / ``OVERSPILL_MAX_BYTES`` /
``OVERSPILL_MAX_STORED_BYTES`` / ``OVERSPILL_MAX_TOTAL_BYTES`` > defaults.
"""

from __future__ import annotations

import os

# The classes collections.abc names, without importing the collections package
# (``import overspill`` must stay near a bare interpreter's start-up).
from _collections_abc import Mapping, Sequence

try:
    # datetime's own classes (``datetime.py`` re-exports them) without running
    # ``datetime.py``, whose pure-Python twin of the module costs every start-up.
    from _datetime import datetime, timedelta
except ImportError:  # pragma: no cover - an interpreter without the C module
    from datetime import datetime, timedelta

from ._arguments import os_string_problem
from ._buffers import int_text, value_text
from ._files import folder_text
from ._frozen import frozen
from .errors import ConfigError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and pathlib cost start-up; annotations are never evaluated
    from pathlib import Path
    from typing import Any, Optional, Union

    PathLike = Union[str, "os.PathLike[str]"]
    ConfigSource = Union[Mapping[str, Any], PathLike, Sequence[Union[Mapping[str, Any], PathLike]]]

__all__ = [
    "MAX_BACKGROUND",
    "MAX_BYTES",
    "MAX_LINES",
    "MAX_READ_BYTES",
    "MAX_STORED_BYTES",
    "MAX_TOTAL_BYTES",
    "RETENTION",
    "DEFAULT_SIGNALS",
    "DEFAULT_VIEWS",
    "VIEWS",
    "ConfigSource",
    "Limits",
    "default_data_dir",
    "default_data_folder",
    "positive_int",
    "resolve_limits",
]

MAX_LINES = 2000
MAX_BYTES = 50 * 1024
MAX_READ_BYTES = 50 * 1024
#: The most bytes one output's stored copy holds (its first bytes; the rest is counted).
MAX_STORED_BYTES = 1024**3
#: The most bytes of payloads the managed folder holds; the oldest go first.
MAX_TOTAL_BYTES = 4 * 1024**3
RETENTION = timedelta(days=7)
#: The most background commands running at once in one session.
MAX_BACKGROUND = 16

#: Views the model is shown by default: ANSI escapes removed, \r redraws collapsed.
VIEWS = ("ansi", "cr")
DEFAULT_VIEWS = VIEWS
#: What marks a line of an omitted part as worth showing: (kind, pattern).
#: Errors are shown first, then warnings, then summaries (what an install or
#: a run says it did, for when more output follows it).  A pattern is ASCII text matched in a
#: line (ASCII case-insensitively when it has no uppercase letter) as a word:
#: at an edge that is a letter or digit, not inside a word (``error`` in
#: ``-Werror`` or ``errors`` does not count), except that a capitalised word
#: may start in camel case (``Error`` in ``ValueError`` or ``HTTPError``
#: counts, in ``ErrorHandler`` not), and not inside a name: right after
#: ``/``, ``\``, ``_``, ``::`` or ``word-``, or right before ``_``, ``/``,
#: ``(``, ``::``, ``.x`` or ``-x`` (``error.py``, ``liberror-perl``,
#: ``test_error_path``, ``libgpg-error``, ``error/exception`` are names, not
#: diagnostics), nor as the whole of a quoted object key: right after ``"``
#: and right before ``"``, spaces or tabs, ``:`` (``"summary": "..."`` in
#: a JSON document names a field; ``"level":"error"`` and ``"error: boom"``
#: count).  A line that starts as an ``ls -l`` or ``tar tv`` entry (a mode
#: string such as ``drwxr-xr-x``, spaces, then a link count or an owner/group
#: and a size) is a listing entry and matches nothing, whatever it is named;
#: ``---------- ERROR: build failed`` still counts.  A leading ``^`` anchors
#: a pattern at the start of the line (and it is then matched as it is).
DEFAULT_SIGNALS = (
    ("error", "error"), ("error", "fatal"), ("error", "exception"), ("error", "traceback"),
    ("error", "failed"), ("error", "failure"), ("error", "FAIL"), ("error", "panic"), ("error", "panicked"),
    ("error", "^E   "), ("error", "abort"), ("error", "aborted"), ("error", "segmentation fault"),
    ("error", "core dumped"), ("error", "undefined reference"), ("error", "no such file or directory"),
    ("error", "permission denied"), ("error", "command not found"), ("error", "errno"),
    # apt, dpkg, npm, make and go say what went wrong without the word "error".
    ("error", "^E: "), ("error", "ERR!"), ("error", "is not installed"), ("error", "errors were encountered"),
    ("error", "unmet dependencies"), ("error", "No rule to make target"), ("error", "undefined:"),
    ("error", "declared and not used"),
    ("warning", "warning"), ("warning", "warn"), ("warning", "deprecated"), ("warning", "deprecation"),
    ("warning", "^W: "),
    ("summary", "newly installed"), ("summary", "Successfully installed"), ("summary", "Successfully built"),
    ("summary", "test result:"), ("summary", "audited"), ("summary", "summary"),
)
_SIGNAL_KINDS = ("error", "warning", "summary")

_SECTION = "tool_output"
_KEYS = ("max_lines", "max_bytes", "max_stored_bytes", "max_total_bytes", "views", "signals", "outline",
         "trim_runs", "max_tokens", "max_background")
_ENVIRONMENT = {"max_lines": "OVERSPILL_MAX_LINES", "max_bytes": "OVERSPILL_MAX_BYTES",
                "max_stored_bytes": "OVERSPILL_MAX_STORED_BYTES", "max_total_bytes": "OVERSPILL_MAX_TOTAL_BYTES",
                "max_background": "OVERSPILL_MAX_BACKGROUND"}

@frozen(defaults={"max_lines": MAX_LINES, "max_bytes": MAX_BYTES, "max_stored_bytes": MAX_STORED_BYTES,
                  "max_total_bytes": MAX_TOTAL_BYTES, "views": DEFAULT_VIEWS, "signals": DEFAULT_SIGNALS,
                  "outline": True, "trim_runs": True, "max_tokens": None,
                  "max_background": MAX_BACKGROUND})
class Limits:
    """How much of an output the model sees before it is truncated, and how
    much of it, and of all outputs together, the store keeps."""

    __slots__ = ("max_lines", "max_bytes", "max_stored_bytes", "max_total_bytes", "views", "signals", "outline",
                 "trim_runs", "max_tokens", "max_background")
    max_lines: int
    max_bytes: int
    max_stored_bytes: int
    max_total_bytes: int
    #: ``tool_output.views``: which views the model is shown (``[]`` for the raw text).
    views: tuple[str, ...]
    #: ``tool_output.signals``: ``(kind, pattern)`` pairs, see ``DEFAULT_SIGNALS``.
    signals: tuple[tuple[str, str], ...]
    #: ``tool_output.outline``: follow the marker with an outline of the omitted part.
    outline: bool
    #: ``tool_output.trim_runs``: a byte-cut head ends after the first 10 lines
    #: of a run of lines that differ only in their numbers, a tail starts 10
    #: lines before the end of one (the rest of the run is omitted): the
    #: preview is ``preview(..., runs=text.RUN_KEEP)``'s.  On by default;
    #: false gives ``preview``'s head and tail without ``runs``.
    trim_runs: bool
    #: ``tool_output.max_tokens``: the most o200k tokens the preview (head, tail,
    #: signal lines and outline) may take, besides ``max_bytes``; None (the
    #: default) for no token bound.  Needs the ``overspill[tokens]`` extra.
    max_tokens: Optional[int]
    #: ``tool_output.max_background``: background commands running at once per session.
    max_background: int


def _views(value: object, key: str, source: str) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(name, str) for name in value):
        raise ConfigError(f"{key} from {source} must be a list of view names, not {value_text(value)}")
    unknown = [name for name in value if name not in VIEWS]
    if unknown:
        raise ConfigError(f"{key} from {source}: unknown view {unknown[0]!r} (expected some of {', '.join(VIEWS)})")
    return tuple(dict.fromkeys(value))


def _signals(value: object, key: str, source: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{key} from {source} must be a list of {{kind, pattern}} tables, "
                          f"not {value_text(value)}")
    entries = []
    for entry in value:
        if not isinstance(entry, Mapping) or set(entry) != {"kind", "pattern"}:
            raise ConfigError(f"{key} from {source}: each entry must be a table with kind and pattern, "
                              f"not {value_text(entry)}")
        kind, pattern = entry["kind"], entry["pattern"]
        if kind not in _SIGNAL_KINDS:
            raise ConfigError(f"{key} from {source}: kind must be one of {', '.join(_SIGNAL_KINDS)}, "
                              f"not {value_text(kind)}")
        literal = pattern[1:] if isinstance(pattern, str) and pattern.startswith("^") else pattern
        if (not isinstance(pattern, str) or not literal or not pattern.isascii() or "\n" in pattern
                or len(literal) > 255):
            raise ConfigError(f"{key} from {source}: pattern must be 1 to 255 ASCII characters on one line, "
                              f"not {value_text(pattern)}")
        entries.append((kind, pattern))
    if len(entries) > 64:
        raise ConfigError(f"{key} from {source}: at most 64 patterns, not {len(entries)}")
    return tuple(entries)



def _flag(value: object, key: str, source: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{key} from {source} must be true or false, not {value_text(value)}")
    return value


def positive_int(value: object, key: str, source: str) -> int:
    """``value`` if it is a positive int (a bool is not).

    :raises ConfigError: naming ``key`` and ``source`` otherwise.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{key} from {source} must be a positive integer, not {value_text(value)}")
    return value


def _stored_bytes(value: object, key: str, source: str) -> int:
    """``value`` if it is a positive int no larger than one record can describe.

    :raises ConfigError: naming ``key`` and ``source`` otherwise.
    """
    value = positive_int(value, key, source)
    _check_stored_bytes(value, f"{key} from {source}")
    return value


def _check_stored_bytes(value: int, named: str) -> None:
    # A larger stored copy would get a record over records.MAX_RECORD_BYTES,
    # which its own reader refuses: the output written, then "not found".
    from .records import MAX_PAYLOAD_BYTES  # the record's rule; only a configured cap needs it

    if value > MAX_PAYLOAD_BYTES:
        raise ConfigError(f"{named} must be at most {MAX_PAYLOAD_BYTES} (64 GiB, the largest stored copy "
                          f"one record describes), not {int_text(value)}")


def _from_environment(environ: Mapping[str, str]) -> dict[str, int]:
    values = {}
    for key, variable in _ENVIRONMENT.items():
        raw = environ.get(variable)
        if raw is None or raw.strip() == "":
            continue
        text = raw.strip()
        # One format for every variable's error: "NAME (environment) must be ..., not 'raw'".
        if not (text.isascii() and text.isdigit()) or len(text) > 18 or int(text) < 1:
            raise ConfigError(f"{variable} (environment) must be a positive integer, not {raw!r}")
        values[key] = int(text)
    if "max_stored_bytes" in values:
        _check_stored_bytes(values["max_stored_bytes"], f"{_ENVIRONMENT['max_stored_bytes']} (environment)")
    return values


def _read_file(path: Path) -> Mapping[str, Any]:
    source = str(path)  # a configuration file is rare: pathlib is imported for it alone
    problem = os_string_problem(source, "its name")
    if problem is not None:
        raise ConfigError(f"cannot read configuration file {source!a}: {problem}")
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ConfigError(f"cannot read configuration file {source}: {error.strerror or error}") from None
    try:
        if path.suffix.lower() == ".toml":
            try:
                import tomllib
            except ImportError:  # Python < 3.11 has no TOML reader in the standard library
                raise ConfigError(f"{source}: TOML configuration needs Python 3.11 or newer") from None
            parsed = tomllib.loads(data.decode("utf-8"))
        else:
            from ._json_load import loads_text  # only a configuration file needs it

            parsed = loads_text(data)
    except ConfigError:
        raise
    except (ValueError, RecursionError) as error:  # JSON, TOML and UTF-8 errors are ValueErrors; TOML nests too
        raise ConfigError(f"{source} is not valid {path.suffix.lstrip('.').upper() or 'JSON'}: {error}") from None
    if not isinstance(parsed, Mapping):
        raise ConfigError(f"{source} must hold an object at the top level")
    return parsed


_CHECKS = {"max_lines": positive_int, "max_bytes": positive_int, "max_stored_bytes": _stored_bytes,
           "max_total_bytes": positive_int, "views": _views, "signals": _signals, "outline": _flag,
           "trim_runs": _flag, "max_tokens": positive_int, "max_background": positive_int}


def _section(document: Mapping[str, Any], source: str) -> dict[str, Any]:
    # Other top-level tables are another program's (a shared file) and left
    # alone; a setting's own name there was meant for this one, and ignoring it
    # would leave its default (the quota, say) in force without a word.
    misplaced = [key for key in document if key in _KEYS]
    if misplaced:
        raise ConfigError(f"{', '.join(misplaced)} from {source} must be under {_SECTION} "
                          f"({{\"{_SECTION}\": {{\"{misplaced[0]}\": ...}}}}, or [{_SECTION}] in a TOML file), "
                          f"not at the top level")
    section = document.get(_SECTION)
    if section is None:
        return {}
    if not isinstance(section, Mapping):
        raise ConfigError(f"{_SECTION} from {source} must be a table of settings")
    values = {}
    for key, value in section.items():
        if key not in _KEYS:
            raise ConfigError(f"{_SECTION}.{key} from {source} is not a setting (expected one of {', '.join(_KEYS)})")
        values[key] = _CHECKS[key](value, f"{_SECTION}.{key}", source)
    return values


def _sources(config: ConfigSource | None) -> list[tuple[Mapping[str, Any], str]]:
    if config is None:
        return []
    items: Sequence[Any]
    if isinstance(config, (Mapping, str, os.PathLike)):
        items = [config]
    elif isinstance(config, Sequence) and not isinstance(config, (bytes, bytearray, memoryview)):
        items = config
    else:
        raise ConfigError(f"config must be a mapping, a path or a sequence of them, not {type(config).__name__}")
    documents = []
    for position, item in enumerate(items):
        if isinstance(item, Mapping):
            documents.append((item, f"config[{position}]" if len(items) > 1 else "config"))
        elif isinstance(item, (str, os.PathLike)):
            from pathlib import Path

            path = Path(item)
            documents.append((_read_file(path), str(path)))
        else:
            raise ConfigError(f"config[{position}] must be a mapping or a path, not {type(item).__name__}")
    return documents


def resolve_limits(
    config: ConfigSource | None = None, environ: Mapping[str, str] | None = None
) -> Limits:
    """The limits in force for a store built with ``config``.

    :param config: a mapping, a path to a JSON or TOML file, or a sequence of
        them (later ones win key by key); each may hold
        ``{"tool_output": {"max_lines": N, "max_bytes": N, "max_stored_bytes": N,
        "max_total_bytes": N}}``.
    :param environ: the environment to read (``os.environ`` by default).
    :raises ConfigError: a file cannot be read or parsed, a value is not a
        positive integer (``max_stored_bytes`` over ``records.MAX_PAYLOAD_BYTES``), a key under ``tool_output`` is not a setting, or a
        setting is at the top level instead of under ``tool_output`` (other
        top-level keys are left alone); the message names the key and its source.
    """
    values: dict[str, Any] = {}
    values.update(_from_environment(os.environ if environ is None else environ))
    for document, source in _sources(config):
        values.update(_section(document, source))
    return Limits(**values)


def default_data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$OVERSPILL_DATA_DIR``, else ``$XDG_DATA_HOME/overspill`` (when it is an absolute
    path), else ``~/.local/share/overspill``."""
    from pathlib import Path

    return Path(default_data_folder(environ))


def default_data_folder(environ: Mapping[str, str] | None = None) -> str:
    """``default_data_dir`` as the text ``str()`` gives of it, without importing pathlib."""
    env = os.environ if environ is None else environ
    if env.get("OVERSPILL_DATA_DIR"):
        folder = env["OVERSPILL_DATA_DIR"]
    elif env.get("XDG_DATA_HOME") and os.path.isabs(env["XDG_DATA_HOME"]):
        # The XDG Base Directory spec: a relative path is invalid and ignored (it would
        # name a different folder from each working folder).
        folder = os.path.join(env["XDG_DATA_HOME"], "overspill")
    else:
        folder = os.path.join(os.path.expanduser("~"), ".local", "share", "overspill")
    return folder_text(folder)


def __getattr__(name: str) -> object:
    # ``ConfigSource`` is for annotations; it is built (with typing) only when
    # something asks for it at run time, so that importing this module does not.
    if name == "ConfigSource":
        from typing import Any, Union

        path_like = Union[str, "os.PathLike[str]"]
        source = Union[Mapping[str, Any], path_like, Sequence[Union[Mapping[str, Any], path_like]]]
        globals()[name] = source
        return source
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
