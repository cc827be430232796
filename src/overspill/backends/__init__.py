"""Where resources' bytes and records live: the ``Backend`` protocol and its implementations.

``base`` holds the protocol (read its docstring first); ``local`` is the
on-disk folder.  Optional backends (``redis``) import their third-party client
only inside their own module, so ``import overspill`` never imports it.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .base import Backend, CleanupReport, Writer
    from .local import LocalBackend

__all__ = ["Backend", "CleanupReport", "LocalBackend", "Writer"]

# Loaded on first use (PEP 562): importing any backend module imports this
# package first, and the protocols need typing, which ``import overspill`` avoids.
_HOMES = {"Backend": "base", "Writer": "base", "CleanupReport": "_report", "LocalBackend": "local"}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    full = f"{__name__}.{home}"
    __import__(full)  # not importlib.import_module: importlib imports warnings
    value = getattr(sys.modules[full], name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
