"""o200k token counts, for ``tool_output.max_tokens``.

The tokenizer comes from the optional extra ``overspill[tokens]``
(``quicktok-v1``, which ships OpenAI's o200k_base vocabulary in its wheel and
matches tiktoken's counts; tiktoken itself downloads its vocabulary when first
used, so it does not work offline).  It is imported only when a store is
configured with ``max_tokens``; ``import overspill`` never imports it.
"""

from __future__ import annotations

from _thread import allocate_lock  # threading's Lock, without importing threading (start-up)

from .errors import ConfigError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up; the annotations are never evaluated
    from collections.abc import Callable
    from typing import Optional

__all__ = ["EXTRA", "bound", "counter"]

#: What to install for ``max_tokens``.
EXTRA = "pip install 'overspill[tokens]'"

_LOCK = allocate_lock()
_COUNT: Optional[Callable[[str], int]] = None


def counter() -> Callable[[str], int]:
    """``count(text)``: the o200k tokens of ``text`` (special-token text counts as plain text).

    The vocabulary is loaded once per process, on the first call.

    :raises ConfigError: the tokenizer of the ``tokens`` extra is not installed
        (the message says what to install).
    """
    global _COUNT
    with _LOCK:
        if _COUNT is None:
            try:
                import quicktok
            except ImportError:
                raise ConfigError(f"tool_output.max_tokens counts o200k tokens with the tokens extra, "
                                  f"which is not installed: {EXTRA}") from None
            try:
                encoding = quicktok.get_encoding("o200k_base")
            except Exception as error:  # a broken install: its own errors are not ours to leak
                raise ConfigError(f"the tokens extra cannot load o200k_base ({error}); reinstall it: "
                                  f"{EXTRA}") from None
            count = encoding.count

            def counted(text: str) -> int:
                try:
                    return count(text)
                except TypeError:
                    # quicktok takes only text UTF-8 can encode: a lone surrogate (a surrogate escape of
                    # a str from os.fsdecode, say) counts as the U+FFFD the model is shown for it.
                    if not isinstance(text, str):
                        raise
                    return count(text.translate(_SURROGATES))

            _COUNT = counted
        return _COUNT


def bound(max_tokens: Optional[int]) -> Optional[tuple[int, Callable[[str], int]]]:
    """``(max_tokens, count)``, the form every preview takes a token bound in (``stored_preview``'s
    ``tokens``), or None without one (``tool_output.max_tokens`` unset).

    :raises ConfigError: a bound is set and the tokenizer is not installed (``counter``).
    """
    return None if max_tokens is None else (max_tokens, counter())


# Every lone surrogate, mapped to U+FFFD (str.translate's table).
_SURROGATES = dict.fromkeys(range(0xD800, 0xE000), 0xFFFD)
