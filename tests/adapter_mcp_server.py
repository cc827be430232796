"""A tiny MCP server over stdio whose tools return the scenario's big output, as text, as an embedded
resource, as many blocks each within the limits and with a secret in its middle, or fail with it as a
protocol error's message (for the adapters' MCP tests)."""

from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import EmbeddedResource, TextContent, TextResourceContents
from pydantic import BaseModel

from adapter_scenario import BIG

server = MCPServer("big-output")


@server.tool()
def big() -> str:
    """Return a large output."""
    return BIG


@server.tool()
def document() -> list:
    """Return the big output as an embedded text resource."""
    return [EmbeddedResource(type="resource", resource=TextResourceContents(uri="file:///big.txt",
                                                                          mime_type="text/plain", text=BIG))]


@server.tool()
def pieces() -> list:
    """Return thirty text blocks, each within the limits."""
    return [TextContent(type="text", text=f"piece {index} " + "x" * 40_000) for index in range(30)]


class Rows(BaseModel):
    rows: list[str]


#: Rows of CJK text: within the limits as UTF-8 (about 36 KB), over them as JSON's \u escapes (about 74 KB).
CJK_ROWS = ["漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字"] * 600


@server.tool()
def cjk() -> Rows:
    """Return many rows of CJK text as structured content."""
    return Rows(rows=CJK_ROWS)


@server.tool()
def secret_log() -> str:
    """Return a long log with a secret in its middle (where a preview omits it)."""
    return BIG + "API_KEY=sk-live-0123456789abcdef\n" + BIG


@server.tool()
def failing() -> str:
    """Fail with a protocol error whose message is long (an upstream's error body, say)."""
    raise MCPError(-32000, "upstream returned HTTP 502:\n" + BIG)


if __name__ == "__main__":
    server.run("stdio")
