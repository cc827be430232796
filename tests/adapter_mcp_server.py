"""A tiny MCP server over stdio whose tool returns the scenario's big output (for the adapters' MCP tests)."""

from mcp.server.mcpserver import MCPServer

from adapter_scenario import BIG

server = MCPServer("big-output")


@server.tool()
def big() -> str:
    """Return a large output."""
    return BIG


if __name__ == "__main__":
    server.run("stdio")
