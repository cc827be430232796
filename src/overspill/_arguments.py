"""Argument checks shared by the store and the capture: one wording, one rule."""

from __future__ import annotations

import os

from ._buffers import int_text, plain_int

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up; annotations are never evaluated
    from typing import Optional

__all__ = ["MAX_METADATA_BYTES", "as_float", "check_metadata", "id_string", "metadata_string", "os_string",
           "os_string_problem", "positive_seconds", "wait_seconds", "whole_number"]

_INFINITY = float("inf")  # (math would cost an import at start-up)

#: The most UTF-8 bytes of each caller string a record holds (session id, tool
#: call id, mime, name): a write with a longer one is refused, so that no
#: record is written that could not be read back.
MAX_METADATA_BYTES = 1024


def whole_number(value: object, name: str, minimum: Optional[int] = None) -> int:
    """``value``'s own int value (``plain_int``: an int subclass's overrides never run, as
    the kernels read it) if it is an int (a bool is not), and at least ``minimum`` when one is given.

    :raises TypeError: not an int.
    :raises ValueError: below ``minimum``.
    """
    value = plain_int(value, name)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, not {int_text(value)}")
    return value


def as_float(value: int | float) -> float:
    """``value`` as a float; an int beyond a float's range is the infinity of its sign,
    which it is as good as (``10**400`` seconds is past every deadline, as ``inf`` is)."""
    try:
        return float(value)
    except OverflowError:
        return _INFINITY if value > 0 else -_INFINITY


def _seconds(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, not {type(value).__name__}")
    return as_float(value)


def positive_seconds(value: object, name: str) -> float:
    """``value`` as seconds if it is a positive int or float (a bool is not);
    ``inf``, or an int too large for a float, is ``inf``.

    :raises TypeError: not a number.
    :raises ValueError: zero, negative or NaN.
    """
    seconds = _seconds(value, name)
    if not seconds > 0:
        raise ValueError(f"{name} must be positive")
    return seconds


def wait_seconds(value: object, name: str) -> Optional[float]:
    """``value`` as the timeout of a wait if it is an int or float, at least 0 (a bool is not);
    None, no bound, past what a thread can wait (``threading.TIMEOUT_MAX``, about 292 years;
    infinity too), which ``threading`` refuses with an ``OverflowError``.

    :raises TypeError: not a number.
    :raises ValueError: negative or NaN.
    """
    seconds = _seconds(value, name)
    if not seconds >= 0:
        raise ValueError(f"{name} must be at least 0 seconds")
    import threading  # imported already by whoever waits

    return None if seconds > threading.TIMEOUT_MAX else seconds


def id_string(value: object, name: str) -> str:
    """``value`` if it is a non-empty ``str`` (a session id, a call id, a mime).

    :raises TypeError: not a str.
    :raises ValueError: empty.
    """
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    if not value:
        raise ValueError(f"{name} must not be empty")
    return value


def check_metadata(value: str, name: str) -> None:
    """Refuse a caller string a record could not hold, or would read back as another string.

    :raises ValueError: ``value`` takes more than ``MAX_METADATA_BYTES`` UTF-8
        bytes (a lone surrogate counts as the 3 bytes it takes), or holds a
        surrogate pair: a high surrogate followed by a low one.
    """
    # Only a string over a quarter of the bound can be over it (4 bytes a code point at most).
    if len(value) > MAX_METADATA_BYTES // 4:
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > MAX_METADATA_BYTES:
            raise ValueError(f"{name} must be at most {MAX_METADATA_BYTES} UTF-8 bytes, not {size}")
    if not value.isascii():
        problem = _surrogate_pair_problem(value, name)
        if problem is not None:
            raise ValueError(problem)


def metadata_string(value: str) -> str:
    """``value`` as a record can hold it (``check_metadata`` accepts the result): a string a tool
    derives from what it was given or found (a skill's name, a server's Content-Type) is a
    record's metadata, not a reason to fail the call.

    A surrogate pair becomes the character it encodes (what the record would read back anyway);
    a string over ``MAX_METADATA_BYTES`` UTF-8 bytes keeps its start and its end, whole
    characters, around an ellipsis.  Anything else comes back unchanged.
    """
    if not value.isascii() and _surrogate_pair_problem(value, "") is not None:
        # UTF-16 joins each high and low surrogate into their character and keeps lone ones.
        value = value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    if len(value) <= MAX_METADATA_BYTES // 4 or len(value.encode("utf-8", "surrogatepass")) <= MAX_METADATA_BYTES:
        return value
    room = MAX_METADATA_BYTES - len("\u2026".encode("utf-8"))
    head = _characters_within(value, room // 2)
    tail = _characters_within(value[::-1], room - room // 2)
    return value[:head] + "\u2026" + value[len(value) - tail:]


def _characters_within(value: str, size: int) -> int:
    """How many of ``value``'s first characters take at most ``size`` UTF-8 bytes (a lone surrogate 3)."""
    count = 0
    for character in value:
        code = ord(character)
        size -= 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
        if size < 0:
            break
        count += 1
    return count


def _surrogate_pair_problem(value: str, name: str) -> Optional[str]:
    """Why ``value`` cannot be a record's string because of a surrogate pair; None when it holds none.

    A record writes its strings as JSON, where a surrogate is a ``\\uXXXX``
    escape, and JSON reads a high escape followed by a low one as the one
    character they encode: ``"\\ud83d\\ude00"`` would come back as ``"\\U0001F600"``,
    a different ``str`` (for a session id, another session).  A lone
    surrogate comes back as itself.
    """
    try:
        value.encode("utf-8")  # no surrogate at all: the common case, in C
        return None
    except UnicodeEncodeError:
        pass
    for index in range(len(value) - 1):
        if "\ud800" <= value[index] <= "\udbff" and "\udc00" <= value[index + 1] <= "\udfff":
            pair = value[index:index + 2]
            joined = pair.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
            return (f"{name} holds a surrogate pair ({ascii(pair)} at index {index}), which a record would read "
                    f"back as the one character {ascii(joined)}; pass that character instead")
    return None


def os_string_problem(value: str, name: str) -> Optional[str]:
    """Why the OS cannot take ``value`` as a file name, a command's argument or
    an environment entry, in one line naming ``name``; None when it can.

    A NUL ends a C string, and a lone surrogate other than the ones
    ``os.fsdecode`` makes of undecodable bytes has no encoding.
    """
    nul = value.find("\x00")
    if nul >= 0:
        return f"{name} holds a NUL character (at index {nul}), which no file name or argument can hold"
    if not value.isascii():
        try:
            os.fsencode(value)
        except UnicodeEncodeError as error:
            return (f"{name} holds a lone surrogate ({ascii(value[error.start])} at index {error.start}), "
                    "which no file name or argument can hold")
    return None


def os_string(value: str, name: str) -> str:
    """``value`` if the OS can take it (see ``os_string_problem``).

    :raises ValueError: it holds a NUL or a lone surrogate, naming ``name``.
    """
    problem = os_string_problem(value, name)
    if problem is not None:
        raise ValueError(problem)
    return value
