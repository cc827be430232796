"""overspill: bounded previews, full spill-to-disk and paged read-back of tool outputs.

A small output goes back untouched; a large one is stored whole and the model
sees a head+tail preview with a ``tool-output://`` marker it can page through.
"""

from __future__ import annotations

from . import _kernels
from ._kernels import StreamCap, count_lines, utf8_length
from .errors import (
    AccessDeniedError,
    ConfigError,
    InvalidResourceError,
    OverspillError,
    ResourceCorruptError,
    ResourceNotFoundError,
    StorageError,
)
from .text import Preview, preview

__version__ = "0.1.0"

#: Which kernels are in use: "cython" (compiled) or "python" (the pure twin).
IMPLEMENTATION: str = _kernels.IMPLEMENTATION

__all__ = [
    "IMPLEMENTATION",
    "AccessDeniedError",
    "ConfigError",
    "InvalidResourceError",
    "OverspillError",
    "Preview",
    "ResourceCorruptError",
    "ResourceNotFoundError",
    "StorageError",
    "StreamCap",
    "count_lines",
    "preview",
    "utf8_length",
]
