"""Framework adapters: one line bounds every tool of an agent and gives it ``read`` and ``grep``.

One module per framework, each behind its own extra, none imported here (so
``import overspill.adapters`` costs nothing and needs no framework):

- ``overspill.adapters.openai_agents`` (``overspill[openai-agents]``): ``bound(tools)``;
- ``overspill.adapters.langchain`` (``overspill[langchain]``): ``middleware()``;
- ``overspill.adapters.pydantic_ai`` (``overspill[pydantic-ai]``): ``capability()``;
- ``overspill.adapters.smolagents`` (``overspill[smolagents]``): ``bound(tools)``.

Each bounds a tool's result with ``ToolOutputStore.truncate`` (a small result
passes untouched; a large one is stored whole and the model sees the preview
and marker) and adds the paging tools ``read`` and ``grep`` of
``overspill.tools``, on ``tool-output://`` URIs only (never files), in the
framework's own tool type.  The rules they share
live in ``overspill.adapters._core``.
"""

__all__: list[str] = []
