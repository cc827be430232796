"""The one place that chooses between the compiled kernels and their twin.

``OVERSPILL_IMPLEMENTATION`` selects: ``auto`` (the default: the compiled
module when it imports), ``cython`` (the compiled module or an ImportError) or
``python`` (the pure twin).  Other modules call the kernels through this
module's attributes, so that the test suite can switch implementations.
The choice is made when a kernel (or ``IMPLEMENTATION``) is first looked up:
an invalid value raises ``ConfigError`` there, never at ``import overspill``.
"""

from __future__ import annotations

import os

from .errors import ConfigError, StorageError

TYPE_CHECKING = False
if TYPE_CHECKING:  # types costs start-up; annotations are never evaluated
    from types import ModuleType

__all__ = [
    "IMPLEMENTATION",
    "JsonOutline",
    "KERNEL_NAMES",
    "StreamCap",
    "ascii_view",
    "count_lines",
    "crc32",
    "file_unchanged",
    "new_slotted",
    "outline_lines",
    "page_bounds",
    "page_text",
    "preview_cuts",
    "read_page",
    "read_regular",
    "record_fields",
    "regular_identity",
    "requested",
    "signal_lines",
    "text_fits",
    "utf8_length",
    "verified_copy",
    "verify_chunks",
    "view_bytes",
    "view_text",
]

KERNEL_NAMES = (
    "count_lines", "utf8_length", "page_bounds", "preview_cuts", "crc32", "ascii_view", "StreamCap",
    "view_bytes", "signal_lines", "text_fits", "outline_lines", "JsonOutline", "verify_chunks",
    "view_text", "page_text", "file_unchanged", "record_fields", "regular_identity", "new_slotted",
    "read_regular", "read_page", "verified_copy",
)
_CHOICES = ("auto", "cython", "python")


def _compiled() -> ModuleType:
    from . import _speedups  # type: ignore[attr-defined]

    return _speedups


def _load(requested: str) -> tuple[str, ModuleType]:
    if requested not in _CHOICES:
        raise ConfigError(f"the implementation must be one of {', '.join(_CHOICES)}, not {requested!r}")
    # The twin is imported only when it is the one chosen: a process on the
    # compiled kernels never pays for its import (start-up).
    if requested == "python":
        return "python", _twin()
    try:
        return "cython", _compiled()
    except ImportError as error:
        # Out of descriptors, the compiled module cannot be opened either: that
        # says nothing of whether it is there (nor should it bind the twin for good).
        _descriptors_left()
        if requested == "cython":
            raise ImportError(
                "OVERSPILL_IMPLEMENTATION=cython, but overspill._speedups cannot be imported "
                f"({error}); reinstall overspill with a C compiler available"
            ) from error
        return "python", _twin()


def _descriptors_left() -> None:
    """Raise StorageError when this process cannot open a file now."""
    try:
        fd = os.open(os.devnull, os.O_RDONLY)
    except OSError as error:
        raise StorageError(error.errno or 0, f"cannot load overspill's kernels: {error.strerror or error}") from None
    os.close(fd)


def _twin() -> ModuleType:
    """The pure twin, imported now.  Its files are read at the first kernel call,
    inside a store call: a process out of descriptors gets the StorageError
    every store call promises (nothing is bound, so the next call chooses again)."""
    try:
        from . import _native
    except OSError as error:
        if isinstance(error, StorageError):
            raise
        raise StorageError(error.errno or 0, f"cannot load overspill's kernels: {error.strerror or error}") from None
    return _native


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


def requested() -> str:
    """The implementation ``$OVERSPILL_IMPLEMENTATION`` asks for (``auto`` when unset).

    :raises ConfigError: a value other than auto, cython or python.
    """
    value = os.environ.get("OVERSPILL_IMPLEMENTATION", "auto").strip().lower() or "auto"
    if value not in _CHOICES:
        raise ConfigError(
            f"OVERSPILL_IMPLEMENTATION (environment) must be one of {', '.join(_CHOICES)}, not {value!r}"
        )
    return value


def __getattr__(name: str) -> object:
    # The kernels are bound on first use, not at import: ``import overspill``
    # never fails on the environment, and the command line can report a bad
    # OVERSPILL_IMPLEMENTATION as one line (exit 2) instead of a traceback.
    if name in KERNEL_NAMES or name == "IMPLEMENTATION":
        use(requested())
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
