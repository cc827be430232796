"""The one place that chooses between the compiled kernels and their twin.

``OVERSPILL_IMPLEMENTATION`` selects: ``auto`` (the default: the compiled
module when it imports), ``cython`` (the compiled module or an ImportError) or
``python`` (the pure twin).  Other modules call the kernels through this
module's attributes, so that the test suite can switch implementations.
"""

from __future__ import annotations

import os
from types import ModuleType

from . import _native
from .errors import ConfigError

__all__ = [
    "IMPLEMENTATION",
    "KERNEL_NAMES",
    "StreamCap",
    "ascii_view",
    "count_lines",
    "crc32",
    "page_bounds",
    "preview_cuts",
    "signal_lines",
    "utf8_length",
    "view_bytes",
]

KERNEL_NAMES = (
    "count_lines", "utf8_length", "page_bounds", "preview_cuts", "crc32", "ascii_view", "StreamCap",
    "view_bytes", "signal_lines",
)
_CHOICES = ("auto", "cython", "python")


def _compiled() -> ModuleType:
    from . import _speedups  # type: ignore[attr-defined]

    return _speedups


def _load(requested: str) -> tuple[str, ModuleType]:
    if requested not in _CHOICES:
        raise ConfigError(
            f"OVERSPILL_IMPLEMENTATION (environment) must be one of {', '.join(_CHOICES)}, "
            f"not {requested!r}"
        )
    if requested == "python":
        return "python", _native
    try:
        return "cython", _compiled()
    except ImportError as error:
        if requested == "cython":
            raise ImportError(
                "OVERSPILL_IMPLEMENTATION=cython, but overspill._speedups cannot be imported "
                f"({error}); reinstall overspill with a C compiler available"
            ) from error
        return "python", _native


def use(requested: str) -> str:
    """Bind the kernels of one implementation here; return its name.

    For the test suite, which runs everything against both implementations.
    """
    global IMPLEMENTATION
    name, module = _load(requested)
    namespace = globals()
    for kernel in KERNEL_NAMES:
        namespace[kernel] = getattr(module, kernel)
    IMPLEMENTATION = name
    return name


IMPLEMENTATION = "python"
count_lines = _native.count_lines
utf8_length = _native.utf8_length
page_bounds = _native.page_bounds
preview_cuts = _native.preview_cuts
crc32 = _native.crc32
ascii_view = _native.ascii_view
StreamCap = _native.StreamCap
view_bytes = _native.view_bytes
signal_lines = _native.signal_lines
use(os.environ.get("OVERSPILL_IMPLEMENTATION", "auto").strip().lower() or "auto")
