"""Store URLs as they may be shown: the Redis schemes, and a URL without its password."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up; annotations are never evaluated
    from urllib.parse import SplitResult

__all__ = ["REDIS_SCHEMES", "ambiguous_credentials", "redacted_url"]

REDIS_SCHEMES = ("redis", "rediss", "redis+cluster", "rediss+cluster", "unix", "redis+unix")


def ambiguous_credentials(parts: SplitResult) -> bool:
    """Whether a split URL has an '@' past its host: an unencoded '@' with '/',
    '?' or '#' in a password (``redis://:p@ss/w0rd@host``) splits it there, so
    the "host", path or query hold pieces of the password."""
    return "@" in parts.path or "@" in parts.query or "@" in parts.fragment


def redacted_url(url: str) -> str:
    """``url`` as it may be shown: the password replaced by ``***``, no query
    or fragment (they may carry one too)."""
    from urllib.parse import urlsplit  # only when a URL is given: start-up stays lean

    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "<a malformed URL>"
    if ambiguous_credentials(parts):
        return "<a malformed URL>"
    user, password = parts.username, parts.password
    if password is not None:
        credentials = f"{user or ''}:***@"
    else:
        credentials = f"{user}@" if user else ""
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{credentials}{host}{'' if port is None else f':{port}'}{parts.path}"
