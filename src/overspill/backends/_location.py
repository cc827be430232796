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

import errno
import os

from .._arguments import os_string, os_string_problem
from .._files import folder_text
from .._frozen import frozen
from ..config import default_data_folder
from ..errors import ConfigError, StorageError
from ._urls import REDIS_SCHEMES, redacted_url

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and pathlib cost start-up (issue 21); annotations are never evaluated
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Optional, Union

    from .base import Backend

# ``redacted_url`` is named here too: callers that show a location's URL take it from here.
__all__ = ["STORE_URL_VARIABLE", "Location", "check_url", "locate", "open_backend", "redacted_url"]

STORE_URL_VARIABLE = "OVERSPILL_STORE_URL"


@frozen(defaults={"place": None, "url": None}, hidden=("url",))  # a URL may hold a password: never shown
class Location:
    """Where a store keeps its resources: ``place`` (the data folder, as
    ``str(pathlib.Path(...))`` writes it; ``folder`` gives the Path) or ``url``."""

    __slots__ = ("place", "url")
    place: Optional[str]
    url: Optional[str]

    @property
    def folder(self) -> Optional[Path]:
        """The data folder as a Path (None for a URL); pathlib is imported only when asked."""
        if self.place is None:
            return None
        from pathlib import Path

        return Path(self.place)

    @property
    def shown(self) -> str:
        """The folder, or the URL as it may be shown: no password, and for Redis
        the address and database in force (``redis://host:6379/3`` for ``?db=3``)."""
        if self.url is None:
            return str(self.place)
        if _scheme(self.url) in REDIS_SCHEMES:
            from ._redis_url import parse_redis_url

            return parse_redis_url(self.url).shown
        return redacted_url(self.url)


# RFC 3986's scheme: a letter, then letters, digits, "+", "." or "-", then ":".
# One letter is a Windows drive ("C:\\..."), which is a path.
_SCHEME_TAIL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+.-")


def _scheme(url: str) -> str:
    colon = url.find(":")
    if colon < 2 or not (url[0].isascii() and url[0].isalpha()) or not _SCHEME_TAIL.issuperset(url[1:colon]):
        return ""
    return url[:colon].lower()


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
        return Location(place=_folder(path, f"{source}'s path"))
    if scheme == "":
        return Location(place=_folder(url, source))
    raise ConfigError(f"{source} has an unsupported scheme {scheme!r} (expected a path, "
                      f"file://, {', '.join(s + '://' for s in REDIS_SCHEMES)})")


def _folder(path: str, source: str) -> str:
    """``folder_text(path)`` for a path the OS can take.

    :raises ConfigError: it holds a NUL or a lone surrogate, naming ``source``.
    """
    problem = os_string_problem(path, source)
    if problem is not None:
        raise ConfigError(problem)
    return folder_text(path)


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
    :raises ValueError: both ``data_dir`` and ``url`` were given, or ``data_dir``
        is empty (an unset variable's expansion, not a wish for the working folder)
        or holds a NUL or a lone surrogate (no folder's name can).
    :raises ConfigError: the URL (argument or environment) is empty or of an
        unsupported form, or its path (a Redis URL's host, credentials, socket
        or certificate path) holds a NUL or a lone surrogate.
    """
    if data_dir is not None and not isinstance(data_dir, (str, os.PathLike)):
        raise TypeError(f"data_dir must be a path, not {type(data_dir).__name__}")
    if url is not None and not isinstance(url, str):
        raise TypeError(f"url must be a str, not {type(url).__name__}")
    if url is not None and data_dir is not None:
        raise ValueError("give data_dir or url, not both")
    if data_dir is not None and not os.fspath(data_dir):
        raise ValueError("data_dir must not be empty (give '.' for the working folder)")
    if url is not None:
        return _from_url(url, "url")
    if data_dir is not None:
        folder = os.fspath(data_dir)
        if isinstance(folder, str):
            os_string(folder, "data_dir")
        return Location(place=folder_text(folder))
    environment = os.environ if environ is None else environ
    variable = environment.get(STORE_URL_VARIABLE, "").strip()
    if variable:
        return _from_url(variable, f"{STORE_URL_VARIABLE} (environment)")
    return Location(place=default_data_folder())


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

    assert location.place is not None
    directory = os.path.join(location.place, "tool-output", "managed")
    try:
        # The listing index is a cache beside the managed folder, never in it.
        return LocalBackend(directory, durable=durable, index=os.path.join(location.place, "tool-output", "index"),
                            create=create)
    except OSError as error:
        blocking = _file_in_the_way(directory) if error.errno in (errno.EEXIST, errno.ENOTDIR) else None
        if blocking is not None:
            # makedirs says "File exists" or "Not a directory" about some component: name the file.
            raise StorageError(errno.ENOTDIR, f"cannot create {directory}: {blocking} is not a folder") from None
        raise StorageError(error.errno, f"cannot create {directory}: {error.strerror or error}") from None


def _file_in_the_way(directory: str) -> str | None:
    """The outermost component of ``directory`` that exists and is not a folder (a symlink to
    one is a folder here, as makedirs takes it), or None."""
    path = os.path.abspath(directory)
    parts = []
    while True:
        parts.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    for component in reversed(parts):
        if not os.path.lexists(component):
            return None
        if not os.path.isdir(component):
            return component
    return None
