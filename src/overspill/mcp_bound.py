"""A wrapped server's ``tools/call`` result, bounded for the model (the wrapper's results).

The result's text blocks, joined with ``"\\n"``, and its ``structuredContent``
(as JSON; not on its own when it repeats the text, ``_duplicates``) are
measured against the store's limits; within them the result
passes through as the upstream sent it, over them what is over is stored
whole and the model is shown the bounded preview, its marker, a
``resource_link`` and ``structuredContent`` with ``uri``, ``size``,
``lines``, ``next_offset`` and ``text``; what the store cannot keep (a quota
too small for its record, a failed write) is only its preview, whose marker
says "output not stored" and why.  A tool that declares an
``outputSchema`` gets ``structuredContent`` that conforms to it where one can
be had (see ``conforming``: a large required array, as the SDK's and
FastMCP's servers declare for a tool returning a list, is cut to what fits),
with overspill's fields under ``_meta``; an ``isError`` result has one only where
the upstream's did, and none where nothing conforms.  The
preview block says what the text blocks it replaces said (their
``annotations`` and ``_meta``: see ``bound``); every other block passes
through as it came, its own annotations and ``_meta`` included, and so does
the result's ``_meta``.

Needs the ``mcp`` extra; ``import overspill`` never imports this module.
"""

from __future__ import annotations

import copy
import itertools
import json
from typing import Any, Iterable, Optional

from ._frontend import truncate_kept
from .mcp_server import _tool_result
from .store import ToolOutputStore
from .text import fits_limits
from .tools._result import bounded

__all__ = ["bound", "bound_error", "conforming", "error_fits", "fits", "release"]

# Where a bounded result that keeps the upstream's structuredContent names overspill's fields.
META_KEY = "overspill/bounded"


def _least(value: Any, most: int) -> int:
    """A lower bound of the characters of ``value``'s JSON text, however indented, counted only
    until it is over ``most``: a walk of about ``most`` items, whatever the size of ``value``.
    (Each string, item and member adds at least its characters, quotes and separator.)"""
    if isinstance(value, str):
        return len(value) + 2
    if isinstance(value, list):
        total = 2
        for item in value:
            total += _least(item, most - total) + 1
            if total > most:
                break
        return total
    if isinstance(value, dict):
        total = 2
        for key, member in value.items():
            total += len(str(key)) + 4 + _least(member, most - total)
            if total > most:
                break
        return total
    return 1  # a number, a bool or null: a character at least


def _json_fits(value: Any, room: tuple[int, int]) -> bool:
    """Whether ``value``'s JSON text (``indent=2``, as the store keeps it) has at most ``room``'s
    bytes and newlines; a value over them by ``_least`` is never serialized."""
    if _least(value, room[0]) > room[0]:
        return False
    size, newlines = _json_size(value)
    return size <= room[0] and newlines <= room[1]


def _json_within(value: Any, limits: Any) -> bool:
    """Whether ``value``'s JSON text is within the limits (``_json_fits`` their room)."""
    return _json_fits(value, _room(limits))


def _texts(content: list[Any]) -> list[int]:
    """The indexes of ``content``'s text blocks."""
    return [index for index, block in enumerate(content)
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)]


def fits(raw: dict[str, Any], limits: Any) -> bool:
    """Whether a ``tools/call`` result passes through as it is, decided without the store: its
    text blocks (joined as ``bound`` joins them) and its ``structuredContent`` (as JSON) fit."""
    content = raw.get("content")
    if not isinstance(content, list):
        return True
    texts = _texts(content)
    said = [content[index]["text"] for index in texts]
    joined = "\n".join(said)
    if texts and not fits_limits(joined, limits):
        return False
    structured = raw.get("structuredContent")
    # A structuredContent that repeats the text (the SDK's shape) is not measured on its own: the
    # text says it within the limits, and its JSON is larger only by escaping and indentation.
    return structured is None or _json_within(structured, limits) or bool(texts) and _duplicates(
        structured, joined, said)


def error_fits(message: str, data: Any, limits: Any) -> bool:
    """Whether an upstream's JSON-RPC error passes on as it is, decided without the store: its
    ``message`` and its ``data`` (as JSON) each fit the limits."""
    return fits_limits(message, limits) and (data is None or _json_within(data, limits))


def bound_error(message: str, data: Any, store: ToolOutputStore, session: str, call_id: str, *,
                read: str = "read", grep: str = "grep") -> tuple[str, Any]:
    """An upstream's JSON-RPC error's ``message`` and ``data`` bounded for the model, as a result's text
    and ``structuredContent`` are (``bound``; runs on a worker thread: it may write).  A message over
    the limits is stored whole and becomes its preview with the marker; a ``data`` whose JSON is over
    them is stored as that JSON and becomes overspill's fields for it (``uri``, ``size``, ``lines``,
    ``next_offset``, and its preview as ``text`` unless the message is a preview too, as a stored
    ``structuredContent`` beside a bounded text is named, not shown).  What fits stays as it came.

    :param read: the name overspill's ``read`` is served under, and ``grep`` its ``grep``'s (the markers name them).
    """
    cut = truncate_kept(store, session, call_id, message)
    if cut.truncated:
        message = _dumped(_tool_result("wrap", bounded(cut), False, read=read, grep=grep))["content"][0]["text"]
    if data is not None and not _json_within(data, store.limits()):
        as_json = json.dumps(data, ensure_ascii=False, indent=2)
        shape = truncate_kept(store, session, f"{call_id}-data", as_json, mime="application/json")
        if shape.truncated:  # the store's count is the judge (a token bound): what it finds within stays
            data = _dumped(_tool_result("wrap", bounded(shape), False, read=read, grep=grep))["structuredContent"]
            if cut.truncated and "uri" in data:
                del data["text"]  # stored and named: the message's preview is what the model is shown
    return message, data


def release(raw: dict[str, Any], shown: dict[str, Any]) -> None:
    """Let go of a bounded result's text blocks (stored by now): the SDK's reader keeps the last
    message it read until the next one arrives, and with it every block of ``raw["content"]``, a
    list it shares (``shown`` has its own)."""
    content = raw.get("content")
    if shown is not raw and isinstance(content, list) and shown.get("content") is not content:
        content.clear()


def _duplicates(structured: Any, text: str, blocks: Optional[list[str]] = None) -> bool:
    """Whether ``structuredContent`` says what the text blocks say (the SDK's and FastMCP's
    servers put a result in both: its JSON in the text, or the text as ``{"result": text}``, or a
    value that is not an object as ``{"result": value}`` beside its JSON, or, the SDK's
    ``MCPServer`` for a tool returning a list, ``{"result": [item, ...]}`` beside one text block
    per item: the item itself when it is a string, else its JSON).

    :param text: the text blocks joined with ``"\\n"``.
    :param blocks: the text blocks one by one, when known (for the one-block-per-item shape).
    """
    if isinstance(structured, dict) and len(structured) == 1 and structured.get("result") == text:
        return True
    if blocks is not None and _per_item(structured, blocks):
        return True
    if not text.lstrip()[:1] in ("{", "["):
        return False
    try:
        said = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than a parse goes: not the same
        return False
    return _same(said, structured) or (isinstance(said, list) and _same({"result": said}, structured))


def _per_item(structured: Any, blocks: list[str]) -> bool:
    """Whether ``structured`` is ``{"result": items}`` and ``blocks`` are its items one by one: a
    string item as the block's text exactly, any other as a block whose JSON is that same value."""
    if not (isinstance(structured, dict) and len(structured) == 1 and isinstance(structured.get("result"), list)):
        return False
    items = structured["result"]
    if len(items) != len(blocks) or not items:
        return False
    for item, block in zip(items, blocks):
        if isinstance(item, str):
            if item != block:
                return False
            continue
        try:
            said = json.loads(block)
        except (ValueError, RecursionError):  # not JSON, or nested deeper than a parse goes: not the same
            return False
        if not _same(said, item):
            return False
    return True


def _valid(schema: dict[str, Any], instance: Any) -> bool:
    try:
        from jsonschema.validators import validator_for  # a dependency of the SDK

        return bool(validator_for(schema)(schema).is_valid(instance))
    except Exception:  # an unusable schema: nothing can be shown to conform
        return False


def conforming(schema: dict[str, Any], ours: dict[str, Any], upstream: Any, limits: Any,
               said: Optional[str] = None) -> Optional[Any]:
    """The ``structuredContent`` a bounded result of a tool with ``outputSchema`` ``schema`` carries,
    or None when only ``ours`` is left (which a validating client refuses).  The first the schema
    admits of:

    1. ``ours``;
    2. the upstream's own, when it is within the limits (exact, and small);
    3. the upstream's object with the one string value that is ``said`` (the text ``ours["text"]``
       previews) replaced by that preview, when the rest of it is within the room the preview
       leaves (``{"result": text}``, the SDK's shape for a tool returning text, becomes
       ``{"result": preview}``);
    4. the upstream's object with ``ours``'s fields added, cut to the room the limits leave beside
       them, which is none when the preview fills them: arrays and strings empty, every key of a
       model kept, a map empty (``_emptied``), when that much is within the limits.  So a client
       that shows the model only ``structuredContent`` still gives it the preview and the link
       (``{"result": [...]}``, the SDK's and FastMCP's shape for a tool returning a list, becomes
       ``{"result": [], "uri": ..., "text": ...}``);
    5. the upstream's value cut down to the limits alone (``_shrunk``): every key of an object
       kept where they fit, else (a map) a prefix of its members, and a prefix of each array's
       items; then the same with every item of each array kept where they fit, each cut to its
       share (a tuple's ``prefixItems`` and ``minItems`` need it); then the same with each map's
       members whose key and smallest form fit kept, in order, each cut to its share, those that
       do not skipped (``minProperties`` needs it when a first key is over the limits);
    6. the cuts of 4 and 5 again, in the same order, each with every member that the schema
       refuses replaced by the first small value its own schema admits (``_mended``: a ``const``,
       an ``enum``'s first member, a ``default``, then null, false, 0, "", [] and {}), for a
       member that no cut of it conforms to (``{"anyOf": [{"type": "null"}, {"type": "string",
       "minLength": 50000}]}`` gives null for a long string), or an array's item dropped where its
       ``minItems`` allows (rows an ``enum`` refuses are left out, not made up); then the
       upstream's value at its smallest on its own (``_emptied``).  At most ``_CHECKS``
       validations in all, of ``_ERRORS`` errors a round: however slow each is, a few times
       the work of steps 1 to 5.
    """
    if _valid(schema, ours):
        return ours
    if upstream is not None and _json_within(upstream, limits) and _valid(schema, upstream):
        return upstream
    room = _room(limits)
    if isinstance(upstream, dict) and said is not None:
        previewed = [key for key, value in upstream.items() if isinstance(value, str) and value == said]
        if len(previewed) == 1:
            rest = {key: value for key, value in upstream.items() if key != previewed[0]}
            swapped = {key: ours["text"] if key == previewed[0] else value for key, value in upstream.items()}
            left = (room[0] - len(ours["text"].encode("utf-8", "surrogatepass")), room[1])
            if (not rest or _json_fits(rest, left)) and _valid(schema, swapped):
                return swapped
    tried: list[tuple[Any, Optional[dict[str, Any]], tuple[Any, ...]]] = []
    for kept, beside, how in _cuts(ours, upstream, room):
        tried.append((kept, beside, how))
        shown = kept if beside is None else {**kept, **beside}
        if _json_within(kept, limits) and _valid(schema, shown):
            return shown
    # Only when no cut conforms as it is: a member replaced says less than one cut.  Within a budget
    # of validations (``_Budget``), each small value a subschema admits found once for every cut.
    budget, chosen = _Budget(_CHECKS), {}
    # The upstream's value at its smallest on its own (arrays and strings empty) is a cut too, and
    # conforms where every member mending would replace is in an array (rows refused by an enum):
    # checked first, so that mending cannot spend the budget before it, and shown only where no
    # mended cut conforms, which keeps more of the upstream's (a row with a member replaced).
    emptied = _emptied(upstream, 0, room)[0]
    fallback = (upstream is not None and _json_within(emptied, limits)
                and not any(beside is None and _same(kept, emptied) for kept, beside, _ in tried)
                and budget.spend() and _valid(schema, emptied))
    for index, (kept, beside, how) in enumerate(tried):
        if any(beside is other and _same(kept, cut) for cut, other, _ in tried[:index]):
            continue  # (a cut as one before it: a value with no map, or no array, cuts alike)
        mended = _mended(schema, kept, room, budget, chosen)
        if not _json_within(mended, limits):  # a value replaced by a larger one (null for 0): cut again
            mended = _mended(schema, _shrunk(mended, *how), room, budget, chosen)
        shown = mended if beside is None else {**mended, **beside}
        if mended is not kept and _json_within(mended, limits) and budget.spend() and _valid(schema, shown):
            return shown
    return emptied if fallback else None


def _cuts(ours: dict[str, Any], upstream: Any,
          room: tuple[int, int]) -> Iterable[tuple[Any, Optional[dict[str, Any]], tuple[Any, ...]]]:
    """The cuts of ``upstream`` that ``conforming`` tries (4 and 5), in its order, each with what is
    put beside it (``ours``, or None) and ``_shrunk``'s arguments after the value for a cut of
    that kind: made one at a time, as they are tried."""
    if isinstance(upstream, dict) and not any(key in upstream for key in ours):
        beside = _json_size(ours)
        left = (room[0] - beside[0], room[1] - beside[1])
        yield _shrunk(upstream, left), ours, (left,)
        yield _emptied(upstream, 0, room)[0], ours, (left,)
    if upstream is not None:
        for every_item, skipping in ((False, False), (True, False), (True, True)):
            yield _shrunk(upstream, room, every_item, skipping), None, (room, every_item, skipping)


# How many times ``_mended`` validates a value and replaces what is refused: a replaced member can
# leave its container refused (two nulls where ``uniqueItems``), which the next round replaces.
_MENDS = 4
# How many validations step 6 of ``conforming`` makes in all (a round of ``_mended``, a candidate
# of ``_smallest``, a mended cut checked): a count, not a time, so that a schema whose every
# validation is slow (a deep ``anyOf``, a long ``enum``) costs a few times what steps 1 to 5 do,
# and the result is the same on any machine.
_CHECKS = 16
# How many of a value's errors a round of ``_mended`` takes: ``iter_errors`` goes on to every error
# (``is_valid`` stops at the first), each as costly as its subschema (a row against a long enum).
_ERRORS = 16


class _Budget:
    """The validations step 6 of ``conforming`` has left (``_CHECKS``)."""

    def __init__(self, left: int) -> None:
        self.left = left

    def spend(self) -> bool:
        """Whether one more validation may be made; it is counted."""
        if self.left <= 0:
            return False
        self.left -= 1
        return True


def _mended(schema: dict[str, Any], value: Any, room: tuple[int, int], budget: _Budget,
            chosen: dict[int, tuple[Any, Any]]) -> Any:
    """``value`` with each member (at any depth; never ``value`` itself, whose smallest form says
    nothing) that ``schema`` refuses replaced by the first small value that the member's own
    (sub)schema admits (``_smallest``, kept in ``chosen`` by the subschema's id), or, an array's
    item where its ``minItems`` allows (``_droppable``), dropped: a value the upstream never sent
    is not made up where none is needed.  The deepest first, as a member replaced makes its
    container's other errors moot or not; at most ``_ERRORS`` of them a round, each round and
    candidate spending ``budget``.  ``value`` itself when nothing is replaced."""
    try:
        from jsonschema.validators import validator_for  # a dependency of the SDK

        validator = validator_for(schema)(schema)
        for _ in range(_MENDS):
            if not budget.spend():
                break
            errors = sorted(itertools.islice((error for error in validator.iter_errors(value) if error.path), _ERRORS),
                            key=lambda error: -len(error.path))
            replaced: dict[tuple[Any, ...], Any] = {}
            around: set[tuple[Any, ...]] = set()  # the paths replaced this round and those they are in
            dropped: dict[tuple[Any, ...], int] = {}  # the items dropped this round, by their array's path
            for error in errors:
                path = tuple(error.path)
                if path in around:
                    continue  # around (or at) a member replaced this round: seen again next round
                spare = _droppable(schema, error, value, path)
                if spare is not None and spare > dropped.get(path[:-1], 0):
                    dropped[path[:-1]] = dropped.get(path[:-1], 0) + 1
                    replaced[path] = _DROPPED
                else:
                    if id(error.schema) not in chosen:
                        # The subschema is kept with its id (rows share it), so that the id stays its own.
                        chosen[id(error.schema)] = (error.schema, _smallest(validator.evolve(schema=error.schema),
                                                                            error.schema, room, budget))
                    smallest = chosen[id(error.schema)][1]
                    if smallest is _NONE:
                        continue
                    replaced[path] = copy.deepcopy(smallest)  # each its own (not the schema's): nothing shared
                around.update(path[:length] for length in range(1, len(path) + 1))
            if not replaced:
                break
            value = _replaced(value, replaced, 0)
    except Exception:  # an unusable schema (as ``_valid``), or a path that is not the value's: no more
        pass
    return value


_NONE = object()
_DROPPED = object()  # (in ``_replaced``: an array's item left out)


def _droppable(schema: Any, error: Any, value: Any, path: tuple[Any, ...]) -> Optional[int]:
    """How many items the array holding the item at ``path`` of ``value``, which ``error`` refuses,
    has beyond its ``minItems``; None when the item is not one of an array's ``items`` (a member, a
    tuple's ``prefixItems``: a place that says what it is), or when its array's schema is not found
    by following ``error``'s schema path from the root (a ``$ref`` on the way)."""
    if not path or not isinstance(path[-1], int):
        return None
    keywords = list(error.relative_schema_path)
    at = next((index for index in range(len(keywords) - 1, -1, -1)
               if keywords[index] in ("items", "prefixItems", "additionalItems", "unevaluatedItems")), None)
    if at is None or keywords[at] != "items":
        return None
    node = schema
    for step in keywords[:at]:
        if isinstance(node, dict) and isinstance(step, str) and step in node:
            node = node[step]
        elif isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
            node = node[step]
        else:
            return None
    if not isinstance(node, dict) or not isinstance(node.get("items"), dict):
        return None  # (an older draft's tuple: a list of ``items``)
    array = value
    for step in path[:-1]:
        array = array[step]
    least = node.get("minItems", 0)
    if not isinstance(array, list) or not isinstance(least, int) or isinstance(least, bool):
        return None
    return len(array) - least


def _smallest(validator: Any, schema: Any, room: tuple[int, int], budget: _Budget) -> Any:
    """The first of ``schema``'s own words (``_words``) and null, false, 0, "", [] and {} that
    ``validator`` (over ``schema``) admits and whose JSON fits ``room``; ``_NONE`` when none is, or
    when ``budget`` runs out first."""
    for candidate in itertools.chain(itertools.islice(_words(schema, 0), 16), (None, False, 0, "", [], {})):
        if not _json_fits(candidate, room):
            continue
        if not budget.spend():
            break
        if validator.is_valid(candidate):
            return candidate
    return _NONE


def _words(schema: Any, depth: int) -> Iterable[Any]:
    """``schema``'s ``const``, its ``enum``'s first member and its ``default``, then its ``allOf``,
    ``anyOf`` and ``oneOf`` branches' (a few levels deep)."""
    if not isinstance(schema, dict) or depth > 3:
        return
    if "const" in schema:
        yield schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        yield schema["enum"][0]
    if "default" in schema:
        yield schema["default"]
    for keyword in ("allOf", "anyOf", "oneOf"):
        if isinstance(schema.get(keyword), list):
            for branch in schema[keyword]:
                yield from _words(branch, depth + 1)


def _replaced(value: Any, replaced: dict[tuple[Any, ...], Any], depth: int) -> Any:
    """``value`` with the member at each path of ``replaced`` (from ``depth`` on; none within
    another) replaced by its value, or left out where that is ``_DROPPED`` (an array's item): a copy
    of each container on the way, and only those."""
    below: dict[Any, dict[tuple[Any, ...], Any]] = {}
    for path, member in replaced.items():
        below.setdefault(path[depth], {})[path] = member
    copied = dict(value) if isinstance(value, dict) else list(value)
    for step, paths in below.items():
        if isinstance(copied, list) and not (isinstance(step, int) and 0 <= step < len(copied)):
            raise LookupError(step)
        if isinstance(copied, dict) and step not in copied:
            raise LookupError(step)
        if len(paths) == 1 and len(next(iter(paths))) == depth + 1:
            copied[step] = next(iter(paths.values()))
        else:
            copied[step] = _replaced(value[step], paths, depth + 1)
    if isinstance(copied, list) and any(item is _DROPPED for item in copied):  # (after: the paths index the value)
        copied = [item for item in copied if item is not _DROPPED]
    return copied


def _room(limits: Any) -> tuple[int, int]:
    """The bytes and newlines a JSON text (``indent=2``, which ends in no newline) may have and be within
    the limits (``fits_limits``)."""
    most = limits.max_bytes if limits.max_tokens is None else min(limits.max_bytes, limits.max_tokens)
    return most, limits.max_lines - 1


def _json_size(value: Any) -> tuple[int, int]:
    """The bytes and newlines of ``value``'s JSON text (``indent=2``, as the store keeps it)."""
    text = json.dumps(value, ensure_ascii=False, indent=2)
    return len(text.encode("utf-8", "surrogatepass")), text.count("\n")


def _measure(value: Any, depth: int, room: Optional[int] = None) -> tuple[int, int]:
    """The bytes and lines ``value`` adds to a JSON text (``indent=2``) as an item ``depth``
    containers deep: its own text, indented by two spaces a level, and its separator.  With
    ``room``, a value that ``_least`` finds longer than that is only known to be over it (a
    lower bound, ``_least``'s, and one line)."""
    if room is not None:
        least = _least(value, room)
        if least > room:
            return least + 2, 1
    size, newlines = _json_size(value)
    return size + 2 * depth * (newlines + 1) + 2, newlines + 1


def _key_size(key: Any) -> int:
    """The bytes a member's key adds before its value: ``"key": ``."""
    return len(json.dumps(str(key), ensure_ascii=False).encode("utf-8", "surrogatepass")) + 2


def _pairs(value: Any) -> Iterable[tuple[Any, Any]]:
    """An object's keys and members, or an array's indexes and items (read as far as needed)."""
    return value.items() if isinstance(value, dict) else enumerate(value)


def _rebuilt(value: Any, pairs: list[tuple[Any, Any]]) -> Any:
    """An object or an array of ``value``'s kind from ``pairs`` (as ``_pairs`` gives them)."""
    return dict(pairs) if isinstance(value, dict) else [item for _, item in pairs]


# A string this short is a word (an enum's or a const's value, an id, a date, a hash): kept whole
# or not at all, never cut to a prefix that the schema (or the model) would take for another.
_WORD = 64


def _emptied(value: Any, depth: int, room: tuple[int, int], every_item: bool = False) -> tuple[Any, int, int]:
    """``value`` at its smallest, with the bytes and lines it adds as an item ``depth`` deep (as
    ``_measure`` counts them): strings empty (but a word, ``_WORD``); an object with every key, each member at its
    smallest, when that fits ``room`` (a model: its keys may be required), else empty (a map,
    too large for every key: it requires none); an array empty, or with ``every_item`` as an
    object is (a tuple: its items may be required).  A walk of about ``room``, whatever the
    size of ``value``."""
    empty = 2 * depth + 4
    if isinstance(value, str) and len(value) > _WORD:
        return "", empty, 1
    if not isinstance(value, (list, dict)):  # a number, a bool, null or a word: as it is
        size, lines = _measure(value, depth)
        return value, size, lines
    if not value or (isinstance(value, list) and not every_item):
        return type(value)(), empty, 1
    named = isinstance(value, dict)
    size, lines = 2 * depth + 6, 2
    # Each member adds a line and at least its indent, key, value and separator: a map too large
    # for every key is known so without a walk (a nested one would cost a walk of the room each).
    least = 2 * depth + 5 + (4 if named else 0)  # a one-character value (and a key "")
    if size + len(value) * least > room[0] or lines + len(value) > room[1]:
        return type(value)(), empty, 1
    kept: list[tuple[Any, Any]] = []
    for key, member in _pairs(value):
        # The room is the container's, not what is left of it: a model is a model wherever it falls.
        smallest, member_size, member_lines = _emptied(member, depth + 1, room, every_item)
        size += member_size + (_key_size(key) if named else 0)
        lines += member_lines
        if size > room[0] or lines > room[1]:
            return type(value)(), empty, 1
        kept.append((key, smallest))
    return _rebuilt(value, kept), size, lines


def _cut(value: Any, room: tuple[int, int], depth: int, every_item: bool = False, skipping: bool = False) -> Any:
    """``value`` with its arrays cut to a prefix of their items and its strings (but words,
    ``_WORD``) to a prefix of their characters, each cut as little as fits ``room`` (bytes, lines) about as ``_measure``
    counts them.  An object keeps every key where they fit at their smallest (``_emptied``),
    sharing ``room`` among its members beyond that (``_shared``), so that only the large ones
    are cut; else (a map) a prefix of its members, as an array's items (``_prefix``).  With
    ``every_item``, an array is cut as an object is (a tuple keeps each item, cut to its share);
    with ``skipping``, a map keeps the members that fit, skipping those that do not (``_prefix``)."""
    size, lines = _measure(value, depth, room[0])
    if size <= room[0] and lines <= room[1]:
        return value
    if isinstance(value, str) and len(value) > _WORD:
        return _string_cut(value, room[0], depth) if room[1] > 0 else ""
    if not isinstance(value, (list, dict)):
        return value  # a number, a bool, null or a word: as it is
    named = isinstance(value, dict)
    if (named or every_item) and _emptied(value, depth, room, every_item)[0]:
        return _rebuilt(value, _shared(list(_pairs(value)), named, room, depth, every_item, skipping))
    # Read only as far as the room.
    return _rebuilt(value, _prefix(_pairs(value), named, room, depth, every_item, skipping))


def _shared(pairs: list[tuple[Any, Any]], named: bool, room: tuple[int, int], depth: int,
            every_item: bool, skipping: bool = False) -> list[tuple[Any, Any]]:
    """Every one of ``pairs`` (an object's keys and members, ``named``, or an array's indexes and
    items), each cut to its share of ``room`` inside their container ``depth`` deep: each is
    given its smallest (``_emptied``) and an equal share of what is spare beyond that, the ones
    that need least first, so that only the large ones are cut (and a model nested in a model
    keeps its keys); in the order of ``pairs``."""
    inner = (room[0] - 2 * depth - 6, room[1] - 2)
    # Each is first measured only as far as an equal share (a lower bound past it), so that many
    # large members cost a walk of about the room in all, not each.
    equal = max(inner[0] // max(len(pairs), 1), 0)
    key_sizes = [_key_size(key) if named else 0 for key, _ in pairs]
    entries = []
    for index, (key, member) in enumerate(pairs):
        key_size = key_sizes[index]
        whole_size, whole_lines = _measure(member, depth + 1, equal)
        _, least_size, least_lines = _emptied(member, depth + 1, inner, every_item)
        entries.append((whole_size - least_size, index, whole_size + key_size, whole_lines, least_size + key_size,
                        least_lines))
    spare = [inner[0] - sum(entry[4] for entry in entries), inner[1] - sum(entry[5] for entry in entries)]
    kept: dict[int, tuple[Any, Any]] = {}
    entries.sort(key=lambda entry: entry[0])
    for order, (_, index, whole_size, whole_lines, least_size, least_lines) in enumerate(entries):
        # Never less than its smallest, though those before took more than their share: with less,
        # a model's keys (a tuple's items) would give way to a prefix.
        share = (least_size + max(spare[0], 0) // (len(entries) - order),
                 least_lines + max(spare[1], 0) // (len(entries) - order))
        (key, member), key_size = pairs[index], key_sizes[index]
        if whole_size <= share[0] and whole_lines <= share[1]:  # a lower bound: measured again, within the share
            whole_size, whole_lines = _measure(member, depth + 1, max(share[0] - key_size, 0))
            whole_size += key_size
        if whole_size > share[0] or whole_lines > share[1]:
            member = _cut(member, (share[0] - key_size, share[1]), depth + 1, every_item, skipping)
            whole_size, whole_lines = _measure(member, depth + 1)
            whole_size += key_size
        kept[index] = (key, member)
        spare[0], spare[1] = spare[0] - (whole_size - least_size), spare[1] - (whole_lines - least_lines)
    return [kept[index] for index in range(len(pairs))]


def _prefix(pairs: Iterable[tuple[Any, Any]], named: bool, room: tuple[int, int], depth: int,
            every_item: bool, skipping: bool = False) -> list[tuple[Any, Any]]:
    """The longest prefix of ``pairs`` (an array's indexes and items, or a map's keys and members,
    ``named``) that fits ``room`` inside their container ``depth`` deep; the first cut to fit
    when none fits whole (rather than nothing).  With ``skipping`` (a map's), the members whose
    key and smallest form (``_emptied``) fit what is left, in order, each that does not skipped
    (read for about ``room`` past the first skipped), sharing ``room`` as an object's members do
    (``_shared``) when one of them is kept only cut."""
    skips = skipping and named  # (``skipping`` is passed on: a map may be in an array's item)
    kept: list[tuple[Any, Any]] = []
    left_bytes, left_lines = room[0] - 2 * depth - 6, room[1] - 2
    looked = 0  # what the members skipped cost to read, in characters about: at most the room
    cutting = False  # whether a member kept is over what is left whole: the room is then shared
    for key, item in pairs:
        if skips and len(str(key)) >= left_bytes:  # a key with as many characters as bytes left: not read
            looked += 1
            if looked > room[0]:
                break
            continue
        key_size = _key_size(key) if named else 0
        item_size, item_lines = _measure(item, depth + 1, max(left_bytes - key_size, 0))
        if item_size + key_size <= left_bytes and item_lines <= left_lines:
            kept.append((key, item))
            left_bytes, left_lines = left_bytes - item_size - key_size, left_lines - item_lines
            continue
        if skips:
            # Kept to be cut where its key and smallest form fit (a long string's prefix is a
            # member that minProperties counts), as the first member of a prefix is; skipped only
            # where even they do not.  Measured in what is left, so that a member skipped costs a
            # walk of about what ``looked`` counts for it (``_shrunk`` checks the cut's real size).
            _, least_size, least_lines = _emptied(item, depth + 1, (left_bytes, left_lines), every_item)
            if least_size + key_size <= left_bytes and least_lines <= left_lines:
                kept.append((key, item))
                left_bytes, left_lines = left_bytes - least_size - key_size, left_lines - least_lines
                cutting = True
                continue
            looked += 1 + min(key_size + item_size, left_bytes)
            if looked > room[0]:
                break
            continue
        if not kept and left_bytes - key_size > 0 and left_lines > 0:
            kept.append((key, _cut(item, (left_bytes - key_size, left_lines), depth + 1, every_item, skipping)))
        break
    if cutting:  # every member kept fits at its smallest: each cut to its share, only the large ones
        return _shared(kept, named, room, depth, every_item, skipping)
    return kept


def _string_cut(value: str, room: int, depth: int) -> str:
    """The longest prefix of ``value`` whose JSON text, as an item ``depth`` deep, adds at most
    ``room`` bytes (escapes and multi-byte characters take more than one: a search, not a guess)."""
    low, high = 0, min(len(value), max(0, room - 2 * depth - 4))  # a character takes a byte at least
    while low < high:
        middle = (low + high + 1) // 2
        if _measure(value[:middle], depth)[0] <= room:
            low = middle
        else:
            high = middle - 1
    return value[:low]


def _shrunk(value: Any, room: tuple[int, int], every_item: bool = False, skipping: bool = False) -> Any:
    """``value`` as it is when its JSON text (``indent=2``) is within ``room``'s bytes and
    newlines, else cut down (``_cut``, with ``every_item`` and ``skipping`` or not) until it is;
    its smallest form (``_emptied``) when nothing is, or when there is no room at all (or less)."""
    smallest, least_size, least_lines = _emptied(value, 0, room, every_item)
    if room[0] > 0 and room[1] > 0:
        if _json_fits(value, room):
            return value
        target = room
        for _ in range(8):  # _cut's counts are close, not exact: a room smaller by what it missed by
            cut = _cut(value, target, 0, every_item, skipping)
            size, newlines = _json_size(cut)
            if size <= room[0] and newlines <= room[1]:
                return cut
            # Never below the smallest form: in less room than that, a model's keys (a tuple's
            # items) would give way to a prefix, which the smallest form keeps.
            smaller = (max(target[0] - max(size - room[0], 0, target[0] // 32 if size > room[0] else 0), least_size),
                       max(target[1] - max(newlines - room[1], 0), least_lines))
            if smaller == target or smaller[0] <= 0 or smaller[1] <= 0:
                break
            target = smaller
    return smallest


def _same(one: Any, other: Any) -> bool:
    """Whether two JSON values are the same value (Python's ``==`` alone holds ``True == 1 == 1.0``)."""
    if not one == other:
        return False
    if json.dumps(one) == json.dumps(other):  # the same members in the same order: no sort needed
        return True
    return json.dumps(one, sort_keys=True) == json.dumps(other, sort_keys=True)


def _common(said: list[Any]) -> Optional[dict[str, Any]]:
    """The entries that every object of ``said`` (one block's ``annotations`` or ``_meta`` each)
    holds with the same value, in the first's order; None when there are none.  A block without
    the object (or with one that is not an object) holds none, so then nothing is common."""
    first, rest = said[0], said[1:]
    if not isinstance(first, dict) or not all(isinstance(other, dict) for other in rest):
        return None
    kept = {key: value for key, value in first.items()
            if all(key in other and _same(other[key], value) for other in rest)}
    return kept or None


def _carry(ours: list[dict[str, Any]], joined: list[dict[str, Any]]) -> None:
    """Give the preview block (``ours[0]``) what the text blocks it replaces (``joined``) all said:
    the ``annotations`` entries and ``_meta`` keys common to them (``_common``); and the
    ``resource_link`` after it (``ours[1]``, when there is one) those annotations too."""
    annotations = _common([block.get("annotations") for block in joined])
    meta = _common([block.get("_meta") for block in joined])
    if annotations is not None:
        for block in ours:  # the link is to the same output, whole: the same audience, priority and date
            block["annotations"] = dict(annotations)
    if meta is not None:
        # Not on the link: an upstream's _meta describes its own blocks, and two blocks would claim it.
        ours[0]["_meta"] = meta


def _dumped(result: Any) -> dict[str, Any]:
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


def bound(raw: dict[str, Any], store: ToolOutputStore, session: str, call_id: str, resource_link: bool,
          output_schema: Optional[dict[str, Any]] = None, *, read: str = "read", grep: str = "grep") -> dict[str, Any]:
    """A ``tools/call`` result bounded for the model (runs on a worker thread: it may write).

    When the text blocks are over the limits, the preview block that replaces
    them (where the first was) carries what they all said: each
    ``annotations`` entry (``audience``, ``priority``, ``lastModified``) and
    each top-level ``_meta`` key that every one of them holds with the same
    JSON value, and nothing that any of them lacks or states otherwise.  So
    blocks annotated alike give a preview annotated so; a block with no
    ``annotations`` (meant for everyone) or blocks for different audiences
    give one with no ``audience`` (meant for everyone, which is what the
    joined text is for); differing priorities or dates give none.  Overspill's
    ``resource_link`` to the stored output carries the same annotations (it is
    that output, whole), not the ``_meta``; the link to a stored
    ``structuredContent`` carries neither.  Every other block, and the
    result's ``_meta``, pass through as they came.

    :param output_schema: the tool's declared ``outputSchema``, if any.
    :param read: the name overspill's ``read`` is served under, and ``grep`` its ``grep``'s: the
        markers' next calls and the links' descriptions name them.
    """
    content = raw.get("content")
    if not isinstance(content, list):
        return raw
    texts = _texts(content)
    said = [content[index]["text"] for index in texts]
    joined = "\n".join(said)
    structured = raw.get("structuredContent")
    # Over the limits is ``truncated``, stored or not: an output the store could not keep (a quota too
    # small for its record, a failed write) has no resource and is still only its bounded preview.
    cut = truncate_kept(store, session, call_id, joined) if texts else None
    over = cut is not None and cut.truncated
    # A structuredContent that repeats the text (``_duplicates``) is neither measured nor stored on its
    # own, whether the text fits (the result then passes through: the model reads the text, and the
    # copy's JSON is larger only by escaping and indentation) or not (the text is stored).
    if structured is not None and not (texts and _duplicates(structured, joined, said)):
        as_json = json.dumps(structured, ensure_ascii=False, indent=2)
        shape = truncate_kept(store, session, f"{call_id}-structured", as_json, mime="application/json")
    else:
        shape = None
    if not over and (shape is None or not shape.truncated):
        return raw  # within the limits: as the upstream sent it
    shown = dict(raw)
    if cut is not None and over:
        ours = _dumped(_tool_result("wrap", bounded(cut), resource_link, read=read, grep=grep))
        _carry(ours["content"], [content[index] for index in texts])
        blocks: list[Any] = []
        replaced = set(texts)  # (a set: a result may hold hundreds of thousands of blocks)
        for index, block in enumerate(content):  # the preview where the first text block was
            if index == texts[0]:
                blocks.extend(ours["content"])
            elif index not in replaced:
                blocks.append(block)
        shown["content"] = blocks
        data = ours["structuredContent"]
        if shape is not None and shape.resource is not None:
            data["structured_uri"] = shape.resource.uri  # stored too, not shown: the text is the preview
            if resource_link:
                shown["content"].append(_dumped(_tool_result("wrap", bounded(shape), read=read,
                                                             grep=grep))["content"][1])
        elif shape is not None and shape.truncated:  # over, and not stored: its preview is all there is of it
            shown["content"].append(_dumped(_tool_result("wrap", bounded(shape), read=read, grep=grep))["content"][0])
        elif shape is not None:
            data["structured"] = structured  # small: kept whole beside the preview
    else:
        assert shape is not None
        ours = _dumped(_tool_result("wrap", bounded(shape), resource_link, read=read, grep=grep))
        shown["content"] = [*content, *ours["content"]]
        data = ours["structuredContent"]
        if shape.resource is not None:
            # ``uri`` is the stored JSON's here; ``structured_uri`` names it too, so a stored
            # structuredContent is under that one key whether or not the text was bounded beside it.
            data["structured_uri"] = shape.resource.uri
    shown["structuredContent"] = data
    if output_schema is not None:
        # A validating client checks a structuredContent that is there, isError or not, and asks for one
        # only of a success: an error result has one only as the upstream's did, and only conforming.
        failed = bool(raw.get("isError"))
        previewed = joined if over else None  # what data["text"] shows
        kept = None if failed and structured is None else conforming(
            output_schema, data, structured, store.limits(), previewed)
        if kept is None and failed:  # nothing the schema admits, and an error result needs nothing
            del shown["structuredContent"]
            shown["_meta"] = {**(raw.get("_meta") or {}), META_KEY: data}
        elif kept is not None and kept is not data:
            shown["structuredContent"] = kept
            shown["_meta"] = {**(raw.get("_meta") or {}), META_KEY: data}
    return shown
