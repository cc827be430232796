"""Every error overspill raises on purpose.

Each one is an ``OverspillError`` and also the built-in exception it means, so
callers can catch either::

    OverspillError
     ├── InvalidResourceError    (ValueError)      not a well-formed tool-output:// URI
     ├── ResourceNotFoundError   (LookupError)     missing, malformed or size-mismatched
     │    └── ResourceCorruptError                 a checksum does not match the payload
     ├── AccessDeniedError       (PermissionError) another session's resource
     ├── ConfigError             (ValueError)      a bad setting, naming the key and its source
     ├── SearchError             (RuntimeError)    a grep search could not finish
     │    └── PatternTooSlowError                  its pattern ran out of time (narrow it)
     ├── StorageError            (OSError)         a write failed; nothing was left behind
     ├── BackgroundLimitError    (RuntimeError)    max_background commands already run in this session
     └── UnsupportedError        (NotImplementedError) the backend cannot do this (background commands on Redis)
"""

from __future__ import annotations

__all__ = [
    "AccessDeniedError",
    "BackgroundLimitError",
    "ConfigError",
    "InvalidResourceError",
    "OverspillError",
    "ResourceCorruptError",
    "PatternTooSlowError",
    "ResourceNotFoundError",
    "SearchError",
    "StorageError",
    "UnsupportedError",
]


class OverspillError(Exception):
    """Base class of every error overspill raises on purpose."""


class InvalidResourceError(OverspillError, ValueError):
    """The string is not a well-formed ``tool-output://`` URI or resource id, or
    a page request's offset or limit is not a whole number in range.

    Raised before any file is touched.
    """


class ResourceNotFoundError(OverspillError, LookupError):
    """The resource does not exist, or its files are malformed or inconsistent."""


class ResourceCorruptError(ResourceNotFoundError):
    """The payload does not match the checksums recorded when it was written."""


class AccessDeniedError(OverspillError, PermissionError):
    """The resource belongs to another session."""


class ConfigError(OverspillError, ValueError):
    """A configuration value is invalid; the message names the key and its source."""


class SearchError(OverspillError, RuntimeError):
    """A grep search could not finish: its pattern ran out of time, or the
    process doing the matching failed."""


class PatternTooSlowError(SearchError):
    """The pattern took longer than the search's time budget (``re`` backtracks
    without bound on patterns such as ``(a+)+$``); the message says to narrow it."""


class StorageError(OverspillError, OSError):
    """Writing failed (for example, the disk is full); nothing was left behind."""


class BackgroundLimitError(OverspillError, RuntimeError):
    """A session already has ``max_background`` background commands running."""


class UnsupportedError(OverspillError, NotImplementedError):
    """The store's backend does not support this operation (it says so; nothing falls back)."""
