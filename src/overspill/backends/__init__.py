"""Where resources' bytes and records live: the ``Backend`` protocol and its implementations.

``base`` holds the protocol (read its docstring first); ``local`` is the
on-disk folder.  Optional backends (``redis``) import their third-party client
only inside their own module, so ``import overspill`` never imports it.
"""

from __future__ import annotations

from .base import Backend, CleanupReport, Writer
from .local import LocalBackend

__all__ = ["Backend", "CleanupReport", "LocalBackend", "Writer"]
