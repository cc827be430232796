"""``overspill`` read, grep, truncate, ls, cleanup, stats and mcp."""

from __future__ import annotations

import os
import time

from .._frontend import MAX_TIMEOUT
from ..errors import OverspillError
from ._common import (_CHUNK, _NAME_CHARACTERS, EXIT_STORAGE, _as_json, _config, _continue_command, _fail,
                      _for_the_shell, _json_text, _note, _on_a_server, _print_json, _print_text, _reader, _session,
                      _shortened, _shown, _stdin, _stdout, _store, _UsageError, _write_all)

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and argparse cost start-up; annotations are never evaluated
    import argparse
    from collections.abc import Iterator
    from typing import Any, BinaryIO, Optional

def _command_read(args: argparse.Namespace) -> int:
    from .._frontend import end_of_resource, lost_end, lost_note, page_request, read_page, stored_copy_end
    from ..config import MAX_READ_BYTES

    # tool-output://ID?offset=N&limit=M, as MCP's: an offset or limit that is no number is bad
    # input (exit 2), as the same given by --offset and --limit; a malformed URI is exit 3.
    uri, offset_given, limit = page_request(args.uri, args.offset, args.limit, _UsageError)
    if args.all and (offset_given is not None or limit is not None):
        raise _UsageError("read: --all writes the whole resource; it takes no --offset or --limit")
    store = _reader(args)
    session = _session(args)
    if args.all and args.json:
        with store.view(session, uri) as (resource, data):
            _print_json({"resource": resource, "content": str(data, "utf-8", "replace")})
        return 0
    if args.all:
        record = store.status(session, uri)
        if record.complete:
            # Verified range by range as it is written: the first bytes go out at
            # once and memory stays flat, whatever the size.
            _write_all(_stdout().buffer, store.iter_bytes(session, uri))
            return 0
        # A background command's output, running or lost: its bytes so far, exactly (up to the
        # size its record states), and on stderr that they are not all.
        size = record.resource.size
        with store.view(session, uri, end=size) as (_, data):
            if record.state != "lost":
                from ..text import cut_character  # the store's rule for a running output's sealed end

                # A running output's sealed end may cut a character in two: stop before its first
                # bytes and name where it starts, as pages, previews and wait do (a read from the
                # sealed end would start inside the character and skip it).  A lost output's end is
                # final: nothing will complete the character, so all its bytes are written.
                size -= cut_character(data[-4:])
            _write_all(_stdout().buffer, iter((data[:size],)))
        if record.state == "lost":
            _note(lost_note(uri, size))
        else:
            _note(f"complete: false; the output so far ends at byte {size}: "
                  f"{_continue_command(args, record.resource.uri, size, None)} later, or overspill wait")
        return 0
    if limit is not None and limit > MAX_READ_BYTES:
        # Named as the user wrote it: the flag, or the URI's query (a number of thousands of digits cut short).
        written = str(limit) if limit < 10**24 else f"{str(limit)[:21]}..."
        said = f"--limit {written}" if args.limit is not None else f"the URI's limit={written}"
        _note(f"{said} is more than a page holds: clamped to {MAX_READ_BYTES} bytes")
        limit = None  # the most, which is the default: the hint need not repeat it
    offset = offset_given or 0
    page = read_page(store, session, uri, offset, limit)
    if args.json:
        _print_json(page)
    elif page.next is None and not page.complete and (lost := lost_end(store, session, page)) is not None:
        _print_text(f"{page.content}\n\n[{lost}]")  # its owner gone: what was sealed is all there is
    elif page.next is None and not page.complete:
        # A background command still running: its output so far ends here.
        _print_text(f"{page.content}\n\n[complete: false; the output so far ends at byte {page.resource.size}: "
                    f"{_continue_command(args, page.resource.uri, page.resource.size, limit)} later, or overspill wait]")
    elif page.next is None:
        if page.offset >= page.resource.size and page.resource.size:
            # One rule everywhere: at or past the end is an empty last page (no next), not an error.
            _note(end_of_resource(page.resource, offset))
            return 0
        _print_text(page.content)
        capped = stored_copy_end(store, session, page)
        if capped is not None:
            _note(capped)  # on stderr: the page itself is the stored bytes' end, exactly
    else:
        _print_text(f"{page.content}\n\n[{page.resource.size - page.next} more bytes: "
                    f"{_continue_command(args, page.resource.uri, page.next, limit)}]")
    return 0


def _command_grep(args: argparse.Namespace) -> int:
    from .._frontend import parse_page_uri
    from ..tools.grep import SearchFailed, listing_summary, resource_listing, running_note, store_listing

    uri = parse_page_uri(args.uri)[0]
    # A reader's store: a missing folder holds no resource and is not created for one (a
    # long listing is stored in the folder its resource is in).
    store = _reader(args)
    try:
        listing = resource_listing(store, _session(args), uri, args.pattern, ignore_case=args.ignore_case,
                                   context=args.context, max_matches=args.max_count)
    except OverspillError:
        raise
    except ValueError as error:  # a bad pattern
        raise _UsageError(str(error)) from None
    try:
        if args.json:
            _print_listing_json(listing)
            return 0 if listing.total else 1

        def summary() -> str:
            more = (f"; {listing.total - listing.listed} not listed (raise --max-count)"
                    if listing.total > listing.listed else "")
            if listing.searched is not None:
                more += f"; {running_note(listing.searched)}"
            return listing_summary(listing, more)

        # Bounded like any output: a long listing is stored whole and previewed, with where to
        # read on; streamed, so that a large -C never holds the listing in memory.
        bounded = store_listing(store, _session(args), f"cli-{time.time_ns()}", listing, summary,
                                name=_shortened(f"grep {args.pattern} {uri}", _NAME_CHARACTERS))
    except SearchFailed as failed:
        raise failed.error from None
    if bounded is not None:
        _print_text(_for_the_shell(args, bounded.content, None if bounded.resource is None else bounded.resource.uri,
                                   bounded.next_offset))
    elif listing.searched is not None:
        _print_text(f"[no matches so far; {running_note(listing.searched)}]")
    return 0 if listing.total else 1


def _print_listing_json(listing: Any) -> None:
    """``{"lines": [...], "total": N, "listed": N}`` (and ``complete``, ``searched`` for a running
    output) as ``_print_json`` writes it, the lines spooled to a temporary file as the search
    makes them: memory stays bounded, and a search that fails prints nothing.

    :raises SearchFailed: the search failed.
    """
    import tempfile

    from ..tools.grep import SearchFailed

    lines = listing.lines()
    with tempfile.TemporaryFile("w+", encoding="utf-8") as spool:
        separator = ""
        while True:
            try:
                line = next(lines)
            except StopIteration:
                break
            except Exception as error:
                raise SearchFailed(error) from None
            spool.write(separator + _json_text(line))
            separator = ", "
        running = {} if listing.searched is None else {"complete": False, "searched": listing.searched}
        rest = _json_text({"total": listing.total, "listed": listing.listed, **running})
        out = _stdout()
        out.write('{"lines": [')
        spool.seek(0)
        while chunk := spool.read(_CHUNK):
            out.write(chunk)
        out.write("], " + rest[1:] + "\n")  # the counts' object, its opening brace left out


def _chunks_of(stream: BinaryIO) -> Iterator[bytes]:
    while chunk := stream.read(_CHUNK):
        yield chunk


def _command_truncate(args: argparse.Namespace) -> int:
    from ..config import resolve_limits
    from ..tools.bash import bound_stream

    session = _session(args)
    call = f"cli-{time.time_ns()}"
    name = args.name if args.name is not None else (None if args.file == "-" else os.path.basename(args.file))
    limits = resolve_limits(_config(args))
    # As ``run``: a server that cannot be reached is exit 4 before the input is read; a
    # local folder is opened only for an input that must be stored (a small one is
    # printed as it is), and one that cannot be opened still leaves the preview printed.
    server = _store(args) if args.store_url is not None or _on_a_server(args) else None

    def bounded(source: BinaryIO) -> tuple[Any, Optional[str]]:
        return bound_stream(lambda: server if server is not None else _store(args), session, call,
                            _chunks_of(source), limits=limits, name=name)

    if args.file == "-":
        result, storage_error = bounded(_stdin().buffer)
    else:
        try:
            source = open(args.file, "rb")
        except OSError as error:
            raise _UsageError(f"cannot read {args.file}: {error.strerror}") from None
        with source:
            result, storage_error = bounded(source)
    if args.json:
        _print_json(result)
    else:
        _print_text(_for_the_shell(args, result.content, None if result.resource is None else result.resource.uri,
                                   result.next_offset))
    if storage_error is not None:
        return _fail(EXIT_STORAGE, f"the output could not be kept: {storage_error}")
    return 0


def _age(created_ms: float) -> str:
    seconds = max(time.time() - created_ms / 1000, 0)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def _command_ls(args: argparse.Namespace) -> int:
    store = _reader(args)
    records = store.records(None if args.all_sessions else _session(args))
    if args.json:
        _print_json({"resources": [{"uri": r.resource.uri, "size": r.resource.size, "lines": r.lines,
                                    "mime": r.resource.mime,
                                    "name": r.resource.name, "session": r.session_id,
                                    "tool_call": r.tool_call_id, "created": r.created_ms} for r in records]})
        return 0
    if not records:
        _print_text("no stored outputs")
        return 0
    rows = [(r.resource.uri, str(r.resource.size), "-" if r.lines is None else str(r.lines), _age(r.created_ms),
             _shown(r.resource.name or "-"), _shown(r.session_id)) for r in records]
    header = ("URI", "BYTES", "LINES", "AGE", "NAME", "SESSION")
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]
    for row in [header, *rows]:
        _stdout().write("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() + "\n")
    return 0


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


def _command_cleanup(args: argparse.Namespace) -> int:
    from ..records import uri_for

    store = _reader(args)
    report = store.cleanup(dry_run=args.dry_run)
    if args.json:
        # ``uris``: what was (with --dry-run: would be) removed, by URI.
        _print_json({**_as_json(report), "dry_run": args.dry_run,
                     "uris": [uri_for(resource_id) for resource_id in report.removed_ids]})
    elif report.busy:
        _print_text(f"another process is cleaning {'this store' if store.url else 'this folder'}; nothing done")
    else:
        verb = "would remove" if args.dry_run else "removed"
        # A folder's leftovers are temporary files; a server's, the keys of writers that died.
        leftovers = _count(report.temporaries, "unfinished write" if store.url else "leftover file")
        parts = [_count(report.removed, "output")] + ([leftovers] if report.temporaries else [])
        left = (f"; {report.skipped} {'entry' if report.skipped == 1 else 'entries'} could not be removed"
                if report.skipped else "")
        _print_text(f"{verb} {' and '.join(parts)}, {_count(report.bytes_freed, 'byte')}{left}")
    return 0


def _command_stats(args: argparse.Namespace) -> int:
    store = _reader(args)
    # --session names one session (as for ls); without it, every session's totals.
    only = args.session
    records = store.records(only)
    sessions: dict[str, dict[str, int]] = {}
    for record in records:
        entry = sessions.setdefault(record.session_id, {"count": 0, "bytes": 0, "lines": 0})
        entry["count"] += 1
        entry["bytes"] += record.resource.size
        entry["lines"] += record.lines or 0  # records of other tools do not say
    oldest = min((record.created_ms for record in records), default=None)
    summary = {"count": len(records), "bytes": sum(r.resource.size for r in records),
               "lines": sum(r.lines or 0 for r in records),
               "oldest": None if oldest is None else int(oldest), "sessions": sessions,
               "quota": store.limits().max_total_bytes}
    if args.json:
        _print_json(summary)
        return 0
    lines = [f"{_count(summary['count'], 'output')}, {summary['bytes']} bytes, {_count(summary['lines'], 'line')}"]
    if oldest is not None:
        lines.append(f"oldest: {_age(oldest)} ago")
    quota = summary["quota"]
    if only is None:  # the quota counts every session's outputs
        lines.append(f"quota: {summary['bytes']} of {quota} bytes used ({100 * summary['bytes'] / quota:.1f}%); "
                     "the oldest outputs go first when a new one needs the room")
    lines += [f"  {_shown(session)}: {_count(entry['count'], 'output')}, {entry['bytes']} bytes, "
              f"{_count(entry['lines'], 'line')}"
              for session, entry in sessions.items()]
    _print_text("\n".join(lines))
    return 0


def _command_mcp(args: argparse.Namespace) -> int:
    import importlib.util

    try:
        installed = importlib.util.find_spec("mcp") is not None  # without importing it (a second's work)
    except (ImportError, ValueError):
        installed = False
    if not installed:
        raise _UsageError("overspill mcp needs the mcp extra: pip install 'overspill[mcp]'")
    if args.session is not None and not args.session.strip():
        raise _UsageError("--session must not be empty")
    if args.cwd is not None and not os.path.isdir(args.cwd):
        raise _UsageError(f"--cwd {args.cwd} is not a folder")
    if args.timeout > MAX_TIMEOUT:
        raise _UsageError(f"--timeout must be at most {MAX_TIMEOUT:g} seconds, not {args.timeout:g}")
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    wrapping = args.wrap or args.wrap_url is not None
    if args.wrap and args.wrap_url is not None:
        raise _UsageError("give --wrap -- COMMAND or --wrap-url URL, not both")
    if args.wrap and not argv:
        raise _UsageError("--wrap needs the server's command after --, e.g. overspill mcp --wrap -- "
                          "python -m mcp_server_git")
    if argv and not args.wrap:
        import shlex

        raise _UsageError(f"unexpected arguments {shlex.join(argv)}: a command to wrap follows --wrap --")
    if args.header and args.wrap_url is None:
        raise _UsageError("--header goes with --wrap-url")
    if not args.resource_link and not wrapping:
        raise _UsageError("--no-resource-link goes with --wrap or --wrap-url")
    try:
        from .. import mcp_server  # the SDK is imported only here, never by ``import overspill``
        if wrapping:
            from .. import mcp_upstream
    except ImportError as error:  # an mcp too old or broken to serve
        raise _UsageError(f"overspill mcp needs the mcp extra (mcp>=2.3,<3): pip install 'overspill[mcp]' "
                          f"({error})") from None
    if args.wrap_url is not None and not args.wrap_url.startswith(("http://", "https://")):
        raise _UsageError(f"--wrap-url must be an http:// or https:// URL, not {args.wrap_url!r}")
    try:
        headers = dict(mcp_upstream.parse_header(text) for text in args.header) if wrapping else {}
    except ValueError as error:
        raise _UsageError(str(error)) from None

    # The protocol runs over standard input and output: closed, there is no client to serve.
    _stdin()
    _stdout()
    # Opened (a server connected to) before serving: an unreachable store is exit 4 at start-up.
    config: dict[str, Any] = mcp_server.limits_config(args.max_lines, args.max_bytes, max_tokens=args.max_tokens)
    if wrapping:  # a wrapped server's results are data, shown and read back as sent: no shell-output views
        config = {"tool_output": {**config["tool_output"], "views": []}}
    store = _store(args, config=config)
    with store:
        if wrapping:
            mcp_upstream.serve_wrapped(store, args.session, command=argv if args.wrap else None, url=args.wrap_url,
                                       headers=headers, cwd=args.cwd, resource_link=args.resource_link,
                                       init_timeout=args.init_timeout)
        else:
            mcp_server.serve(store, args.session, cwd=args.cwd, timeout=args.timeout)
    return 0


