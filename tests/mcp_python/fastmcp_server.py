"""A FastMCP server (the official Python SDK's) whose tools behest imports
in `tests/mcp/server.rs`, over stdio."""

from mcp.server.fastmcp import FastMCP

mcp = FastMCP("python-tools")


@mcp.tool()
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


@mcp.tool()
def shout(text: str, times: int = 1) -> str:
    """Repeat a text in capitals."""
    return " ".join([text.upper()] * times)


@mcp.tool()
def fail(reason: str) -> str:
    """Always fails, with the reason."""
    raise ValueError(reason)


if __name__ == "__main__":
    mcp.run()
