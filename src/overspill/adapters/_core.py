"""What every framework adapter shares: bounding a result, sessions, call ids and the paging tools.

A framework module only translates: it finds the session and the call id in
the framework's own objects, hands the result to ``Bounder``, and wraps
``paging_tools``' definitions in the framework's tool type.  The rules (limits,
previews, markers, schemas, error wording) all come from the store and
``overspill.tools``; nothing here imports a framework.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import threading
import uuid
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

from .._arguments import check_metadata
from .._frontend import check_session_id, one_line, truncate_kept
from .._json_load import loads_text
from .._tokens import counter
from ..errors import OverspillError
from ..store import ToolOutputStore, TruncateResult
from ..text import MARKER_BYTES, as_stored, shown_size, truncation_marker
from ..tools import ToolResult, call, schemas
from ..tools._result import failure
from ..tools.schemas import stored_only, stored_only_problem

__all__ = ["PAGING_TOOLS", "Bounder", "PagingTool", "Sessions", "as_text", "joined", "json_text",
           "new_call_id", "new_session_id", "open_store", "optional_session_id", "paging_tools", "replaced_pieces",
           "retold", "store_id"]

#: The tools every adapter adds, so the model can page and search what was stored.
PAGING_TOOLS = ("read", "grep")

logger = logging.getLogger("overspill")

Text = Union[str, bytes, bytearray, memoryview]


def open_store(store: Optional[ToolOutputStore]) -> ToolOutputStore:
    """The store an adapter uses: the given one, else the default ``ToolOutputStore()``.

    :raises TypeError: ``store`` is neither None nor a ``ToolOutputStore``.
    """
    if store is None:
        return ToolOutputStore()
    if not isinstance(store, ToolOutputStore):
        raise TypeError(f"store must be a ToolOutputStore or None, not {type(store).__name__}")
    return store


def optional_session_id(session_id: object) -> Optional[str]:
    """A session id given by the host: None (the adapter finds one) or a session id as the front ends take it.

    :raises TypeError: neither None nor a str.
    :raises ValueError: an empty str.
    """
    return None if session_id is None else check_session_id(session_id)


def new_session_id() -> str:
    """A fresh session id, for a run or an agent the framework gives none."""
    return "session_" + uuid.uuid4().hex


def new_call_id() -> str:
    """A fresh tool call id, for a call the framework gives none."""
    return "call_" + uuid.uuid4().hex


#: How many characters of an id the store refuses its stand-in begins with (``store_id``), for a person
#: reading the records: 4 UTF-8 bytes each at most, so a stand-in stays far within the store's bound.
_STAND_IN_PREFIX = 32


def store_id(value: str) -> str:
    """A framework's or a model's id (a session: a thread, a group, a conversation; a tool call id) as the
    store's: ``value`` itself whenever the store takes it, else a stand-in it takes.

    The store refuses a caller string over ``MAX_METADATA_BYTES`` UTF-8 bytes or holding a surrogate pair
    (``check_metadata``, the one home of that rule), but a framework's ids may be any string: LangGraph's
    ``thread_id``, the SDK's ``group_id``, a model's call id.  Refusing one would fail the whole run, a
    result within the limits too, so such an id stands for its first characters (a lone surrogate among
    them as U+FFFD), ``~sha256:`` and the SHA-256 of all of it: the same id always gives the same stand-in
    (the model's ``read`` in that session finds what was stored in it), and two ids, however alike, never
    share one.  Every id the store takes (nearly all) is used exactly as it is.
    """
    try:
        check_metadata(value, "id")
        return value
    except ValueError:
        pass
    # (surrogatepass: any str, a lone surrogate or a pair too, has bytes of its own, so the digest is its own)
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    prefix = "".join("\ufffd" if "\ud800" <= character <= "\udfff" else character
                     for character in value[:_STAND_IN_PREFIX])
    return f"{prefix}~sha256:{digest}"


class Sessions:
    """One fresh session id per object (a run, an agent), kept as long as the object lives.

    Keyed weakly, so a finished run's entry goes with it; an object that
    cannot be weakly referenced is keyed by identity for the life of this map.
    """

    def __init__(self) -> None:
        self._ids: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        self._strong: dict[int, tuple[Any, str]] = {}
        self._lock = threading.Lock()

    def of(self, owner: object) -> str:
        """The session id of ``owner``, made on first use."""
        try:
            found = self._ids.get(owner)
        except TypeError:  # not weakly referenceable, or unhashable
            return self._of_strong(owner)
        if found is not None:
            return found
        with self._lock:
            return self._ids.setdefault(owner, new_session_id())

    def _of_strong(self, owner: object) -> str:
        with self._lock:
            entry = self._strong.get(id(owner))
            if entry is None or entry[0] is not owner:
                entry = self._strong[id(owner)] = (owner, new_session_id())
            return entry[1]


def json_text(value: object) -> str:
    """``value`` as JSON text (non-ASCII kept as it is).

    :raises TypeError: a value JSON cannot represent.
    :raises ValueError: a circular reference.
    """
    return json.dumps(value, ensure_ascii=False)


def as_text(value: object, dumps: Callable[[Any], str] = json_text,
            shown: Optional[Callable[[Any], str]] = None) -> Optional[Text]:
    """The text a tool result is bounded (and stored) as, or None when it has none.

    A ``str`` is itself (a subclass as the plain ``str`` of its characters);
    bytes-like values are their bytes; any other value is its JSON text, made
    by ``dumps`` (a framework's own serialiser, where it has one).  A value
    that cannot be serialised is ``shown(value)`` when given: the text the
    framework shows the model of any value (smolagents' ``str(value)``), so
    that text is what is bounded.  Else (or when ``shown`` fails too) it gives
    None and a warning on the ``overspill`` logger: the caller passes it on
    unchanged, as the framework then has no text of it to show.
    """
    if isinstance(value, str):
        return value if type(value) is str else str.__str__(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return value
    try:
        return dumps(value)
    except (TypeError, ValueError) as error:
        reason: Exception = error
    if shown is not None:
        try:
            return _shown_text(value, shown)
        except Exception as error:  # noqa: BLE001  (a value the framework cannot show either)
            reason = error
    logger.warning("overspill: a %s tool result is not text and cannot be serialised as JSON (%s); "
                   "it is passed on unbounded", type(value).__name__, one_line(reason))
    return None


def _shown_text(value: object, shown: Callable[[Any], str]) -> str:
    """``shown(value)``, the text a framework shows the model of ``value``, as a plain ``str`` (a ``__str__``
    may return a str subclass: bounded as its characters, as a str result is).

    :raises Exception: whatever ``shown`` raises.
    """
    text = shown(value)
    return text if type(text) is str else str.__str__(text)


def _shown_instead(value: object, shown: Optional[Callable[[Any], str]]) -> Optional[str]:
    """The text a framework shows the model of ``value`` (``shown(value)``) where it may be longer than the
    text ``value`` is stored as (``as_text``): for any value but a ``str`` (its characters are that text)
    when ``shown`` is given; None otherwise, or when ``shown`` fails (the framework's own error, not ours).

    Bytes' repr takes up to four characters a byte, and a pydantic model's ``str()`` shows a field its
    JSON leaves out: a value whose own text fits may still be shown to the model over the limits.
    """
    if shown is None or isinstance(value, str):
        return None
    try:
        return _shown_text(value, shown)
    except Exception:  # noqa: BLE001
        return None


def joined(pieces: list[Text]) -> Text:
    """Pieces of text as one (one piece as it is): joined with a newline, as bytes when one of them is."""
    if len(pieces) == 1:
        return pieces[0]
    if all(isinstance(piece, str) for piece in pieces):
        return "\n".join(pieces)  # type: ignore[arg-type]
    return b"\n".join(piece.encode() if isinstance(piece, str) else bytes(piece) for piece in pieces)


def replaced_pieces(items: list[Any], at: list[int], first: Any) -> list[Any]:
    """``items`` with the pieces at the indices ``at`` (their text, now stored as one) replaced by
    ``first`` where the first of them stood, the others left out; every other item (media) kept in place."""
    left_out = set(at[1:])
    return [first if index == at[0] else item for index, item in enumerate(items) if index not in left_out]


#: Where a retold subclass instance keeps its text and how it was made: ``(text, how)`` (see ``_made``).
_RETOLD = "_overspill_retold"


def _its_text(self: BaseException) -> str:
    """The ``__str__`` of a retold subclass: the bounded text, wherever its type keeps its own."""
    return self.__dict__[_RETOLD][0]


def _reduced(self: BaseException) -> tuple[Any, ...]:
    """The ``__reduce__`` of a retold subclass: made again by ``_made`` from the original type, which
    pickle finds by name (the subclass, made here, it cannot), so a bounded error crosses a process
    pool or a ``copy.copy`` as the tool's own error (its type, text and attributes)."""
    text, how = self.__dict__[_RETOLD]
    attributes = {name: value for name, value in self.__dict__.items() if name != _RETOLD}
    return _made, (type(self).__mro__[1], text, how, attributes, _slot_values(self))


def _reduced_ex(self: BaseException, protocol: int) -> tuple[Any, ...]:
    """The ``__reduce_ex__`` of a retold subclass: ``_reduced`` whatever the protocol, so a ``__reduce_ex__``
    of the original type (which would make it again from its own attributes) is not what copy and pickle
    follow."""
    return _reduced(self)


@functools.lru_cache(maxsize=None)
def _saying_its_args(kind: type) -> type:
    """A subclass of ``kind``, named as it is, whose text is the bounded text (``kind``'s own ``__str__``
    shows something else: a ``KeyError``'s repr, a ``CalledProcessError``'s command and code, an
    ``ExceptionGroup``'s count of sub-exceptions, a pydantic ``ValidationError``'s errors; or ``kind``
    would copy and pickle itself back to its unbounded text, see ``_copies_saying``)."""
    # __copy__ and __deepcopy__ None: copy then follows the reduce methods (a kind's own would bypass them).
    return type(kind.__name__, (kind,), {"__module__": kind.__module__, "__qualname__": kind.__qualname__,
                                         "__str__": _its_text, "__reduce__": _reduced, "__reduce_ex__": _reduced_ex,
                                         "__copy__": None, "__deepcopy__": None})


def _copies_saying(told: BaseException, text: str) -> bool:
    """Whether ``copy.copy``, ``copy.deepcopy`` and pickle make ``told`` (an exception of the original type
    whose args are ``(text,)``) again from ``text``: the recipe they follow (its ``__reduce_ex__``, read, not
    run) calls its type on ``text`` alone and restores the state with ``BaseException``'s ``__setstate__``,
    and no ``__copy__``, ``__deepcopy__`` or ``copyreg`` entry takes their place.  A type that makes itself
    again from other attributes (``json.JSONDecodeError``: its ``msg``, ``doc`` and ``pos``; a class's own
    ``__reduce__``) would go back to the unbounded text: it is retold as a subclass instead."""
    import copyreg  # only an error to retell needs them
    import pickle

    kind = type(told)
    if (getattr(kind, "__copy__", None) is not None or getattr(kind, "__deepcopy__", None) is not None
            or kind in copyreg.dispatch_table or getattr(kind, "__setstate__", None) is not BaseException.__setstate__):
        return False
    for protocol in {4, pickle.DEFAULT_PROTOCOL, pickle.HIGHEST_PROTOCOL}:  # (copy's, pickle's, the newest)
        recipe = told.__reduce_ex__(protocol)
        if not (isinstance(recipe, tuple) and len(recipe) >= 2 and recipe[0] is kind
                and isinstance(recipe[1], tuple) and recipe[1] == (text,)):
            return False
    return True


def _made(kind: type, text: str, how: tuple[Any, ...], attributes: dict[str, Any],
          slots: list[tuple[str, Any]]) -> BaseException:
    """An instance of ``_saying_its_args(kind)`` saying ``text``, with ``attributes`` (its ``__dict__``) and
    ``slots`` (``_slot_values``), made ``how``: ``("new", args)`` by the type's ``__new__`` on ``args`` (its
    ``__init__`` is not called), or ``("call", name, args)`` by its class method ``name`` (the way the type
    itself is pickled, for one whose ``__new__`` takes what only such a method makes).  Also how pickle
    makes one again (``_reduced``).

    :raises Exception: the type cannot be made so (whatever its ``__new__`` or method raises).
    """
    subclass = _saying_its_args(kind)
    told = subclass.__new__(subclass, *how[1]) if how[0] == "new" else getattr(subclass, how[1])(*how[2])
    told.__dict__.update(attributes)
    for name, value in slots:
        try:
            setattr(told, name, value)
        except AttributeError:  # read-only: made by its __new__ already (an exception group's exceptions)
            pass
    if how == ("new", (text,)):
        told.args = (text,)
    if "message" in attributes:  # frameworks' errors often keep their text apart too
        told.message = text  # type: ignore[attr-defined]
    told.__dict__[_RETOLD] = (text, how)
    return told


def _slot_values(error: BaseException) -> list[tuple[str, Any]]:
    """The attributes of ``error`` kept outside its ``__dict__``: a built-in exception's (an
    ``OSError``'s errno, strerror, filename and filename2, a ``SyntaxError``'s line, a
    ``StopIteration``'s value...) and a class's ``__slots__``; ``BaseException``'s own (args,
    traceback, cause, context) are not among them."""
    import types  # only an error to retell needs it

    found: dict[str, Any] = {}
    for kind in type(error).__mro__:
        if kind is BaseException or kind is object:
            continue
        for name, slot in vars(kind).items():
            if name in found or not (isinstance(slot, types.MemberDescriptorType) or (
                    kind.__module__ == "builtins" and isinstance(slot, types.GetSetDescriptorType)
                    and name not in ("__dict__", "__weakref__"))):  # (a retold subclass's own)
                continue
            try:
                found[name] = getattr(error, name)
            except AttributeError:  # unset (a BlockingIOError's characters_written, an empty slot)
                pass
    return list(found.items())


def retold(error: BaseException, text: str) -> Optional[BaseException]:
    """An exception of ``error``'s type (its attributes copied: its ``__dict__``, and those a built-in
    type or ``__slots__`` keep apart, such as an ``OSError``'s errno) whose ``str()`` is ``text``; None
    when no such exception can be made (the caller then leaves ``error`` as it is, unbounded, rather
    than lose its type).

    Made without calling its ``__init__``, which may take other arguments or have side effects
    (smolagents' ``AgentError`` logs its message).  A type whose text is not its first argument is
    retold as a subclass of it of the same name (so ``except`` and ``except*`` clauses and the type name
    a framework shows the model are kept), made by the type's ``__new__`` on the text (an exception
    group: on the text and its sub-exceptions), else on the error's own arguments (a ``__new__`` that
    takes its own), else as the type pickles itself (a pydantic ``ValidationError``).  So is a
    type that would copy or pickle itself back to its unbounded text
    (``_copies_saying``: a ``json.JSONDecodeError``, a class with its own
    ``__reduce__``).  Such a subclass pickles and copies as the original type,
    saying ``text`` (see ``_reduced``).
    """
    try:
        told = type(error).__new__(type(error), text)
        told.__dict__.update(error.__dict__)
        for name, value in _slot_values(error):
            setattr(told, name, value)
        told.args = (text,)
        if "message" in error.__dict__:  # frameworks' errors often keep their text apart too
            told.message = text  # type: ignore[attr-defined]
        if str(told) == text and _copies_saying(told, text):
            return told
    except Exception:  # noqa: BLE001  (a type that cannot be made so: a subclass of it)
        pass
    ways: list[tuple[Any, ...]] = [("new", (text,))]
    if isinstance(error, BaseExceptionGroup):
        ways.insert(0, ("new", (text, error.exceptions)))
    ways.append(("new", tuple(error.args)))
    try:
        recipe = error.__reduce__()
        if getattr(recipe[0], "__self__", None) is type(error):  # a class method of its own makes it
            ways.append(("call", recipe[0].__name__, tuple(recipe[1])))
    except Exception:  # noqa: BLE001  (none to follow)
        pass
    attributes = dict(error.__dict__)
    attributes.pop(_RETOLD, None)  # an error retold before is retold from what it holds
    for how in ways:
        try:
            told = _made(type(error), text, how, attributes, _slot_values(error))
            if isinstance(told, type(error)) and str(told) == text:
                return told
        except Exception:  # noqa: BLE001  (the next way)
            pass
    return None


def _shown_within(store: ToolOutputStore, session_id: str, call_id: str, text: str,
                  rendered: Callable[[str], str]) -> Optional[TruncateResult]:
    """``truncate_kept`` of ``text`` for a framework that sends the model ``rendered(text)`` (escaped in a
    JSON string, where a quote, a backslash or a control character takes 2 to 6 bytes; wrapped): None when
    ``text`` is within the limits and ``rendered(text)`` within ``max_bytes`` (and ``max_tokens``).  Else
    ``text`` is stored whole (when it fits the limits, through a byte limit below its own size) and its
    preview cut narrower, measured as ``rendered`` renders it, until that rendering is within ``max_bytes``
    with the marker's room (``MARKER_BYTES``) besides, as the store's own preview is, and (with
    ``max_tokens``) takes at most ``max_tokens`` tokens besides its marker's (``_marker_tokens``).  Lines
    are the store's: escaping adds none (a JSON string has none).  Text is rendered as the store shows it
    (``as_stored``: a lone surrogate, which a JSON encoder refuses, as U+FFFD), so measuring never raises;
    a text over ``max_bytes`` (each character one byte at least) is over the limits whatever its rendering,
    so only its previews are rendered, never it whole."""
    limits = store.limits()
    count = None if limits.max_tokens is None else counter()
    budget = limits.max_bytes
    if len(text) <= budget:
        whole = rendered(as_stored(text))
        size, used = shown_size(text), shown_size(whole)
        if used > budget or (count is not None and count(whole) > limits.max_tokens):
            # Below the text's own size, so that the store keeps it whole even when it fits the limits.
            budget = max(1, min(budget, size - 1, size * budget // max(used, budget)))
    result = truncate_kept(store, session_id, call_id, text, max_bytes=budget)
    if not result.truncated:
        return None
    room = limits.max_bytes + MARKER_BYTES
    while True:
        shown = rendered(as_stored(result.content))
        used = shown_size(shown)
        within = used <= room
        # Narrower in proportion to the bytes (tokens) over, a little more (the marker stays the same size),
        # from the bytes the preview holds: the store's token bound may keep it far below the budget.
        held = min(budget, shown_size(result.content))
        narrower = held * room * 15 // (max(used, 1) * 16)
        if count is not None:
            tokens, token_room = count(shown), limits.max_tokens + _marker_tokens(result, rendered, count)
            within = within and tokens <= token_room
            narrower = min(narrower, held * token_room * 15 // (max(tokens, 1) * 16))
        if within or budget == 1:
            return result
        budget = max(1, min(budget - 1, narrower))
        result = _recut(store, session_id, call_id, text, result, budget)


def _marker_tokens(result: TruncateResult, rendered: Callable[[str], str], count: Callable[[str], int]) -> int:
    """The tokens ``rendered`` of ``result``'s marker takes, on top of ``max_tokens`` as every preview's
    marker is: its stored resource's marker (``truncation_marker``) rendered and counted; when the store
    could not keep it, ``MARKER_BYTES`` (its marker is under that many bytes, a token one at least)."""
    resource = result.resource
    if resource is None or result.lines is None or result.next_offset is None:
        return MARKER_BYTES
    return count(rendered(truncation_marker(resource.uri, resource.size, result.lines, result.next_offset)))


def _recut(store: ToolOutputStore, session_id: str, call_id: str, text: str, result: TruncateResult,
           budget: int) -> TruncateResult:
    """``result`` (``text``'s, by ``truncate_kept``) with its preview cut to ``budget`` bytes: from the
    stored copy it names (nothing is stored again), else (the store could not keep it, or that copy is
    no longer readable) as ``truncate_kept`` cuts it."""
    if result.resource is not None:
        try:
            return store.preview(session_id, result.resource.uri, max_bytes=budget)
        except OverspillError:  # (removed or damaged since: stored again, or said not to be)
            pass
    return truncate_kept(store, session_id, call_id, text, max_bytes=budget)


class Bounder:
    """Bounds tool results through one store's ``truncate``.

    A result within the limits is returned as it came (not even copied); one
    over them is stored whole and its preview with the marker (a ``str``) is
    returned instead.  The session and call ids given are the framework's or
    the model's: the store gets them through ``store_id``.
    """

    __slots__ = ("_fits", "_fits_rendered", "store")

    def __init__(self, store: ToolOutputStore) -> None:
        self.store = store
        limits = store.limits()
        # Content of at most this many characters (or bytes) fits any limits in
        # force whatever it holds: a character is at most 4 UTF-8 bytes and n
        # characters hold at most n + 1 lines.  Such content needs no storage,
        # so async callers bound it in place rather than on a worker thread.
        self._fits = max(0, min(limits.max_bytes // 4, limits.max_lines - 1))
        # And an error's text of at most this many characters fits them as a framework renders it in a
        # JSON string (``error_result``'s ``rendered``) too: a character's escape is at most 6 bytes
        # (\u0001; non-ASCII is not escaped), the wrapper takes ~12 of the 64 kept, escaping adds no line,
        # and a token is one byte at least.  Such a text needs no rendering, nor a worker thread.
        rendered_bytes = limits.max_bytes if limits.max_tokens is None else min(limits.max_bytes, limits.max_tokens)
        self._fits_rendered = max(0, min((rendered_bytes - 64) // 6, limits.max_lines - 1))

    def text(self, session_id: str, call_id: str, text: Text) -> Optional[str]:
        """The preview with its marker when ``text`` is over the limits (it is then stored), else None.

        :raises StorageError: the store could not write the output.
        """
        result = self.store.truncate(store_id(session_id), store_id(call_id), text)
        return result.content if result.truncated else None

    async def atext(self, session_id: str, call_id: str, text: Text) -> Optional[str]:
        """``text`` for async callers: a result that may be stored is written on a worker thread."""
        if len(text) <= self._fits:
            return self.text(session_id, call_id, text)
        return await asyncio.to_thread(self.text, session_id, call_id, text)

    def pieces(self, session_id: str, call_id: str, pieces: list[Text]) -> Optional[str]:
        """``text`` of the pieces of text one result shows the model (its text blocks or items), taken
        together: the preview of them joined with a newline, stored as that one text, when together they
        are over the limits (each may be within them); else None.

        :raises StorageError: the store could not write the output.
        """
        return self.text(session_id, call_id, joined(pieces))

    async def apieces(self, session_id: str, call_id: str, pieces: list[Text]) -> Optional[str]:
        """``pieces`` for async callers."""
        return await self.atext(session_id, call_id, joined(pieces))

    def error_text(self, session_id: str, call_id: str, text: Text,
                   rendered: Optional[Callable[[str], str]] = None) -> Optional[str]:
        """``text`` for an error's text: the preview with its marker when it is over the limits (it is
        then stored), else None.  When the store cannot keep it, the preview says "output not stored"
        and why: a tool's own exception (its type, which the framework and the user's handlers act on)
        is never replaced by a storage error.  ``rendered``: as ``error_result``'s."""
        result = self.error_result(session_id, call_id, text, rendered)
        return None if result is None else result.content

    async def aerror_text(self, session_id: str, call_id: str, text: Text,
                          rendered: Optional[Callable[[str], str]] = None) -> Optional[str]:
        """``error_text`` for async callers: a text that may be stored is written on a worker thread."""
        result = await self.aerror_result(session_id, call_id, text, rendered)
        return None if result is None else result.content

    def error_result(self, session_id: str, call_id: str, text: Text,
                     rendered: Optional[Callable[[str], str]] = None) -> Optional[TruncateResult]:
        """``error_text``'s whole result, for a caller that shows the model its own text of the error and
        must name where the whole is: the store's result (the preview with its marker, and the resource,
        None when the store could not keep it) when ``text`` is over the limits, else None.

        :param rendered: the text the framework sends the model of an error's text (``text``, a ``str``,
            escaped inside its JSON, wrapped), when it is not that text itself: then ``rendered`` of it is
            bounded too (``_shown_within``), unless ``text`` is too short for any rendering of it to be
            over the limits.
        """
        session_id, call_id = store_id(session_id), store_id(call_id)
        if rendered is not None and len(text) > self._fits_rendered:
            return _shown_within(self.store, session_id, call_id, text, rendered)  # type: ignore[arg-type]
        result = truncate_kept(self.store, session_id, call_id, text)
        return result if result.truncated else None

    async def aerror_result(self, session_id: str, call_id: str, text: Text,
                            rendered: Optional[Callable[[str], str]] = None) -> Optional[TruncateResult]:
        """``error_result`` for async callers: a text that may be stored, or whose rendering may be
        long, is bounded on a worker thread."""
        if len(text) <= (self._fits if rendered is None else self._fits_rendered):
            return self.error_result(session_id, call_id, text, rendered)
        return await asyncio.to_thread(self.error_result, session_id, call_id, text, rendered)

    def error(self, session_id: str, call_id: str, error: BaseException) -> Optional[BaseException]:
        """``error`` retold (``retold``) with its text bounded (``error_text``), when that text (what a
        framework shows the model of it) is over the limits: it is then stored whole.  None when it fits
        (or when no exception of its type can say the preview: it is then left as it is)."""
        try:
            text = str(error)
        except Exception:  # noqa: BLE001  (an exception that cannot say itself: left as it is)
            return None
        preview = self.error_text(session_id, call_id, text)
        # (an error no exception of its type can retell is left as it is: its type matters more)
        return None if preview is None else retold(error, preview)

    async def aerror(self, session_id: str, call_id: str, error: BaseException) -> Optional[BaseException]:
        """``error`` for async callers."""
        try:
            text = str(error)
        except Exception:  # noqa: BLE001
            return None
        preview = await self.aerror_text(session_id, call_id, text)
        return None if preview is None else retold(error, preview)

    async def aitems(self, session_id: str, call_id: str, items: list[Any], texts: list[Optional[Text]],
                     first: Callable[[Any, str], Any]) -> Optional[list[Any]]:
        """``items`` (a result's blocks or items) whose ``texts`` (None for media) are bounded together
        (``apieces``): None when they fit, else the items with those pieces replaced by
        ``first(item, preview)`` where the first of them stood (``replaced_pieces``).

        :raises StorageError: the store could not write the output.
        """
        at = [index for index, text in enumerate(texts) if text is not None]
        if not at:
            return None
        preview = await self.apieces(session_id, call_id, [texts[index] for index in at])  # type: ignore[misc]
        return None if preview is None else replaced_pieces(items, at, first(items[at[0]], preview))

    def value(self, session_id: str, call_id: str, value: Any, dumps: Callable[[Any], str] = json_text,
              shown: Optional[Callable[[Any], str]] = None) -> Any:
        """``value`` as it came when it fits (or has no text), else its bounded text.

        ``value`` is stored as its own text (``as_text``) when that is over the limits, else as the text
        the framework shows the model of it (``_shown_instead``) when that is: the model never gets whole
        a text over the limits.  Only a value both of whose texts fit passes as it came.

        :param dumps: how a value that is not text becomes JSON text (see ``as_text``).
        :param shown: the text the framework shows the model of any value (``str`` for smolagents and the
            OpenAI Agents SDK); also what a value ``dumps`` cannot serialise is bounded as (see ``as_text``).
        :raises StorageError: the store could not write the output.
        """
        text = value if type(value) is str else as_text(value, dumps, shown)
        if text is None:
            return value
        bounded = self.text(session_id, call_id, text)
        if bounded is None:
            instead = _shown_instead(value, shown)
            bounded = None if instead is None else self.text(session_id, call_id, instead)
        return value if bounded is None else bounded

    async def avalue(self, session_id: str, call_id: str, value: Any, dumps: Callable[[Any], str] = json_text,
                     shown: Optional[Callable[[Any], str]] = None) -> Any:
        """``value`` for async callers."""
        text = value if type(value) is str else as_text(value, dumps, shown)
        if text is None:
            return value
        bounded = await self.atext(session_id, call_id, text)
        if bounded is None:
            instead = _shown_instead(value, shown)
            bounded = None if instead is None else await self.atext(session_id, call_id, instead)
        return value if bounded is None else bounded


@dataclass(frozen=True)
class PagingTool:
    """One paging tool as ``overspill.tools.schemas`` defines it, narrowed to stored outputs
    (``overspill.tools.schemas.stored_only``): its name, description and JSON-schema parameters,
    and how to run it (in the session ``store_id`` makes of the one given, as ``Bounder`` stores in)."""

    name: str
    description: str
    parameters: dict[str, Any]
    store: ToolOutputStore

    def run(self, session_id: str, call_id: str, arguments: Any, **options: Any) -> ToolResult:
        """Validate the model's ``arguments`` (a mapping or its JSON text) and run the tool.

        Failures come back as ``is_error`` results with one line for the model;
        an argument naming a file is refused before anything is read.

        :param options: what the host decides, as ``overspill.tools.call`` takes them (read's ``page``).
        """
        chosen = arguments
        if isinstance(chosen, (str, bytes)):
            try:
                chosen = loads_text(chosen or "{}")
            except ValueError:
                chosen = arguments  # call() says why
        if chosen is None:
            chosen = {}
        if isinstance(chosen, Mapping):
            problem = stored_only_problem(self.name, chosen)
            if problem:
                return failure(problem)
        return call(self.store, store_id(session_id), store_id(call_id), self.name, chosen, **options)

    async def arun(self, session_id: str, call_id: str, arguments: Any, **options: Any) -> ToolResult:
        """``run`` on a worker thread: a page is read from disk and a search scans the whole output."""
        return await asyncio.to_thread(self.run, session_id, call_id, arguments, **options)


def paging_tools(store: ToolOutputStore) -> list[PagingTool]:
    """``read`` and ``grep`` for ``store`` on its stored outputs only (never files), their descriptions
    naming its limits."""
    found = {spec["function"]["name"]: stored_only(spec["function"])
             for spec in schemas("openai", limits=store.limits()) if spec["function"]["name"] in PAGING_TOOLS}
    return [PagingTool(name, found[name]["description"], found[name]["parameters"], store) for name in PAGING_TOOLS]
