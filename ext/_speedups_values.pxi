# Included by _speedups.pyx: a value class's instance without its __init__ (the twin's overspill/_native_values.py).

cdef extern from "overspill_values.h":
    bint osp_plain_new(object cls)
    object osp_new_object(object cls)
    int osp_set_member(object descr, object obj, object value) except -1


class _Slotted:
    __slots__ = ("field",)


# The type of a __slots__ field's descriptor (types.MemberDescriptorType, without importing types).
cdef object _MEMBER = type(_Slotted.__dict__["field"])


def new_slotted(cls, slots, values, /):
    """``object.__new__(cls)`` with each slot set to its value; see _native.new_slotted."""
    if not isinstance(cls, type):
        raise TypeError(f"cls must be a class, not {type(cls).__name__}")
    if not osp_plain_new(cls):
        raise TypeError(f"{cls.__name__} is not made by object.__new__")
    if type(slots) is not tuple:
        raise TypeError(f"slots must be a tuple, not {type(slots).__name__}")
    if type(values) is not tuple:
        raise TypeError(f"values must be a tuple, not {type(values).__name__}")
    cdef tuple fields = slots, given = values
    cdef Py_ssize_t i, n = len(fields)
    if len(given) != n:
        raise TypeError(f"{n} slots but {len(given)} values")
    for i in range(n):
        if type(fields[i]) is not _MEMBER:
            raise TypeError(f"a slot must be a member descriptor, not {type(fields[i]).__name__}")
    made = osp_new_object(cls)
    # Each member descriptor's own setter checks that made is of its class (a
    # slot of another class is refused there, as slot.__set__ refuses it).
    for i in range(n):
        osp_set_member(fields[i], made, given[i])
    return made
