"""Frozen value classes without importing ``dataclasses``.

``dataclasses`` imports ``inspect`` (and with it ``ast``, ``dis``,
``tokenize``, ``enum``): more than all of ``import overspill`` may cost.  The
public value classes (``Resource``, ``Record``, ``Limits``, ``Page``, ...)
are plain ``__slots__`` classes made by ``frozen`` instead, and behave as the
frozen dataclasses they were: the same constructor, repr, equality (same
class, equal fields), hash, ``FrozenInstanceError`` on assignment, pickling
and copying, and ``dataclasses.fields``/``asdict``/``replace``/
``is_dataclass`` (their field table is built, importing ``dataclasses``, the
first time something asks for it).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, TypeVar

    _C = TypeVar("_C", bound=type)
    _V = TypeVar("_V")

__all__ = ["frozen", "maker", "replace"]

_set = object.__setattr__


def _frozen_error(name: str) -> AttributeError:
    from dataclasses import FrozenInstanceError  # only when someone tries

    return FrozenInstanceError(f"cannot assign to field {name!r}")


def _refuse_set(self: object, name: str, value: object) -> None:
    raise _frozen_error(name)


def _refuse_delete(self: object, name: str) -> None:
    raise _frozen_error(name)


class _Fields:
    """``__dataclass_fields__``, made on first look-up from a twin dataclass with
    the same fields and defaults, then kept on the class."""

    def __get__(self, instance: object, owner: type) -> dict[str, Any]:
        import dataclasses

        defaults, hidden, factories = owner._defaults, owner._hidden, owner._factories  # type: ignore[attr-defined]
        spec = []
        for name in owner.__slots__:  # type: ignore[attr-defined]
            kind = owner.__annotations__.get(name, "object")
            if name in defaults:
                spec.append((name, kind, dataclasses.field(default=defaults[name], repr=name not in hidden)))
            elif name in factories:
                spec.append((name, kind, dataclasses.field(default_factory=factories[name], repr=name not in hidden)))
            else:
                spec.append((name, kind, dataclasses.field(repr=name not in hidden)))
        fields = dataclasses.make_dataclass(owner.__name__, spec, frozen=True).__dataclass_fields__
        type.__setattr__(owner, "__dataclass_fields__", fields)
        return fields


_MISSING = object()


def frozen(defaults: dict[str, object] | None = None, hidden: tuple[str, ...] = (),
           factories: dict[str, Callable[[], object]] | None = None) -> Callable[[_C], _C]:
    """Make a ``__slots__`` class a frozen value class.

    :param defaults: the trailing fields' default values (immutable values
        only, as in a dataclass).
    :param hidden: fields left out of the repr (``field(repr=False)``).
    :param factories: trailing fields whose default is made per instance
        (``field(default_factory=...)``).
    """
    defaults = {} if defaults is None else defaults
    factories = {} if factories is None else factories

    def build(cls: _C) -> _C:
        names: tuple[str, ...] = cls.__slots__  # type: ignore[attr-defined]
        if set(cls.__dict__.get("__annotations__", {})) != set(names):
            # A field annotated but not slotted (or the reverse) would silently
            # be a class attribute: refuse, so that the two lists stay one.
            raise TypeError(f"{cls.__name__}: __slots__ and the annotated fields differ")
        required = [name for name in names if name not in defaults and name not in factories]
        if names[: len(required)] != tuple(required):
            raise TypeError(f"{cls.__name__}: fields with defaults must come last")
        namespace: dict[str, Any] = {"_defaults": defaults, "_factories": factories, "_MISSING": _MISSING}
        # Each slot's own setter: a third faster than object.__setattr__, and
        # Page and TruncateResult are made on every read and every truncate.
        for index, name in enumerate(names):
            namespace[f"_set{index}"] = cls.__dict__[name].__set__
        # Only __init__ is compiled (its signature is the fields'), and only
        # when first needed: a compile costs ~0.1-0.2 ms, most classes are not
        # made by a given command (start-up).  The other methods are closures.
        methods = _methods(cls.__qualname__, names, tuple(name for name in names if name not in hidden))
        methods["__init__"] = _lazy_init(namespace, _init_source(names, required, defaults, factories))
        for method, function in methods.items():
            function.__qualname__ = f"{cls.__qualname__}.{method}"
            setattr(cls, method, function)
        cls.__setattr__ = _refuse_set  # type: ignore[assignment,method-assign]
        cls.__delattr__ = _refuse_delete  # type: ignore[assignment,method-assign]
        cls.__match_args__ = names  # type: ignore[attr-defined]
        cls._defaults = defaults  # type: ignore[attr-defined]
        cls._hidden = hidden  # type: ignore[attr-defined]
        cls._factories = factories  # type: ignore[attr-defined]
        cls.__dataclass_fields__ = _Fields()  # type: ignore[attr-defined]
        cls.__signature__ = _Signature(namespace["_compile_init"])  # type: ignore[attr-defined]
        return cls

    return build


def _placeholder_init(self: object, *args: object, **kwargs: object) -> None:
    # Run with a class's namespace as its globals: see _lazy_init.
    _compile_init()  # noqa: F821 - defined in that namespace
    __init__(self, *args, **kwargs)  # noqa: F821 - the same function, its code now the compiled one


def _lazy_init(namespace: dict[str, Any], source: str) -> Callable[..., None]:
    """A class's ``__init__`` whose code is compiled from ``source`` on its first call.

    The function is made from ``_placeholder_init``'s code with ``namespace``
    as its globals; the first call compiles ``source`` there and puts the
    compiled code and defaults into this same function, so every later call
    (and a reference taken before the first) runs the compiled ``__init__``."""
    placeholder = type(_placeholder_init)(_placeholder_init.__code__, namespace, "__init__")

    def compile_init() -> None:
        if placeholder.__code__ is _placeholder_init.__code__:  # not done yet (by another thread)
            made: dict[str, Any] = {}
            exec(source, namespace, made)  # noqa: S102 - the class's own fields
            compiled = made["__init__"]
            placeholder.__defaults__ = compiled.__defaults__
            placeholder.__code__ = compiled.__code__

    namespace["_compile_init"] = compile_init
    namespace["__init__"] = placeholder
    return placeholder


class _Signature:
    """``__signature__`` of a frozen class: None, so that ``inspect.signature``
    goes on to ``__init__``, compiled first so that it has the fields' signature."""

    __slots__ = ("_compile_init",)

    def __init__(self, compile_init: Callable[[], None]) -> None:
        self._compile_init = compile_init

    def __get__(self, instance: object, owner: type) -> None:
        self._compile_init()
        return None


def _init_source(names: tuple[str, ...], required: list[str], defaults: dict[str, object],
                 factories: dict[str, Callable[[], object]]) -> str:
    """The source of a frozen class's ``__init__`` over its fields ``names``
    (``_set{index}`` is each slot's setter in the namespace it is run in)."""
    parameters = ", ".join(name if name in required else f"{name}=_defaults[{name!r}]" if name in defaults
                           else f"{name}=_MISSING" for name in names)
    body = "".join(f"    if {name} is _MISSING:\n        {name} = _factories[{name!r}]()\n"
                   for name in names if name in factories)
    body += "".join(f"    _set{index}(self, {name})\n" for index, name in enumerate(names))
    return f"def __init__(self, {parameters}):\n{body}"


def _methods(qualname: str, names: tuple[str, ...], shown: tuple[str, ...]) -> dict[str, Callable[..., Any]]:
    """``__repr__``, ``__eq__``, ``__hash__`` and the pickling pair of a class with these fields."""
    # operator's own attrgetter, from its built-in half: operator.py is not
    # otherwise loaded by ``read --all`` (start-up).
    from _operator import attrgetter

    values = attrgetter(*names) if len(names) > 1 else lambda value, name=names[0]: (getattr(value, name),)

    def __repr__(self: object) -> str:
        return f"{qualname}({', '.join(f'{name}={getattr(self, name)!r}' for name in shown)})"

    def __eq__(self: object, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return values(self) == values(other)  # type: ignore[no-any-return]

    def __hash__(self: object) -> int:
        return hash(values(self))

    def __getstate__(self: object) -> tuple[object, ...]:
        return values(self)  # type: ignore[no-any-return]

    def __setstate__(self: object, state: tuple[object, ...]) -> None:
        for name, value in zip(names, state):
            _set(self, name, value)

    return {"__repr__": __repr__, "__eq__": __eq__, "__hash__": __hash__, "__getstate__": __getstate__,
            "__setstate__": __setstate__}


def maker(cls: Callable[..., _V]) -> Callable[..., _V]:
    """A fast positional constructor of the ``frozen`` class ``cls``: every
    field, in order, no defaults (for the record a cold read parses).

    ``cls.__init__`` sets each field through its slot's bound setter, as
    ``cls`` refuses assignment: most of the cost of making a ``Record``.  The
    constructor made here hands the fields to ``_kernels.new_slotted`` (the
    one way the package makes an instance without ``__init__``; looked up at
    each call, so that it follows the implementation chosen): the same
    instance, at about a third of the cost.
    """
    from . import _kernels  # here: _frozen is imported by modules that _kernels' choice must not precede

    slots = tuple(cls.__dict__[name] for name in cls.__slots__)  # type: ignore[attr-defined]

    def make(*fields: object) -> _V:
        return _kernels.new_slotted(cls, slots, fields)  # type: ignore[no-any-return]

    make.__qualname__ = f"maker({cls.__qualname__})"
    return make


def replace(value: _V, /, **changes: object) -> _V:
    """``dataclasses.replace`` for a ``frozen`` class's instance, without
    importing ``dataclasses``: a new instance, ``changes`` over its fields.

    :raises TypeError: a name in ``changes`` is not one of its fields.
    """
    names: tuple[str, ...] = type(value).__slots__  # type: ignore[attr-defined]
    unknown = set(changes).difference(names)
    if unknown:
        raise TypeError(f"{type(value).__name__} has no field {sorted(unknown)[0]!r}")
    return type(value)(**{name: changes[name] if name in changes else getattr(value, name) for name in names})
