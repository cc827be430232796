"""The webfetch tool: an http(s) page as Markdown, text or HTML, within 5 MiB."""

from __future__ import annotations

# http.client, urllib.request and html.parser (with email, ssl and socket behind
# them) cost more than the rest of overspill together, and only a fetch needs
# them: they are imported inside ``webfetch``, so ``import overspill.tools``
# (the CLI, the MCP server) stays cheap.
import codecs
from typing import Optional
from urllib.parse import urlsplit

from ..store import ToolOutputStore
from ._result import MAX_RESPONSE_BYTES, ToolResult, bounded, failure

__all__ = ["FORMATS", "webfetch"]

FORMATS = ("markdown", "text", "html")
_TEXT_TYPES = {"application/json", "application/xml", "application/javascript", "application/x-javascript",
               "application/xhtml+xml", "application/ld+json", "application/x-yaml", "application/yaml",
               "application/toml", "application/x-sh", "application/rss+xml", "application/atom+xml"}
_HTML_TYPES = {"text/html", "application/xhtml+xml"}
_READ_SIZE = 64 * 1024
_USER_AGENT = "overspill-webfetch/0.1"


_redirect_classes: Optional[tuple[type, type]] = None


def _redirect_handling() -> tuple[type, type]:
    """The refused-redirect error and the handler raising it, defined on first use."""
    global _redirect_classes
    if _redirect_classes is None:
        import urllib.error
        import urllib.request

        class _RefusedRedirect(urllib.error.URLError):
            pass

        class _HttpOnlyRedirects(urllib.request.HTTPRedirectHandler):
            """Follows redirects only to http and https (urllib would also follow ftp)."""

            def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
                if urlsplit(newurl).scheme.lower() not in ("http", "https"):
                    raise _RefusedRedirect(f"refused a redirect to {newurl}")
                return super().redirect_request(req, fp, code, msg, headers, newurl)

        _redirect_classes = (_RefusedRedirect, _HttpOnlyRedirects)
    return _redirect_classes


def _is_text(content_type: str) -> bool:
    return (content_type.startswith("text/") or content_type in _TEXT_TYPES
            or content_type.endswith(("+json", "+xml")))


def _charset(declared: Optional[str], body: bytes, is_html: bool) -> str:
    from ._html import sniff_charset

    for candidate in (declared, sniff_charset(body) if is_html else None):
        if candidate:
            try:
                return codecs.lookup(candidate).name
            except LookupError:
                continue
    return "utf-8"


def webfetch(store: ToolOutputStore, session_id: str, tool_call_id: str, url: str, *,
             format: str = "markdown", timeout: float = 30.0) -> ToolResult:
    """Fetch an http or https URL and return its text, bounded by the store.

    A response over ``MAX_RESPONSE_BYTES`` (by Content-Length, or counted while
    reading) is refused and nothing of it is kept; non-text bodies are refused.
    HTML becomes Markdown (``"markdown"``) or text (``"text"``), or is kept
    (``"html"``), decoded by its declared charset.

    :param format: ``"markdown"``, ``"text"`` or ``"html"``.
    :param timeout: seconds for the connection and each read.
    """
    if not isinstance(url, str):
        return failure("url must be a string")
    try:
        parts = urlsplit(url.strip())
        hostname = parts.hostname
    except ValueError as error:  # "http://[::1": urlsplit refuses an unclosed IPv6 address
        return failure(f"invalid URL {url!r}: {error}")
    if parts.scheme.lower() not in ("http", "https") or not hostname:
        return failure(f"only http and https URLs can be fetched, not {url!r}")
    if format not in FORMATS:
        return failure(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        return failure("timeout must be a positive number of seconds")
    import http.client
    import socket
    import urllib.error
    import urllib.request

    from ._html import html_to_markdown, html_to_text

    refused_redirect, http_only_redirects = _redirect_handling()
    opener = urllib.request.build_opener(http_only_redirects)
    request = urllib.request.Request(url.strip(), headers={
        "User-Agent": _USER_AGENT, "Accept": "text/html, text/markdown, text/plain;q=0.9, */*;q=0.5"})
    try:
        with opener.open(request, timeout=timeout) as response:
            final_url = response.geturl()
            headers = response.headers
            content_type = headers.get_content_type()
            declared = headers.get("Content-Length")
            if declared is not None and declared.strip().isdigit() and int(declared) > MAX_RESPONSE_BYTES:
                return failure(f"refused: the response is {int(declared)} bytes, over the "
                               f"{MAX_RESPONSE_BYTES}-byte limit")
            if not _is_text(content_type):
                return failure(f"refused: {url} returned {content_type}, which is not text")
            body = bytearray()
            while chunk := response.read(_READ_SIZE):
                body += chunk
                if len(body) > MAX_RESPONSE_BYTES:
                    return failure(f"refused: the response is over the {MAX_RESPONSE_BYTES}-byte limit")
            status = response.status
    except urllib.error.HTTPError as error:
        return failure(f"HTTP {error.code} {error.reason} from {url}")
    except refused_redirect as error:
        return failure(str(error.reason))
    except urllib.error.URLError as error:
        return failure(f"could not fetch {url}: {error.reason}")
    except (http.client.HTTPException, socket.timeout, TimeoutError, OSError, ValueError) as error:
        return failure(f"could not fetch {url}: {type(error).__name__}: {error}")
    is_html = content_type in _HTML_TYPES
    text = bytes(body).decode(_charset(headers.get_content_charset(), bytes(body[:4096]), is_html), "replace")
    if is_html and format == "markdown":
        text, mime = html_to_markdown(text), "text/markdown"
    elif is_html and format == "text":
        text, mime = html_to_text(text), "text/plain"
    else:
        mime = content_type
    metadata = {"url": final_url, "status": status, "content_type": content_type, "bytes": len(body)}
    return bounded(store.truncate(session_id, tool_call_id, text, mime=mime), **metadata)
