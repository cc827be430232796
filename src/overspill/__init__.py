"""overspill: bounded previews, full spill-to-disk and paged read-back of tool outputs.

A small output goes back untouched; a large one is stored whole and the model
sees a head+tail preview with a ``tool-output://`` marker it can page through.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .config import MAX_BYTES, MAX_LINES, MAX_READ_BYTES, RETENTION, Limits
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
from .records import Record, Resource
from .backends.base import CleanupReport
from .store import Page, ToolOutputStore, TruncateResult
from .text import Preview, preview

if TYPE_CHECKING:
    from ._kernels import IMPLEMENTATION, StreamCap, count_lines, page_bounds, utf8_length
    from .capture import MAX_CAPTURE_BYTES, Collected, ProcessResult, arun, collect_stream, run

__version__ = "0.1.0"

# Running commands needs subprocess, selectors and signal, a fifth of the
# package's import time: the capture names are loaded on first use (PEP 562),
# so a process that only stores and reads does not pay for them.
_LAZY = {name: "capture" for name in ("MAX_CAPTURE_BYTES", "Collected", "ProcessResult", "arun",
                                      "collect_stream", "run")}
# The kernels are chosen by OVERSPILL_IMPLEMENTATION on first use (see _kernels):
# IMPLEMENTATION says which is in use, "cython" (compiled) or "python" (the pure twin).
_LAZY.update({name: "_kernels" for name in ("IMPLEMENTATION", "StreamCap", "count_lines", "page_bounds",
                                           "utf8_length")})


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module_name}", __name__), name)
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
