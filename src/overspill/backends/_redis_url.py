"""What a Redis store URL says: the server or socket, the database, the options.

Parsed here, by one set of rules, before any client is built, so that a URL
that is wrong in any part is one ``ConfigError`` naming that part (never a
client library's ``TypeError``) and a URL that is accepted means exactly one
thing.  Standard library only: ``import overspill`` may use it.

Forms::

    redis://[[user]:password@]host[:port][/db][?option=value&...]
    rediss://...                      the same over TLS
    redis+cluster://host:port[?...]   a Redis Cluster (any node); database 0 only
    rediss+cluster://...              the same over TLS
    unix://[[user]:password@]/path/to/socket[?db=N&...]     a Unix socket
    redis+unix://...                  the same

Rules:

* the host is required for a TCP URL (``redis:///path`` is refused: it was
  read as localhost); a socket URL has no host, only an absolute path;
* the port is 1-65535 (default 6379);
* the database is a decimal number, as the path (``/3``) or as ``?db=3``; a
  URL that gives both must give the same number; ``url`` of the store shows
  the database in force as the path (``redis://host:6379/3``);
* options are those of ``OPTIONS``; ``ssl_*`` ones only with TLS;
  ``max_connections`` is at most ``MAX_CONNECTIONS``.  Socket
  timeouts default to ``CONNECT_TIMEOUT`` and ``SOCKET_TIMEOUT`` seconds: a
  server that stopped answering fails a tool call in seconds, not minutes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from .._printable import printable
from ..errors import ConfigError

if TYPE_CHECKING:
    from urllib.parse import SplitResult

__all__ = ["CONNECT_TIMEOUT", "MAX_CONNECTIONS", "OPTIONS", "SOCKET_TIMEOUT", "TCP_SCHEMES", "UNIX_SCHEMES",
           "RedisAddress", "parse_redis_url"]

TCP_SCHEMES = ("redis", "rediss", "redis+cluster", "rediss+cluster")
UNIX_SCHEMES = ("unix", "redis+unix")
#: Seconds to connect, and to wait for any one reply, unless the URL says otherwise.
CONNECT_TIMEOUT = 3.0
SOCKET_TIMEOUT = 5.0
_MAX_SECONDS = 3600.0
_DEFAULT_PORT = 6379
#: The most connections a URL may ask for, per server (per node in a Cluster).
#: redis-py's blocking pool fills a queue with one slot per allowed connection
#: when it is built: ``max_connections=10**12`` spun there for ever.
MAX_CONNECTIONS = 10_000


def _seconds(name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= _MAX_SECONDS:
        raise ConfigError(f"option {name}={text!r} must be a number of seconds in (0, {_MAX_SECONDS:g}]")
    return value


def _count(name: str, text: str) -> int:
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise ConfigError(f"option {name}={text!r} must be a positive integer")
    return int(text)


def _connections(name: str, text: str) -> int:
    # Bounded: the client allocates per allowed connection up front (see MAX_CONNECTIONS).
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_CONNECTIONS:
        raise ConfigError(f"option {name}={text!r} must be an integer from 1 to {MAX_CONNECTIONS}")
    return int(text)


def _boolean(name: str, text: str) -> bool:
    lowered = text.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"option {name}={text!r} must be true or false")


def _cert_reqs(name: str, text: str) -> str:
    if text.lower() not in ("none", "optional", "required"):
        raise ConfigError(f"option {name}={text!r} must be none, optional or required")
    return text.lower()


def _text(name: str, text: str) -> str:
    if not text:
        raise ConfigError(f"option {name} must not be empty")
    return text


def _client_name(name: str, text: str) -> str:
    # The server's CLIENT SETNAME takes only printable ASCII without spaces ('!' to '~', so
    # that CLIENT LIST splits on spaces); anything else failed at the first connection, a
    # StorageError "cannot connect", where the other options are refused before it.
    if not text:
        raise ConfigError(f"option {name} must not be empty")
    if not all("!" <= character <= "~" for character in text):
        raise ConfigError(f"option {name}={text!r} must be printable ASCII without spaces (Redis's CLIENT SETNAME)")
    return text


#: The query options a URL may carry, each with its parser; ``ssl_*`` need TLS.
OPTIONS: dict[str, Callable[[str, str], Any]] = {
    "socket_timeout": _seconds,
    "socket_connect_timeout": _seconds,
    "health_check_interval": _count,
    "max_connections": _connections,
    "client_name": _client_name,
    "ssl_cert_reqs": _cert_reqs,
    "ssl_ca_certs": _text,
    "ssl_ca_path": _text,
    "ssl_certfile": _text,
    "ssl_keyfile": _text,
    "ssl_check_hostname": _boolean,
}


@dataclass(frozen=True)
class RedisAddress:
    """A parsed Redis URL: what to connect to, and how it may be shown.

    ``options`` are keyword arguments for redis-py's ``Redis`` (or, when
    ``cluster``, ``RedisCluster``); they may hold the password, so the
    object's ``repr`` leaves them out.
    """

    shown: str
    cluster: bool
    options: dict[str, Any] = field(repr=False)
    password: Optional[str] = field(default=None, repr=False)


def _database(text: str, where: str, shown: str) -> int:
    # Decimal digits only: "/abc", "/0/1" and "/%37" are mistakes, not databases.
    if not (text.isascii() and text.isdigit()) or len(text) > 9:
        raise ConfigError(f"Redis URL {shown}: the database {where} must be a number "
                          f"(redis://host:port/N), not {text!r}")
    return int(text)


def parse_redis_url(url: str) -> RedisAddress:
    """Parse a Redis store URL (see the module docstring).

    :raises ConfigError: any part is wrong; the message names the part and
        never holds the password.
    """
    from urllib.parse import unquote, urlsplit

    from ._urls import ambiguous_credentials, redacted_url

    # (A NUL or control character of the URL is never printed back, whichever part's error names it.)
    shown_raw = printable(redacted_url(url))
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    if scheme not in TCP_SCHEMES + UNIX_SCHEMES:
        raise ConfigError(f"{shown_raw} is not a Redis URL (expected one of "
                          f"{', '.join(s + '://' for s in TCP_SCHEMES + UNIX_SCHEMES)})")
    try:
        parts = urlsplit(url)
        hostname = parts.hostname
        username, password = parts.username, parts.password
    except ValueError:
        raise ConfigError(f"malformed Redis URL {shown_raw}") from None
    if ambiguous_credentials(parts):
        raise ConfigError(f"malformed Redis URL {shown_raw}: percent-encode '@', '/', '?' and '#' "
                          "in the user name and password")
    if parts.fragment:
        raise ConfigError(f"Redis URL {shown_raw}: a fragment (#...) means nothing here")
    options, query_db = _query_options(parts.query, scheme.startswith("rediss"), shown_raw)
    options.setdefault("socket_connect_timeout", CONNECT_TIMEOUT)
    options.setdefault("socket_timeout", SOCKET_TIMEOUT)
    if username:
        options["username"] = unquote(username)
    if password is not None:
        options["password"] = unquote(password)
    credentials = ""
    if password is not None:
        credentials = f"{username or ''}:***@"
    elif username:
        credentials = f"{username}@"
    if scheme in UNIX_SCHEMES:
        address = _unix_address(scheme, parts, credentials, query_db, options, shown_raw)
    else:
        address = _tcp_address(scheme, parts, hostname, credentials, query_db, options, shown_raw)
    _os_strings_checked(options)
    return address


# What a client option holding text is called in an error (the rest: "option NAME").
_PART_NAMES = {"host": "host", "unix_socket_path": "socket path", "username": "user name", "password": "password"}
# The options sent to the server or the resolver as UTF-8 (the rest are file paths: a surrogate escape
# stands for a byte of the file's name there, which the OS takes).
_SENT_AS_UTF8 = ("host", "username", "password")


def _os_strings_checked(options: dict[str, Any]) -> None:
    """Refuse, before any client is imported or any connection made, a text option that cannot be sent
    (``_unsendable``).  The message names the part and the index, never the character (it may be a
    password's) nor the URL.

    :raises ConfigError: such an option, naming its part.
    """
    for name, value in options.items():
        what = _unsendable(name, value) if isinstance(value, str) else None
        if what is not None:
            part = _PART_NAMES.get(name, f"option {name}")
            raise ConfigError(f"the Redis URL's {part} holds {what}, which no host name, path or credential can hold")


def _unsendable(name: str, value: str) -> Optional[str]:
    """What in option ``name``'s ``value`` cannot be sent, or None: a NUL ends a C string; a lone
    surrogate has no encoding, where a path's surrogate escape stands for a byte of the file's name
    (``os_string_problem``) but a host name or a credential goes out as UTF-8."""
    from .._arguments import os_string_problem

    nul = value.find("\x00")
    if nul >= 0:
        return f"a NUL character (at index {nul})"
    if value.isascii():
        return None
    if name in _SENT_AS_UTF8:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "a lone surrogate"
        return None
    return None if os_string_problem(value, name) is None else "a lone surrogate"


def _query_options(query: str, tls: bool, shown_raw: str) -> tuple[dict[str, Any], Optional[int]]:
    """The client options a URL's query gives, and its ``?db=`` (None without one).

    :raises ConfigError: a malformed query, an unknown, repeated or wrong option.
    """
    from urllib.parse import parse_qsl

    options: dict[str, Any] = {}
    query_db: Optional[int] = None
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise ConfigError(f"Redis URL {shown_raw}: malformed query (expected name=value&...)") from None
    for name, value in pairs:
        if name in options or (name == "db" and query_db is not None):
            raise ConfigError(f"Redis URL {shown_raw}: option {name} is given twice")
        if name == "db":
            query_db = _database(value, "in ?db=", shown_raw)
            continue
        parse = OPTIONS.get(name)
        if parse is None:
            raise ConfigError(f"Redis URL {shown_raw}: unknown option {name!r} (expected db or one of "
                              f"{', '.join(OPTIONS)})")
        if name.startswith("ssl_") and not tls:
            raise ConfigError(f"Redis URL {shown_raw}: option {name} needs TLS (rediss://)")
        try:
            options[name] = parse(name, value)
        except ConfigError as error:
            raise ConfigError(f"Redis URL {shown_raw}: {error}") from None
    return options, query_db


def _unix_address(scheme: str, parts: SplitResult, credentials: str, query_db: Optional[int],
                  options: dict[str, Any], shown_raw: str) -> RedisAddress:
    """A ``unix://`` (``redis+unix://``) URL's address.

    :raises ConfigError: a host is given, or the socket path is not absolute.
    """
    from urllib.parse import unquote

    if parts.netloc.rpartition("@")[2]:
        raise ConfigError(f"Redis URL {shown_raw}: a socket URL has no host ({scheme}:///path/to/socket)")
    path = unquote(parts.path)
    if not path.startswith("/") or path == "/":
        raise ConfigError(f"Redis URL {shown_raw}: the socket path must be absolute ({scheme}:///path/to/socket)")
    database = 0 if query_db is None else query_db
    options.update(unix_socket_path=path, db=database)
    query_shown = f"?db={database}" if database else ""
    return RedisAddress(f"{scheme}://{credentials}{parts.path}{query_shown}", False, options,
                        options.get("password"))


def _tcp_address(scheme: str, parts: SplitResult, hostname: Optional[str], credentials: str,
                 query_db: Optional[int], options: dict[str, Any], shown_raw: str) -> RedisAddress:
    """A ``redis://`` (``rediss://``, ``+cluster``) URL's address.

    :raises ConfigError: no host, a wrong port, two databases, or a database in a Cluster URL.
    """
    from urllib.parse import unquote

    cluster = scheme.endswith("+cluster")
    tls = scheme.startswith("rediss")
    if not hostname:
        raise ConfigError(f"Redis URL {shown_raw} names no host (redis://host:port; for a Unix socket, "
                          "unix:///path/to/socket)")
    try:
        port = parts.port
    except ValueError:
        port = -1
    if port is None:
        port_text = parts.netloc.rpartition("@")[2].rpartition("]")[2]
        if port_text.endswith(":"):
            raise ConfigError(f"Redis URL {shown_raw}: the port is empty (1 to 65535)")
        port = _DEFAULT_PORT
    if not 1 <= port <= 65535:
        raise ConfigError(f"Redis URL {shown_raw}: the port must be 1 to 65535")
    path_db: Optional[int] = None
    if parts.path not in ("", "/"):
        path_db = _database(parts.path[1:], "in the path", shown_raw)
    if path_db is not None and query_db is not None and path_db != query_db:
        raise ConfigError(f"Redis URL {shown_raw} names two databases: /{path_db} and ?db={query_db} "
                          "(give one)")
    database = path_db if path_db is not None else (query_db or 0)
    if cluster and database:
        raise ConfigError(f"Redis URL {shown_raw}: a Redis Cluster has only database 0, not {database}")
    host = unquote(hostname)
    options.update(host=host, port=port)
    if not cluster:
        options["db"] = database
    if tls:
        options["ssl"] = True
    host_shown = f"[{host}]" if ":" in host else host
    suffix = "" if cluster else f"/{database}"
    return RedisAddress(f"{scheme}://{credentials}{host_shown}:{port}{suffix}", cluster, options,
                        options.get("password"))
