"""A transport's read stream, wrapped: what the MCP SDK's session asks of a read stream, for wrappers that
change or watch what ``receive`` gives (``mcp_server._Answering``, ``mcp_upstream._Watched``)."""

from __future__ import annotations

from typing import Any

import anyio


class WrappedReadStream:
    """The read stream ``inner`` as the SDK's session uses it (iteration, ``last_context``, closing, an
    ``async with``); a subclass says what ``receive`` gives, and what closing also does (``closing``)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    @property
    def last_context(self) -> Any:
        """The sender's context of the last item (the SDK's dispatcher runs its handler in it)."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        """The next item (the stream's own; a subclass changes or watches it)."""
        return await self._inner.receive()

    def closing(self) -> None:
        """What closing the stream also does (nothing here)."""

    def __aiter__(self) -> WrappedReadStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        """Closes the stream."""
        self.closing()
        await self._inner.aclose()

    async def __aenter__(self) -> WrappedReadStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
