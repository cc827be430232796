"""Twin kernel that makes a value class's instance without running its
``__init__``: ``new_slotted`` (the store's unchanged ``TruncateResult``, made
on nearly every ``truncate``)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["new_slotted"]


class _Slotted:
    __slots__ = ("field",)


# The type of a __slots__ field's descriptor (types.MemberDescriptorType, without importing types).
_MEMBER = type(_Slotted.__dict__["field"])


def new_slotted(cls: type, slots: tuple[Any, ...], values: tuple[object, ...], /) -> Any:
    """``object.__new__(cls)`` with ``slots[i].__set__(made, values[i])`` for each
    ``i``: what a ``frozen`` class's ``__init__`` does with its fields' values
    (``slots`` are their member descriptors, in order), without the call of
    ``__init__`` and its bound setters.

    :raises TypeError: ``cls`` is not a class made by ``object.__new__`` (or is
        abstract); ``slots`` or ``values`` is not a tuple, a slot is not a
        member descriptor or not one of ``cls``'s; the lengths differ.
    """
    if not isinstance(cls, type):
        raise TypeError(f"cls must be a class, not {type(cls).__name__}")
    if cls.__new__ is not object.__new__:
        raise TypeError(f"{cls.__name__} is not made by object.__new__")
    if type(slots) is not tuple:
        raise TypeError(f"slots must be a tuple, not {type(slots).__name__}")
    if type(values) is not tuple:
        raise TypeError(f"values must be a tuple, not {type(values).__name__}")
    if len(values) != len(slots):
        raise TypeError(f"{len(slots)} slots but {len(values)} values")
    for slot in slots:
        if type(slot) is not _MEMBER:
            raise TypeError(f"a slot must be a member descriptor, not {type(slot).__name__}")
    made = object.__new__(cls)
    for slot, value in zip(slots, values):
        slot.__set__(made, value)
    return made
