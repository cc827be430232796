"""Which backend a store opens: a local folder, or a server named by a URL.

``ToolOutputStore(data_dir=None, *, url=None)`` decides, first match wins:

1. ``url``: ``redis://``, ``rediss://`` (TLS), ``redis+cluster://``,
   ``rediss+cluster://``, or ``unix://`` / ``redis+unix://`` (a socket) opens
   Redis (see ``_redis_url`` for every part); ``file:///abs/path`` or a plain path is
   the local folder;
2. ``data_dir``: the local folder;
3. ``$OVERSPILL_STORE_URL``, read like ``url``;
4. the default data folder (``$OVERSPILL_DATA_DIR``, ``$XDG_DATA_HOME/overspill``,
   ``~/.local/share/overspill``).

A URL is only ever shown through ``redacted_url``: a password never reaches
an error message or a ``repr``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Union

from ..config import default_data_dir
from ..errors import ConfigError, StorageError
from ._urls import REDIS_SCHEMES, redacted_url

if TYPE_CHECKING:
    from .base import Backend

# ``redacted_url`` is named here too: callers that show a location's URL take it from here.
__all__ = ["STORE_URL_VARIABLE", "Location", "check_url", "locate", "open_backend", "redacted_url"]

STORE_URL_VARIABLE = "OVERSPILL_STORE_URL"


@dataclass(frozen=True)
class Location:
    """Where a store keeps its resources: ``folder`` (the data folder) or ``url``."""

    folder: Optional[Path] = None
    url: Optional[str] = field(default=None, repr=False)  # may hold a password: never shown

    @property
    def shown(self) -> str:
        """The folder, or the URL as it may be shown: no password, and for Redis
        the address and database in force (``redis://host:6379/3`` for ``?db=3``)."""
        if self.url is None:
            return str(self.folder)
        if _scheme(self.url) in REDIS_SCHEMES:
            from ._redis_url import parse_redis_url

            return parse_redis_url(self.url).shown
        return redacted_url(self.url)


# RFC 3986's scheme; one letter is a Windows drive ("C:\\..."), which is a path.
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):")


def _scheme(url: str) -> str:
    match = _SCHEME.match(url)
    return match.group(1).lower() if match else ""


def _from_url(url: str, source: str) -> Location:
    """The location ``url`` names; ``source`` says where it came from (``url``,
    ``--store-url``, ``OVERSPILL_STORE_URL (environment)``) in every error."""
    if url == "":
        raise ConfigError(f"{source} is empty (expected a store URL or a path)")
    scheme = _scheme(url)
    if scheme in REDIS_SCHEMES:
        from ._redis_url import parse_redis_url

        try:
            parse_redis_url(url)  # every part checked now, before any client is imported
        except ConfigError as error:
            raise ConfigError(f"{source}: {error}") from None
        return Location(url=url)
    if scheme == "file":
        from urllib.parse import unquote, urlsplit

        parts = urlsplit(url)
        path = unquote(parts.path)
        if not url.lower().startswith("file://") or parts.netloc not in ("", "localhost") or not path.startswith("/"):
            raise ConfigError(f"{source} must be file:///absolute/path, not {redacted_url(url)}")
        return Location(folder=Path(path))
    if scheme == "":
        return Location(folder=Path(url))
    raise ConfigError(f"{source} has an unsupported scheme {scheme!r} (expected a path, "
                      f"file://, {', '.join(s + '://' for s in REDIS_SCHEMES)})")


def check_url(url: str, source: str) -> Location:
    """Where ``url``, given by ``source`` (a command-line flag, say), keeps
    resources.

    :raises ConfigError: as ``locate``, naming ``source``.
    """
    return _from_url(url, source)


def locate(data_dir: Union[str, os.PathLike[str], None], url: Optional[str],
           environ: Optional[Mapping[str, str]] = None) -> Location:
    """Where a store with these arguments keeps its resources (see the module docstring).

    :raises TypeError: ``url`` is not a str, or ``data_dir`` not a path.
    :raises ValueError: both ``data_dir`` and ``url`` were given.
    :raises ConfigError: the URL (argument or environment) is empty or of an
        unsupported form.
    """
    if data_dir is not None and not isinstance(data_dir, (str, os.PathLike)):
        raise TypeError(f"data_dir must be a path, not {type(data_dir).__name__}")
    if url is not None and not isinstance(url, str):
        raise TypeError(f"url must be a str, not {type(url).__name__}")
    if url is not None and data_dir is not None:
        raise ValueError("give data_dir or url, not both")
    if url is not None:
        return _from_url(url, "url")
    if data_dir is not None:
        return Location(folder=Path(data_dir))
    environment = os.environ if environ is None else environ
    variable = environment.get(STORE_URL_VARIABLE, "").strip()
    if variable:
        return _from_url(variable, f"{STORE_URL_VARIABLE} (environment)")
    return Location(folder=default_data_dir())


def open_backend(location: Location, *, durable: bool = True, create: bool = True) -> Backend:
    """The backend that keeps the resources at ``location``.

    A folder is the local backend over ``folder/tool-output/managed`` (its
    listing index beside it, in ``folder/tool-output/index``); a URL is
    Redis, whose client is imported only here.

    :param durable: fsync before a write returns (the local folder).
    :param create: create the local folder now; with False the first write does.
    :raises ConfigError: the URL's client library is not installed.
    :raises StorageError: the folder cannot be created, or the server cannot be reached.
    """
    if location.url is not None:
        try:
            from .redis import RedisBackend
        except ImportError as error:
            if error.name != "redis" and not str(error.name or "").startswith("redis."):
                raise
            raise ConfigError(f"{redacted_url(location.url)} needs the redis client: "
                              "pip install 'overspill[redis]'") from None
        return RedisBackend(location.url)
    from .local import LocalBackend

    assert location.folder is not None
    directory = location.folder / "tool-output" / "managed"
    try:
        # The listing index is a cache beside the managed folder, never in it.
        return LocalBackend(directory, durable=durable, index=location.folder / "tool-output" / "index",
                            create=create)
    except OSError as error:
        raise StorageError(error.errno, f"cannot create {directory}: {error.strerror or error}") from None
