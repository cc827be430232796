"""overspill: bounded previews, full spill-to-disk and paged read-back of tool outputs.

A small output goes back untouched; a large one is stored whole and the model
sees a head+tail preview with a ``tool-output://`` marker it can page through.
"""

from __future__ import annotations

from . import _kernels
from ._kernels import StreamCap, count_lines, page_bounds, utf8_length
from .capture import MAX_CAPTURE_BYTES, Collected, ProcessResult, arun, collect_stream, run
from .config import MAX_BYTES, MAX_LINES, MAX_READ_BYTES, RETENTION, Limits
from .errors import (
    AccessDeniedError,
    ConfigError,
    InvalidResourceError,
    OverspillError,
    ResourceCorruptError,
    ResourceNotFoundError,
    StorageError,
)
from .records import Record, Resource
from .backends.base import CleanupReport
from .store import Page, ToolOutputStore, TruncateResult
from .text import Preview, preview

__version__ = "0.1.0"

#: Which kernels are in use: "cython" (compiled) or "python" (the pure twin).
IMPLEMENTATION: str = _kernels.IMPLEMENTATION

__all__ = [
    "IMPLEMENTATION",
    "MAX_BYTES",
    "MAX_CAPTURE_BYTES",
    "MAX_LINES",
    "MAX_READ_BYTES",
    "RETENTION",
    "AccessDeniedError",
    "CleanupReport",
    "Collected",
    "ConfigError",
    "InvalidResourceError",
    "Limits",
    "OverspillError",
    "Page",
    "Preview",
    "ProcessResult",
    "Record",
    "Resource",
    "ResourceCorruptError",
    "ResourceNotFoundError",
    "StorageError",
    "StreamCap",
    "ToolOutputStore",
    "TruncateResult",
    "arun",
    "collect_stream",
    "count_lines",
    "page_bounds",
    "preview",
    "run",
    "utf8_length",
]
