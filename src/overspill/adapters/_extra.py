"""What an adapter says when its framework is not installed."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["needs_extra"]


@contextlib.contextmanager
def needs_extra(extra: str) -> Iterator[None]:
    """Around an adapter's framework imports: a module missing there is its extra not installed.

    :param extra: the extra that carries the framework (``"langchain"``).
    :raises ModuleNotFoundError: a module the framework needs is missing; the message names the
        adapter's extra and the ``pip install`` that adds it (the missing module's name is kept).
    """
    try:
        yield
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError(
            f"overspill's {extra} adapter needs its extra: pip install 'overspill[{extra}]' "
            f"(no module named {error.name!r})", name=error.name) from error
