"""The webfetch tool: an http(s) page as Markdown, text or HTML, within 5 MiB."""

from __future__ import annotations

# http.client, urllib.request and html.parser (with email, ssl and socket behind
# them) cost more than the rest of overspill together, and only a fetch needs
# them: they are imported inside ``webfetch`` and ``_fetch``, so ``import overspill.tools``
# (the CLI, the MCP server) stays cheap.
import codecs
import re
import time
import zlib
from typing import Any, Callable, Optional
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from .._arguments import metadata_string, os_string_problem, wait_seconds
from .._binary import BINARY_MIME, SNIFF_BYTES, output_is_binary
from .._frontend import is_binary_mime
from ..errors import OverspillError
from ..store import ToolOutputStore
from ._result import MAX_RESPONSE_BYTES, ToolResult, bounded, failure

__all__ = ["FORMATS", "webfetch"]

FORMATS = ("markdown", "text", "html")
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

            def http_error_302(self, req, fp, code, msg, headers):  # type: ignore[no-untyped-def]
                # A redirect's body is no page, and urllib reads it whole into memory (fp.read(), no
                # limit) before it follows: closed unread, it reads as empty.  urllib sends
                # "Connection: close", so no later response waits behind it to be drained.
                fp.close()
                # Decided before urllib's own check, which refuses gopher:, file:, data: (not ftp:)
                # with the Location whole, its password too, in the message: every refused target
                # is told by this one rule, masked.  The Location is the one urllib follows.
                location = headers["location"] if "location" in headers else headers.get("uri")
                if location is not None:
                    target = urljoin(req.full_url, location)
                    if urlsplit(target).scheme.lower() not in ("http", "https"):
                        raise _RefusedRedirect(f"refused a redirect to {_masked(target)}")
                shown = _masked(target) if location is not None else "its target"
                # Every hop counts: urllib's own limit is 10 distinct URLs, each followed up to 4
                # times, so a chain that comes back to its URLs went far past 10 redirects.
                if sum(getattr(req, "redirect_dict", {}).values()) >= self.max_redirections:
                    raise _RefusedRedirect(f"refused: more than {self.max_redirections} redirects, the most "
                                           f"webfetch follows (the next was to {shown})")
                try:
                    return super().http_error_302(req, fp, code, msg, headers)
                except urllib.error.HTTPError as error:
                    # urllib calls its limits "a redirect error that would lead to an infinite loop", as
                    # an HTTP error of the last status; the count is checked above, so this is its
                    # other: a URL redirected to again and again.
                    if not str(error.msg).startswith(self.inf_msg):
                        raise
                    error.close()
                    raise _RefusedRedirect(f"refused: the redirects go round a loop (back to {shown})") from None

            # The base class binds these to its own http_error_302.
            http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302

            def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
                # The target as the first URL is requested: urllib would ask for the host
                # "user:pw@host".  Its userinfo is left out and, unlike curl, not sent as Basic auth:
                # the credentials are the server's, not the model's, and the target may be any host.
                return super().redirect_request(req, fp, code, msg, headers, _request_target(newurl)[0])

        _redirect_classes = (_RefusedRedirect, _HttpOnlyRedirects)
    return _redirect_classes


# The successful statuses (urllib's rule: 2xx) that bring no page here, and why, told after the status:
# webfetch asks for no range, so a 206's part is not the page, and sends no A-IM, so a 226 IM Used's
# delta (RFC 3229) is not either.
_NOT_THE_PAGE = {206: "a part of the page, though webfetch asked for all of it",
                 226: "a delta of the page, though webfetch asked for none"}

_status_class: Optional[type] = None


def _status_handling() -> type:
    """urllib's rule for statuses (outside 2xx, an ``HTTPError``) with those of ``_NOT_THE_PAGE``
    errors too, defined on first use: the one ``HTTPError`` line of ``_exchange`` tells the model
    of them as of any status that brings no page."""
    global _status_class
    if _status_class is None:
        import urllib.request

        class _PagesOnly(urllib.request.HTTPErrorProcessor):
            def http_response(self, request, response):  # type: ignore[no-untyped-def]
                if response.code in _NOT_THE_PAGE:
                    # As the base class passes on an error status: the default handler raises HTTPError.
                    return self.parent.error("http", request, response, response.code, response.msg, response.info())
                return super().http_response(request, response)

            https_response = http_response

        _status_class = _PagesOnly
    return _status_class


# A media type as RFC 9110 (8.3.1) writes it: ``type "/" subtype``, each a token; the parameters follow a ";".
_MEDIA_TYPE = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+/[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def _declared_type(headers: Any) -> Optional[str]:
    """The media type ``headers`` declare (lower case, no parameters), or None when they declare
    none: no Content-Type, or one that is empty or no ``type/subtype`` (``octet-stream``, ``image``,
    ``;charset=utf-8``), which email's ``get_content_type`` would read as text/plain.  Browsers take such
    a value as no type and sniff (the WHATWG MIME Sniffing Standard), as RFC 9110 (8.3) lets them."""
    value = headers.get("Content-Type")
    if value is None or not _MEDIA_TYPE.fullmatch(value.split(";", 1)[0].strip(" \t")):
        return None
    return headers.get_content_type()


def _field_list(headers: Any, name: str) -> Optional[str]:
    """All of the ``name`` field lines in ``headers`` as the one comma-separated list they stand for
    (RFC 9110 5.3; ``headers.get`` reads the first line only), an empty line adding nothing; None
    when there is none."""
    values = [value.strip() for value in headers.get_all(name, ()) if value.strip()]
    return ", ".join(values) if values else None


# A Content-Length value (RFC 9110 8.6): decimal digits.
_DIGITS = re.compile("[0-9]+")


def _content_length(headers: Any, url: str) -> Optional[int]:
    """The body's length as the Content-Length field lines of ``headers`` declare it, at most
    ``MAX_RESPONSE_BYTES``: their values, on one line or several, all the same decimal number,
    which a list of equal values stands for (RFC 9110 8.6 lets a recipient take them as one);
    None when there is none.  ``url`` is the URL the messages quote.

    :raises _Refused: differing values, or one that is no decimal number (``+5``, ``5_0``, which
        http.client's ``int`` reads; a line with no value, or a list with an empty member such as
        ``5,``, which http.client passes over or reads as no length): RFC 9112 (6.3) makes such a response malformed, and differing ones are a
        smuggling vector (http.client reads the first line's); or a length over the limit.
    """
    # Every line, blank ones too (``_field_list`` drops them, as a list field's empty lines add
    # nothing): a Content-Length line without a digit (RFC 9110 8.6) declares no length.
    lines = [value.strip() for value in headers.get_all("Content-Length", ())]
    if not lines:
        return None
    listed = ", ".join(lines)
    members = [item.strip(" \t") for item in listed.split(",")]
    # Leading zeros do not make a value differ.
    values = {value.lstrip("0") or "0" if _DIGITS.fullmatch(value) else value for value in members if value}
    if len(values) > 1:
        raise _Refused(f"refused: {url} is sent with differing Content-Length values {listed!r}: its length is unknown")
    # Only a list of identical values stands for one (RFC 9110 8.6): an empty member ("5,", ",5",
    # "5,,5", a blank line) makes it no such list, though a list field's empty members are
    # otherwise ignored (5.6.1); Content-Length's own grammar is digits.
    value = values.pop() if values and all(members) else ""
    if not _DIGITS.fullmatch(value):
        raise _Refused(f"refused: {url} is sent with an invalid Content-Length {listed!r}: its length is unknown")
    # (Its digits, not int(): Python refuses to read or write an int of over 4300 digits.)
    if len(value) > len(str(MAX_RESPONSE_BYTES)) or int(value) > MAX_RESPONSE_BYTES:
        raise _Refused(f"refused: the response is {value} bytes, over the {MAX_RESPONSE_BYTES}-byte limit")
    return int(value)


def _chunked(headers: Any, url: str, version: int) -> bool:
    """Whether the body is framed by chunks: True when the Transfer-Encoding field lines of
    ``headers`` (on one line or several, white space around each coding and empty list members
    ignored as RFC 9110 5.6.1 asks, any case) name ``chunked`` and nothing else; False when there
    are none.  ``version`` is http.client's (10 for HTTP/1.0); ``url`` the URL the messages quote.

    :raises _Refused: a field that names no coding or another one (``gzip, chunked``, ``identity``):
        http.client undoes only a lone ``chunked`` and reads anything else as the body, its chunk
        framing shown as text; or an HTTP/1.0 response with one, whose framing RFC 9112 (6.1) says
        a client MUST treat as faulty (HTTP/1.0 has no transfer codings).
    """
    # Every line, blank ones too (``_field_list`` drops them): a field that names no coding is not
    # one that is absent.
    lines = [value.strip() for value in headers.get_all("Transfer-Encoding", ())]
    if not lines:
        return False
    listed = ", ".join(lines)
    codings = [coding.lower() for coding in (item.strip(" \t") for item in listed.split(",")) if coding]
    if codings != ["chunked"]:
        raise _Refused(f"refused: {url} is sent with Transfer-Encoding {listed!r}, which webfetch cannot decode")
    if version == 10:
        raise _Refused(f"refused: {url} is an HTTP/1.0 response sent with Transfer-Encoding {listed!r}, "
                       "which HTTP/1.0 does not have: its framing is faulty")
    return True


def _is_text(content_type: str) -> bool:
    """Whether a body of ``content_type`` is kept as text: by the front ends' own
    rule (``is_binary_mime``), so that the page stored under it reads back as text."""
    return not is_binary_mime(content_type)


# The byte-order marks HTML's encoding sniffing reads first (the WHATWG Encoding
# Standard's "decode"), and the codec each names.
_BYTE_ORDER_MARKS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


def _decoded(body: bytes, declared: Optional[str], is_html: bool) -> str:
    """``body`` as text: by its byte-order mark (which is dropped), else the
    charset the headers declare, else the one an HTML page names, else UTF-8,
    the order of HTML's encoding sniffing; invalid bytes become U+FFFD.  A
    charset is read by the WHATWG Encoding Standard's labels, as browsers read
    it (``_encodings``: ``iso-8859-1`` is windows-1252); a name the standard
    does not know (``utf-7``, ``unicode_escape``, ``hex``) is passed over."""
    from ._encodings import decode, encoding_of, sniff_charset

    for mark, codec in _BYTE_ORDER_MARKS:
        if body.startswith(mark):
            return body[len(mark):].decode(codec, "replace")
    encoding = encoding_of(declared) or (sniff_charset(body[:4096]) if is_html else None)
    return decode(body, encoding or "UTF-8")


class _Refused(Exception):
    """Why the page is not fetched or not kept, in the one line the model is told."""


class _Response:
    """What ``_fetch`` read: the URL after redirects, the status, the content type,
    the charset the headers declare (if any) and the body."""

    __slots__ = ("url", "status", "content_type", "charset", "body")

    def __init__(self, url: str, status: int, content_type: str, charset: Optional[str], body: bytes) -> None:
        self.url = url
        self.status = status
        self.content_type = content_type
        self.charset = charset
        self.body = body


# The password of a URL's userinfo (``scheme://user:PASSWORD@host``): up to the authority's last "@".
_PASSWORD = re.compile(r"^(\s*[A-Za-z][A-Za-z0-9+.-]*://[^/?#@:]*:)[^/?#]*@")


def _masked(url: str) -> str:
    """``url`` as a message may quote it: a password in it as ``***`` (messages reach logs and
    transcripts that the URL's own call may not)."""
    return _PASSWORD.sub(r"\1***@", url)


# What a request target may carry as it is: printable ASCII but the bytes browsers percent-encode
# (the WHATWG URL Standard's path and query percent-encode sets; "%" stays, so %XX is kept as it is).
_PATH_KEPT = frozenset(range(0x21, 0x7F)) - frozenset(b'"#<>?`{}')
_QUERY_KEPT = frozenset(range(0x21, 0x7F)) - frozenset(b'"#<>')


def _percent_encoded(text: str, kept: frozenset[int]) -> str:
    """``text`` with each UTF-8 byte not in ``kept`` as ``%XX``."""
    data = text.encode("utf-8", "surrogateescape")  # an undecodable byte a host passed stays that byte
    if all(byte in kept for byte in data):
        return text
    return "".join(chr(byte) if byte in kept else f"%{byte:02X}" for byte in data)


def _request_target(url: str) -> tuple[str, Optional[str]]:
    """``url`` (one ``_argument_problem`` passed) as it is requested, as browsers and curl send it:
    the host in IDNA (ASCII), the path and query percent-encoded (``Café`` as ``Caf%C3%A9``, a
    space as ``%20``), the fragment and the userinfo left out; and the Basic ``Authorization``
    the userinfo stands for (``user:password@``, percent-decoded, as curl sends it), or None.

    :raises _Refused: a host name IDNA cannot encode.
    """
    parts = urlsplit(url.strip())
    hostport = parts.netloc.rpartition("@")[2]
    if not hostport.isascii():
        host, colon, port = hostport.rpartition(":") if ":" in hostport else (hostport, "", "")
        try:
            hostport = host.encode("idna").decode("ascii") + colon + port
        except UnicodeError as error:
            raise _Refused(f"invalid host name {host!r} in {_masked(url)!r}: {error}") from None
    target = urlunsplit((parts.scheme, hostport, _percent_encoded(parts.path, _PATH_KEPT),
                         _percent_encoded(parts.query, _QUERY_KEPT), ""))
    if parts.username is None and parts.password is None:
        return target, None
    import base64

    credentials = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
    return target, "Basic " + base64.b64encode(credentials.encode("utf-8", "surrogateescape")).decode("ascii")


def _argument_problem(url: object, format: object, timeout: object) -> Optional[str]:
    """What is wrong with the model's arguments, or None."""
    if not isinstance(url, str):
        return "url must be a string"
    try:
        parts = urlsplit(url.strip())
        hostname = parts.hostname
    except ValueError as error:  # "http://[::1": urlsplit refuses an unclosed IPv6 address
        return f"invalid URL {_masked(url)!r}: {error}"
    if parts.scheme.lower() not in ("http", "https") or not hostname:
        return f"only http and https URLs can be fetched, not {_masked(url)!r}"
    problem = os_string_problem(url, "url")
    if problem is not None and "surrogate" in problem:  # (a NUL is percent-encoded, as browsers do)
        return problem
    if format not in FORMATS:
        return f"format must be one of {', '.join(FORMATS)}, not {format!r}"
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        return "timeout must be a positive number of seconds"
    return None


class _Watchdog:
    """Ends a fetch at its deadline: a socket's timeout bounds each wait only, so a server that
    sends its status line and headers a byte at a time would hold the fetch for ever.  At the
    deadline every connection the fetch opened is shut down, which wakes whatever read or
    handshake waits on it; ``fired`` tells the fetch that its failure is the timeout.  A connection
    connects by ``_create_connection``, whose socket is watched while it connects."""

    def __init__(self, seconds: Optional[float]) -> None:
        import threading

        self.fired = False
        self._lock = threading.Lock()
        self._connections: list[Any] = []
        self._connecting: set[Any] = set()  # the sockets being connected, not yet any connection's
        self._deadline = float("inf") if seconds is None else time.monotonic() + seconds
        self._timer = None if seconds is None else threading.Timer(seconds, self._fire)
        if self._timer is not None:
            self._timer.daemon = True
            self._timer.start()

    def remaining(self, timeout: Optional[float]) -> Optional[float]:
        """``timeout`` (a socket's, None for none) cut to the time left, so that a connect waits no longer."""
        if self._timer is None:  # no deadline
            return timeout
        left = max(self._deadline - time.monotonic(), 0.001)
        return left if timeout is None or timeout > left else timeout

    def expired(self) -> bool:
        """Whether the deadline has passed; once it has, the watchdog fires if its timer has not
        yet run (a thread may be late), so ``fired`` and this answer agree."""
        if not self.fired and time.monotonic() >= self._deadline:
            self._fire()
        return self.fired

    def connection(self, http_class: type) -> Callable[..., Any]:
        """A factory of ``http_class``'s connections, each watched from its start."""
        def watched(*args: Any, **kwargs: Any) -> Any:
            made = http_class(*args, **kwargs)
            made.timeout = self.remaining(made.timeout)
            # http.client's connect opens its socket by this attribute (socket.create_connection,
            # which gives each of a host's addresses the whole timeout, and whose socket the
            # connection holds, for ``_fire`` to shut, only once connected); HTTPS wraps what it returns.
            made._create_connection = self._create_connection
            connect = made.connect

            def connect_then_check() -> None:
                connect()
                if self.fired:  # it fired while connecting, before the connection held its socket
                    self._shut(made.sock)

            made.connect = connect_then_check
            with self._lock:
                self._connections.append(made)
            return made
        return watched

    def _create_connection(self, address: tuple[str, int], timeout: Optional[float] = None,
                           source_address: Optional[tuple[str, int]] = None) -> Any:
        """A socket connected to ``address`` (host, port), trying the host's addresses in turn as
        ``socket.create_connection`` does, but each attempt waits at most the time left and is
        shut down if the watchdog fires, and none starts once it has: a host with many
        addresses that do not answer cannot hold the fetch past its deadline.

        :raises OSError: the last attempt's failure; TimeoutError once the deadline has passed.
        """
        import socket

        host, port = address
        failure: Optional[OSError] = None
        for family, kind, proto, _, sockaddr in socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM):
            if self.expired():
                break
            sock = socket.socket(family, kind, proto)
            with self._lock:
                self._connecting.add(sock)
            try:
                sock.settimeout(self.remaining(timeout))
                if source_address:
                    sock.bind(source_address)
                sock.connect(sockaddr)
            except OSError as error:
                sock.close()
                failure = error
                continue
            finally:
                with self._lock:
                    self._connecting.discard(sock)
            return sock
        if self.expired():
            raise TimeoutError(f"no connection to {host} port {port} within the timeout")
        raise failure if failure is not None else OSError(f"getaddrinfo gave no address for {host}")

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            connections = list(self._connections)
            connecting = list(self._connecting)
        for connection in connections:
            self._shut(connection.sock)
        for sock in connecting:  # Linux aborts a connect in progress that is shut down
            self._shut(sock)

    @staticmethod
    def _shut(sock: Any) -> None:
        import socket

        if sock is not None:
            try:
                # The plain socket's shutdown even for TLS: ssl's own drops its state under a reader.
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            except (OSError, ValueError):  # closed already, or never connected
                pass

    def cancel(self) -> None:
        """Stop the timer: the fetch ended."""
        if self._timer is not None:
            self._timer.cancel()


_watched_classes: Optional[tuple[type, ...]] = None


def _watched_handlers(watchdog: _Watchdog) -> list[Any]:
    """urllib's http and https handlers, their connections watched by ``watchdog``."""
    global _watched_classes
    if _watched_classes is None:
        import http.client
        import urllib.request

        class _FinalResponse(http.client.HTTPResponse):
            """A response read past its 1xx interim responses (102 Processing, 103 Early Hints), as
            RFC 9110 (15.2) asks of a client: http.client passes over 100 Continue only, and urllib
            took a 103 for the final status.  A 101 is final: it switches protocols."""

            def _read_status(self):  # type: ignore[no-untyped-def]
                while True:
                    version, status, reason = super()._read_status()
                    if not 100 <= status < 200 or status == 101:
                        return version, status, reason
                    http.client.parse_headers(self.fp)  # the interim response's fields, passed over

        def watched(handler: type) -> type:
            class _Watched(handler):  # type: ignore[valid-type,misc]
                def __init__(self, watchdog: _Watchdog) -> None:
                    super().__init__()
                    self._watchdog = watchdog

                def do_open(self, http_class, req, **kwargs):  # type: ignore[no-untyped-def]
                    watched_connection = self._watchdog.connection(http_class)

                    def connection(*args: Any, **options: Any) -> Any:
                        made = watched_connection(*args, **options)
                        made.response_class = _FinalResponse
                        return made
                    return super().do_open(connection, req, **kwargs)
            return _Watched

        bases = [urllib.request.HTTPHandler] + ([urllib.request.HTTPSHandler]
                                                if hasattr(urllib.request, "HTTPSHandler") else [])
        _watched_classes = tuple(watched(base) for base in bases)
    return [handler(watchdog) for handler in _watched_classes]


def _fetch(url: str, timeout: float) -> _Response:
    """GET ``url`` (as ``_request_target`` makes it; following redirects to http and https only), reading at most
    ``MAX_RESPONSE_BYTES`` of a text body, all of it (connect, status, headers, body)
    within ``timeout``.  A ``timeout`` past what a socket or a thread can wait
    (``inf``, ``10**400``) is no bound, as the README says of too many seconds.

    :raises _Refused: an HTTP error, a network failure, a body that is not
        text or is over the limit, the timeout.
    """
    # None: no bound (socket.settimeout and monotonic() + 10**400 raise OverflowError past it).
    seconds = wait_seconds(timeout, "timeout")
    target, authorization = _request_target(url)
    url = _masked(url)  # what the messages quote
    watchdog = _Watchdog(seconds)
    try:
        response = _exchange(target, authorization, url, seconds, watchdog)
    except _Refused:
        if not watchdog.fired:
            raise
    finally:
        watchdog.cancel()
    # Fired: whatever was read may be cut short by the shutdown (a body without a length ends there).
    if watchdog.fired:
        raise _Refused(f"could not fetch {url}: the response did not end within {seconds:g} seconds")
    return response


def _exchange(target: str, authorization: Optional[str], url: str, seconds: Optional[float],
              watchdog: _Watchdog) -> _Response:
    """``_fetch``'s request of ``target`` and its response, the connections watched by ``watchdog``;
    ``url`` is the URL as the messages quote it."""
    import http.client
    import socket
    import urllib.error
    import urllib.request

    refused_redirect, http_only_redirects = _redirect_handling()
    opener = urllib.request.build_opener(http_only_redirects, _status_handling()(), *_watched_handlers(watchdog))
    request = urllib.request.Request(target, headers={
        "User-Agent": _USER_AGENT, "Accept": "text/html, text/markdown, text/plain;q=0.9, */*;q=0.5"})
    if authorization is not None:
        # Unredirected: a redirect (to another host, perhaps) is not sent the credentials.
        request.add_unredirected_header("Authorization", authorization)
    try:
        with opener.open(request, timeout=seconds) as response:
            headers = response.headers
            # Without a valid Content-Type http.client says text/plain; RFC 9110 (8.3) lets a recipient sniff
            # instead, and a body whose first bytes are binary by the bash tool's rule is refused as a
            # binary type is, not shown as NULs and U+FFFD.
            declared_type = _declared_type(headers)
            content_type = declared_type or "text/plain"
            declared = None
            if response.status in (204, 304) or 100 <= response.status < 200:
                # RFC 9112 (6.3): such a message ends after its header fields, whatever they say.
                # http.client holds its length to 0, but reads a lone "chunked" by its chunks all
                # the same: on a connection the server keeps open, that waited out the timeout.
                response.chunked, response.length = False, 0
            elif _chunked(headers, url, response.version):
                # Transfer-Encoding overrides Content-Length (RFC 9112 6.1, 6.3): the chunks frame the
                # body and a Content-Length beside them is neither checked nor held to.  RFC 9112 calls
                # a message with both suspect ("ought to be handled as an error") because a recipient
                # that forwards it, or reads another message after it on the connection, can be made to
                # split it two ways (smuggling); webfetch is a user agent that forwards nothing and
                # reads one response per connection (urllib sends "Connection: close"), so reading it
                # as the RFC frames it splits nothing and serves the pages browsers and curl serve
                # (early servers sent both, the length for progress bars: why TE overrides rather than
                # the two being refused together).  http.client saw "chunked" only on the first line
                # and unstripped: it is told so, and forgets the length it may have taken instead.
                response.chunked, response.chunk_left, response.length = True, None, None
            else:
                declared = _content_length(headers, url)
                if declared is not None and response.length is None:
                    # http.client reads a list of equal values ("5, 5") as no length, the body to the
                    # close: it is held to the one length they stand for, as to a single value.
                    response.length = declared
            if not _is_text(content_type):
                raise _Refused(f"refused: {url} returned {content_type}, which is not text")
            sniffing = declared_type is None
            decoder = _BodyDecoder(_field_list(headers, "Content-Encoding"), url)
            body = bytearray()
            # read1: what has arrived, so a server that drips a byte at a time meets the deadline too.
            while chunk := response.read1(_READ_SIZE):
                body += decoder.feed(chunk)
                if sniffing and len(body) >= SNIFF_BYTES:
                    _refuse_if_binary(body, url, headers.get("Content-Type"))
                    sniffing = False
                if len(body) > MAX_RESPONSE_BYTES:
                    raise _Refused(f"refused: the response is over the {MAX_RESPONSE_BYTES}-byte limit")
                if watchdog.expired():  # the shutdown ends the reads too; this does not wait for the timer
                    raise _Refused(f"could not fetch {url}: the response did not end within {seconds:g} seconds")
            # http.client counts a declared Content-Length down as it reads (``length``), and read1
            # answers b"" when the server closes early instead of raising: bytes still owed are a cut body.
            missing = getattr(response, "length", None)
            if missing:
                raise _Refused(f"could not fetch {url}: the connection closed after {declared - missing} "
                               f"of the {declared} bytes its Content-Length declares")
            body += decoder.finish()
            if sniffing:
                _refuse_if_binary(body, url, headers.get("Content-Type"))
            if len(body) > MAX_RESPONSE_BYTES:
                raise _Refused(f"refused: the response is over the {MAX_RESPONSE_BYTES}-byte limit")
            # A charset is a parameter of a type: a value that is no type declares none either.
            charset = None if declared_type is None else headers.get_content_charset()
            return _Response(response.geturl(), response.status, content_type, charset, bytes(body))
    except urllib.error.HTTPError as error:
        note = _NOT_THE_PAGE.get(error.code)
        raise _Refused(f"HTTP {error.code} {error.reason} from {url}" + (f": {note}" if note else "")) from None
    except refused_redirect as error:
        raise _Refused(str(error.reason)) from None
    except urllib.error.URLError as error:
        raise _Refused(f"could not fetch {url}: {error.reason}") from None
    except (http.client.HTTPException, socket.timeout, TimeoutError, OSError, ValueError, zlib.error) as error:
        raise _Refused(f"could not fetch {url}: {type(error).__name__}: {error}") from None


def _refuse_if_binary(body: bytearray, url: str, content_type: Optional[str]) -> None:
    """Refuse a body sent without a valid Content-Type (``content_type``, the header's value: None
    when there is none) whose first ``SNIFF_BYTES`` are binary (``output_is_binary``: a NUL, or
    mostly invalid UTF-8).

    :raises _Refused: it is binary.
    """
    if output_is_binary(bytes(body[:SNIFF_BYTES])):
        why = "no Content-Type" if content_type is None else f"its Content-Type {content_type!r} is no type/subtype"
        raise _Refused(f"refused: {url} returned {BINARY_MIME} ({why}; its bytes are binary), which is not text")


class _BodyDecoder:
    """A body's ``Content-Encoding`` undone as it arrives (gzip, every member of it, or deflate;
    a server may send them though none was asked for), never more than one byte past
    ``MAX_RESPONSE_BYTES`` at a time, so a small compressed body cannot become a large one in memory.

    :raises _Refused: an encoding webfetch cannot undo (br, zstd, compress, several).
    """

    def __init__(self, encoding: Optional[str], url: str) -> None:
        self._name = name = (encoding or "").strip().lower() or "identity"
        if name not in ("identity", "gzip", "x-gzip", "deflate"):
            raise _Refused(f"refused: {url} is sent with Content-Encoding {name!r}, which webfetch cannot decode")
        self._inflate: Any = zlib.decompressobj(16 + zlib.MAX_WBITS) if name in ("gzip", "x-gzip") else None
        # After a gzip member, a first byte of gzip's magic: the next read says if a member starts;
        # deflate's first byte when it came alone: the second says whether the stream is zlib-wrapped.
        self._held = b""
        self._started = False  # whether any byte came: an empty body is an empty page, whatever its encoding
        self._trailing = False  # the bytes after the last member start none: ignored, as gzip(1) ignores them

    def feed(self, data: bytes) -> bytes:
        """What ``data`` (the next bytes of the body) decodes to, at most ``MAX_RESPONSE_BYTES + 1`` bytes.

        :raises zlib.error: the bytes are not the encoding's.
        """
        if self._name == "identity":
            return data
        self._started = self._started or bool(data)
        if self._inflate is None:
            # deflate is zlib-wrapped as the RFC says, or raw as some servers send it: the two-byte
            # header tells, so a first byte that came alone waits for the next.
            data = self._held + data
            if len(data) < 2:
                self._held = data
                return b""
            self._held = b""
            wrapped = data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0
            self._inflate = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
        out = bytearray()  # many small members in one read: appending stays linear
        while True:
            if self._inflate.eof:
                if self._name == "deflate" or self._trailing:
                    return bytes(out)  # one stream; what follows it is not the body (as before)
                # A gzip body may be several members one after another (RFC 1952, ``gzip -c a b``,
                # pigz): each is decoded in turn.  NULs between or after them are padding, which
                # gzip(1) skips too; other bytes that start no member are trailing garbage, which
                # gzip(1) and browsers ignore.
                data = self._held + data if self._held else data.lstrip(b"\0")
                self._held = b""
                if data == b"\x1f":
                    self._held = data
                    return bytes(out)
                if not data:
                    return bytes(out)
                if not data.startswith(b"\x1f\x8b"):
                    self._trailing = True
                    return bytes(out)
                self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
            # Never 0, which zlib reads as "no limit": the cap holds across members.
            out += self._inflate.decompress(data, MAX_RESPONSE_BYTES + 1 - len(out))
            if len(out) > MAX_RESPONSE_BYTES or not self._inflate.eof:
                return bytes(out)
            data = self._inflate.unused_data

    def finish(self) -> bytes:
        """What the decoder still holds.

        :raises zlib.error: the body ended inside its compressed stream (a lone byte is no whole one).
        """
        if self._name == "identity" or not self._started:
            return b""
        if self._inflate is None or not self._inflate.eof:
            raise zlib.error(f"the {self._name} body ends before its compressed stream does")
        return self._inflate.flush()


#: The characters of a page's conversion built (``convert_html``'s limit): past the limit even
#: once its normalisation has taken the white space at its lines' ends, so that a page cut there
#: is truly over the limit, and the host never holds a conversion many times the limit.
_CONVERSION_LIMIT = 2 * MAX_RESPONSE_BYTES


def _within_limit(text: str, format: str, whole: bool = True) -> tuple[str, bool]:
    """``text`` (a converted page; not ``whole``: the start of one, its conversion stopped past
    ``_CONVERSION_LIMIT`` characters) cut at a character boundary so that it and a last line
    saying so are at most ``MAX_RESPONSE_BYTES`` UTF-8 bytes, and whether it was cut.  Conversion can make a page
    many times its size (each short line of a ``<pre>`` deep in quotes gets a ``> `` per level),
    and the schema promises at most 5 MB of text."""
    if whole:
        if len(text) <= MAX_RESPONSE_BYTES // 4:  # a character is at most 4 bytes: it fits
            return text, False
        # Each character that cannot be encoded is one "?": the characters of the prefix are the text's.
        size = len(text.encode("utf-8", "replace"))
        if size <= MAX_RESPONSE_BYTES:
            return text, False
        told = f"{size} bytes"
    else:
        told = f"over {MAX_RESPONSE_BYTES} bytes (its conversion was stopped past {_CONVERSION_LIMIT} characters)"
    note = (f"\n[webfetch: the page as {format} is {told}, cut at the "
            f"{MAX_RESPONSE_BYTES}-byte limit; format \"html\" gives the whole page]")
    # The note is inside the limit too: the prefix leaves room for it.
    room = MAX_RESPONSE_BYTES - len(note.encode("utf-8"))
    # (A character is at least a byte: the first ``room`` characters hold the prefix kept; a
    # character cut in two is left out.)
    kept = len(text[:room].encode("utf-8", "replace")[:room].decode("utf-8", "ignore"))
    return text[:kept] + note, True


def _as_text(response: _Response, format: str, seconds: Optional[float],
             timeout: Optional[float]) -> tuple[str, str, dict[str, Any]]:
    """The body decoded; an HTML one converted to ``format`` ("markdown" or "text"; "html"
    keeps it) within ``seconds`` (None: no bound; what the call's ``timeout`` left) and cut to ``MAX_RESPONSE_BYTES``
    (``_within_limit``); the MIME type; and what the metadata says of it (``cut``, or
    ``converted`` false when the conversion did not finish in time or failed: the text is
    then the page's HTML and a last line saying so)."""
    is_html = response.content_type in _HTML_TYPES
    text = _decoded(response.body, response.charset, is_html)
    if not is_html or format == "html":
        return text, response.content_type, {}
    from ._regex import convert_html

    # (Without a timeout the conversion has no bound, so only a failure leaves it undone.)
    why = "" if timeout is None else f"within the {timeout:g}-second timeout; a larger timeout may convert it"
    try:
        # html.parser is quadratic on some malformed pages (CVE-2025-6069): the conversion
        # runs in a worker process that is killed when the call's time is up.
        converted = None if seconds is not None and seconds <= 0 else convert_html(
            text, format == "markdown", seconds, _CONVERSION_LIMIT)
    except OverspillError as error:  # no worker could run it: the page is still the model's to read
        converted, why = None, f"({error})"
    if converted is None:
        note = f"\n[webfetch: the page could not be converted to {format} {why}: this is its HTML]"
        return text + note, response.content_type, {"converted": False}
    page, cut = _within_limit(converted[0], format, converted[1])
    return page, "text/markdown" if format == "markdown" else "text/plain", {"cut": True} if cut else {}


def webfetch(store: ToolOutputStore, session_id: str, tool_call_id: str, url: str, *,
             format: str = "markdown", timeout: float = 30.0) -> ToolResult:
    """Fetch an http or https URL and return its text, bounded by the store.

    The URL is requested as browsers request it (``_request_target``: the path
    and query percent-encoded, the host in IDNA), a ``user:password@`` in it
    sent as Basic auth (not to a redirect's target); messages show its
    password as ``***``.

    A response over ``MAX_RESPONSE_BYTES`` (by Content-Length, or counted while
    reading) is refused and nothing of it is kept; non-text bodies are refused
    (one sent without a valid Content-Type when its first bytes are binary, by the bash
    tool's rule), and so is a body the server cut short of its Content-Length,
    or sent with Content-Length values that differ or are no decimal number (a
    line with no value too; equal ones, repeated or in a list, are the one
    length: ``_content_length``).  A chunked body is read by its chunks, a Content-Length beside
    them ignored (Transfer-Encoding overrides it); any other Transfer-Encoding, one naming no
    coding, or one on an HTTP/1.0 response is refused (``_chunked``); a 204 has no body, whatever
    its fields say (RFC 9112 6.3).  A 206 Partial Content or a 226 IM Used is an
    HTTP error, as a 404 is: webfetch asks for no range and no delta.
    HTML becomes Markdown (``"markdown"``) or text (``"text"``), or is kept
    (``"html"``), decoded by its byte-order mark, else its declared charset, read by
    the WHATWG Encoding Standard's labels (UTF-8 when it names none, or none the standard
    knows).  A gzip or deflate ``Content-Encoding`` is undone, and the
    limit applies to what it gives.  A page that conversion makes larger than the limit
    is cut there, at a character, with a last line saying so (``metadata["cut"]``).
    The conversion runs in a worker process within what the timeout left of the
    call (``html.parser`` is quadratic on some malformed pages); one that does not
    finish gives the page's HTML with a last line saying so (``metadata["converted"]``
    false).

    :param format: ``"markdown"``, ``"text"`` or ``"html"``.
    :param timeout: seconds for the whole call (connect, status line, headers,
        body, then the conversion): past it the fetch ends with an error (the
        conversion, with the HTML); one too large to wait is no bound.
    """
    problem = _argument_problem(url, format, timeout)
    if problem is not None:
        return failure(problem)
    # What the page's decoding and conversion import, resolved before the fetch as it used to be:
    # an install that cannot import them fails at once, not after a download.
    from . import _encodings, _html, _regex  # noqa: F401

    started = time.monotonic()
    try:
        response = _fetch(url, timeout)
    except _Refused as refusal:
        # A refusal may quote what the server sent (a reason phrase, a Location, a status line's
        # version): ``failure`` shows its control characters escaped, as every tool's error line.
        return failure(str(refusal))
    seconds = wait_seconds(timeout, "timeout")
    # The timeout bounds the whole call: the conversion gets what the fetch left of it.
    left = None if seconds is None else seconds - (time.monotonic() - started)
    text, mime, noted = _as_text(response, format, left, seconds)
    metadata = {"url": response.url, "status": response.status, "content_type": response.content_type,
                "bytes": len(response.body), **noted}
    # The record's mime is metadata: a server's type too long for a record is shortened (the metadata's
    # content_type keeps it whole), not a failure.
    return bounded(store.truncate(session_id, tool_call_id, text, mime=metadata_string(mime)), **metadata)
