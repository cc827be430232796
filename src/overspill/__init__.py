"""overspill: bounded previews, full spill-to-disk and paged read-back of tool outputs.

A small output goes back untouched; a large one is stored whole and the model
sees a head+tail preview with a ``tool-output://`` marker it can page through.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing itself costs more start-up than the rest of the package

from .errors import (
    AccessDeniedError,
    BackgroundLimitError,
    ConfigError,
    InvalidResourceError,
    OverspillError,
    PatternTooSlowError,
    ResourceCorruptError,
    ResourceNotFoundError,
    SearchError,
    StorageError,
    UnsupportedError,
)

if TYPE_CHECKING:
    from typing import Any

    from ._kernels import IMPLEMENTATION, StreamCap, count_lines, page_bounds, utf8_length
    from .backends._report import CleanupReport
    from .capture import MAX_CAPTURE_BYTES, Collected, ProcessResult, arun, collect_stream, run
    from .config import MAX_BYTES, MAX_LINES, MAX_READ_BYTES, RETENTION, Limits
    from .records import Record, Resource
    from .store import Page, ToolOutputStore, TruncateResult
    from .text import Preview, preview

__version__ = "0.1.0"

# Every other public name is loaded on first use (PEP 562), so that a process
# pays only for what it uses: ``overspill --version`` (whose ``overspill.cli``
# imports this package first) none of the store, a store that never runs a
# command none of subprocess, selectors and signal (a fifth of the package's
# import time).  ``from overspill import X`` works as for any other name.
_LAZY = {name: "capture" for name in ("MAX_CAPTURE_BYTES", "Collected", "ProcessResult", "arun",
                                      "collect_stream", "run")}
# The kernels are chosen by OVERSPILL_IMPLEMENTATION on first use (see _kernels):
# IMPLEMENTATION says which is in use, "cython" (compiled) or "python" (the pure twin).
_LAZY.update({name: "_kernels" for name in ("IMPLEMENTATION", "StreamCap", "count_lines", "page_bounds",
                                           "utf8_length")})
_LAZY.update({name: "config" for name in ("MAX_BYTES", "MAX_LINES", "MAX_READ_BYTES", "RETENTION", "Limits")})
_LAZY.update({"Record": "records", "Resource": "records", "CleanupReport": "backends._report",
              "Page": "store", "ToolOutputStore": "store", "TruncateResult": "store",
              "Preview": "text", "preview": "text"})


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    full = f"{__name__}.{module_name}"
    __import__(full)  # not importlib.import_module: importlib imports warnings
    value = getattr(sys.modules[full], name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "IMPLEMENTATION",
    "MAX_BYTES",
    "MAX_CAPTURE_BYTES",
    "MAX_LINES",
    "MAX_READ_BYTES",
    "RETENTION",
    "AccessDeniedError",
    "BackgroundLimitError",
    "CleanupReport",
    "Collected",
    "ConfigError",
    "InvalidResourceError",
    "Limits",
    "OverspillError",
    "Page",
    "PatternTooSlowError",
    "Preview",
    "ProcessResult",
    "Record",
    "Resource",
    "ResourceCorruptError",
    "ResourceNotFoundError",
    "SearchError",
    "StorageError",
    "StreamCap",
    "ToolOutputStore",
    "TruncateResult",
    "UnsupportedError",
    "arun",
    "collect_stream",
    "count_lines",
    "page_bounds",
    "preview",
    "run",
    "utf8_length",
]
